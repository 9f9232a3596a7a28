"""NKI interpreter: ``run(graph, inputs, target=TRN2) -> {output name: array}``.

Memory model: every kernel input and HBM allocation is a flat NumPy buffer (views are strided
windows of it, so writes go through); SBUF and PSUM tiles are arrays with byte-accurate
capacity accounting. Each buffer carries a written-mask: fresh memory is poisoned and reading
an unwritten element raises, as does an output left partly unwritten. Accesses are bounds-
checked explicitly (NumPy slicing would clamp), dealloc'd tiles cannot be touched or freed
again, and tiles still live at the end raise. PSUM remembers which elements a matmul wrote
last, so accumulating onto anything else raises. A tile allocated with ``bufs = k`` rotating
buffers owns k physical buffers, reserved (capacity) while it lives; execution n of its alloc
hands out buffer ``n mod k`` poisoned again, so a read of an element this iteration did not write
raises even though the buffer holds iteration n - k's data. Compute rules: interpret_compute.py.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..ir.dtypes import DType, cast_array, tfloat32, uint8
from ..ir.errors import InterpretError, NkError
from ..ir.graph import Graph, ReturnOp
from ..ir.interpreter import Interpreter, check_inputs
from ..ir.printer import Printer
from . import ops
from .access import AccessSpec
from .target import TRN2, Target
from .types import HbmType, MemorySpace
from .verify import verify as verify_graph


class Buffer:
    """Storage of one tensor: data, written-mask, PSUM matmul-mask, liveness."""

    __slots__ = (
        "data",
        "written",
        "mm",
        "dtype",
        "space",
        "alive",
        "label",
        "flat",
        "wflat",
        "read_only",
        "injective",
    )

    def __init__(self, shape, dtype: DType, space: MemorySpace, label: str):
        self.dtype, self.space, self.label = dtype, space, label
        n = int(np.prod(shape))
        fill = np.nan if dtype.is_float else 0
        self.flat = np.full(n, fill, dtype=dtype.np_dtype)
        self.wflat = np.zeros(n, dtype=bool)
        self.data = self.flat.reshape(shape)
        self.written = self.wflat.reshape(shape)
        self.mm = np.zeros(shape, dtype=bool) if space is MemorySpace.PSUM else None
        self.alive, self.read_only, self.injective = True, False, True

    def view(self, shape, strides, offset: int, label: str) -> Buffer:
        """A strided window over this buffer's flat storage sharing data and mask."""
        v = Buffer.__new__(Buffer)
        v.dtype, v.space, v.label, v.mm = self.dtype, self.space, label, None
        v.flat, v.wflat, v.alive, v.read_only = self.flat, self.wflat, True, self.read_only
        item = self.flat.itemsize
        v.data = as_strided(self.flat[offset:], shape, tuple(s * item for s in strides))
        v.written = as_strided(self.wflat[offset:], shape, tuple(strides))
        dims = sorted((s, n) for s, n in zip(strides, shape) if n > 1)
        reach, v.injective = 0, True
        for s, n in dims:
            v.injective &= s > reach
            reach += (n - 1) * s
        return v


def to_storage(x, dtype: DType, wrap: bool = False) -> np.ndarray:
    """Round computed values once into ``dtype`` (floats RNE; float -> int RNE and saturating;
    int -> int saturating, or two's-complement wrapping for bitwise results)."""
    x = np.asarray(x)
    if x.dtype == dtype.np_dtype and dtype is not tfloat32:
        return x
    if dtype.is_bool:
        return cast_array(x, uint8, float_to_int="rne") != 0
    if dtype.is_int and x.dtype.kind in "iub":
        if wrap:
            return x.astype(np.int64).astype(dtype.np_dtype)
        info = np.iinfo(dtype.np_dtype)
        return np.clip(x.astype(np.int64), info.min, info.max).astype(dtype.np_dtype)
    return cast_array(x, dtype, float_to_int="rne")


class NkiInterpreter(Interpreter):
    """Runs NKI graphs on NumPy with the memory model described in the module docstring."""

    def __init__(self, graph: Graph, target: Target = TRN2):
        super().__init__()
        self.graph, self.target = graph, target
        self.printer = Printer(graph)
        self.sbuf_used = 0
        self.psum_banks = 0
        self.live: dict[int, tuple[Buffer, ops.AllocOp]] = {}
        self.rotation: dict[int, list] = {}  # id(alloc op) -> [its physical buffers, executions]
        self.iteration: list[tuple[str, int]] = []

    # ---- errors ------------------------------------------------------------------------------------
    def fail(self, op, msg: str) -> InterpretError:
        where = ""
        if self.iteration:
            where = " (iteration " + ", ".join(f"{n} = {i}" for n, i in self.iteration) + ")"
        text = self.printer.format_op(op)[0].strip()
        return InterpretError(f"{op.name}: {msg}{where}\n  at: {text}")

    def run_op(self, op) -> None:
        """Run one op; NumPy failures on ill-shaped operands become InterpretErrors."""
        try:
            super().run_op(op)
        except NkError:
            raise
        except (ValueError, TypeError, IndexError) as e:
            raise self.fail(op, f"operands do not fit this op ({e}); nk.nki.verify names the rule") from None

    # ---- windows -------------------------------------------------------------------------------------
    def window(self, op, name: str, spec: AccessSpec, args):
        """(buffer, index tuple, access shape, has stride-0 dims) after liveness/bounds checks."""
        buf: Buffer = args[spec.tensor]
        if not buf.alive:
            raise self.fail(op, f"{name} uses {buf.label} after its dealloc")
        idx, bcast = [], False
        shape = buf.data.shape
        for k, d in enumerate(spec.dims):
            off = d.offset.const
            for p, c in d.offset.terms:
                off += c * args[p]
            last = off + (d.size - 1) * d.stride
            if off < 0 or last >= shape[k]:
                raise self.fail(
                    op,
                    f"{name} dim {k} window [{off}, {last + 1}) is out of bounds "
                    f"for {buf.label} of shape {shape}",
                )
            if d.stride == 0:
                idx.append(slice(off, off + 1))
                bcast = bcast or d.size > 1
            else:
                idx.append(slice(off, last + 1, d.stride))
        return buf, tuple(idx), tuple(d.size for d in spec.dims), bcast

    def read_access(self, op, name: str, args) -> np.ndarray:
        """The stored values of access ``name`` (raises on poison, OOB, dead tiles)."""
        spec = op.attrs[name]
        buf, idx, shape, bcast = self.window(op, name, spec, args)
        w = buf.written[idx]
        if not w.all():
            bad = tuple(int(i) for i in np.argwhere(~w)[0])
            raise self.fail(
                op, f"{name} reads unwritten (poisoned) memory of {buf.label} at window element {list(bad)}"
            )
        data = buf.data[idx]
        return np.broadcast_to(data, shape) if bcast else data

    def write_access(
        self, op, name: str, args, values, *, from_matmul: bool = False, wrap: bool = False
    ) -> None:
        """Round ``values`` into access ``name`` and mark it written."""
        spec = op.attrs[name]
        buf, idx, shape, bcast = self.window(op, name, spec, args)
        if bcast or not buf.injective:
            raise self.fail(op, f"{name} writes one element of {buf.label} more than once")
        if buf.read_only:
            raise self.fail(op, f"{name} writes kernel input {buf.label}")
        values = np.asarray(values)
        if values.size != int(np.prod(shape)):
            raise self.fail(op, f"{name} receives {values.size} elements for a window of {shape}")
        buf.data[idx] = to_storage(values, buf.dtype, wrap).reshape(shape)
        buf.written[idx] = True
        if buf.mm is not None:
            buf.mm[idx] = from_matmul

    def psum_matmul_state(self, op, name: str, args) -> bool:
        """True when every element of the window was last written by nc_matmul."""
        buf, idx, _, _ = self.window(op, name, op.attrs[name], args)
        return bool(buf.mm is not None and buf.mm[idx].all())

    # ---- allocation ----------------------------------------------------------------------------------
    def allocate(self, op: ops.AllocOp) -> Buffer:
        t, tg = op.result.type, self.target
        label = self.printer.name(op.result)
        if isinstance(t, HbmType):
            return Buffer(t.shape, t.dtype, MemorySpace.HBM, label)
        if t.partitions > tg.num_partitions:
            raise self.fail(op, f"tile has {t.partitions} partitions > {tg.num_partitions}")
        bufs = op.bufs
        bpp = t.bytes_per_partition * bufs
        if t.space is MemorySpace.SBUF:
            if self.sbuf_used + bpp > tg.sbuf_bytes_per_partition:
                raise self.fail(
                    op,
                    f"SBUF exhausted: {self.sbuf_used + bpp:,} B/partition > {tg.sbuf_bytes_per_partition:,}",
                )
            self.sbuf_used += bpp
        else:
            if t.bytes_per_partition > tg.psum_bank_bytes:
                raise self.fail(
                    op,
                    f"PSUM tile of {t.bytes_per_partition:,} B/partition exceeds a "
                    f"{tg.psum_bank_bytes:,} B bank",
                )
            if self.psum_banks + bufs > tg.psum_num_banks:
                need = "" if bufs == 1 else f" ({bufs} rotating buffers need {bufs})"
                raise self.fail(
                    op, f"PSUM exhausted: {self.psum_banks} of all {tg.psum_num_banks} banks are in use{need}"
                )
            self.psum_banks += bufs
        if bufs == 1:
            buf = Buffer(t.shape, t.dtype, t.space, label)
        else:
            buf = self._rotate(op, label)
        self.live[id(buf)] = (buf, op)
        return buf

    def _rotate(self, op: ops.AllocOp, label: str) -> Buffer:
        """The next of ``op``'s rotating buffers, poisoned again (its old data stays unreadable)."""
        t = op.result.type
        slots = self.rotation.setdefault(id(op), [[], 0])
        n = slots[1]
        slots[1] += 1
        if len(slots[0]) < op.bufs:
            slots[0].append(Buffer(t.shape, t.dtype, t.space, label))
        buf = slots[0][n % op.bufs]
        if buf.alive and n >= op.bufs:
            raise self.fail(op, f"rotating buffer {n % op.bufs} of {label} is reused while still live")
        buf.wflat[...] = False
        if buf.mm is not None:
            buf.mm[...] = False
        buf.alive = True
        return buf

    def release(self, op, buf: Buffer) -> None:
        if not buf.alive:
            raise self.fail(op, f"{buf.label} is deallocated twice")
        buf.alive = False
        _, alloc = self.live.pop(id(buf))
        bufs = alloc.bufs
        if buf.space is MemorySpace.SBUF:
            self.sbuf_used -= buf.data.size // buf.data.shape[0] * buf.dtype.itemsize * bufs
        else:
            self.psum_banks -= bufs


I = NkiInterpreter


@I.impl(ops.AllocOp)
def _alloc(it: I, op, _args):
    return [it.allocate(op)]


@I.impl(ops.DeallocOp)
def _dealloc(it: I, op, args):
    it.release(op, args[0])


@I.impl(ops.HbmViewOp)
def _view(it: I, op, args):
    base: Buffer = args[0]
    t = op.results[0].type
    if op.extent() > base.flat.size:
        raise it.fail(op, f"view reaches flat element {op.extent() - 1} of a {base.flat.size}-element tensor")
    return [base.view(t.shape, op.attrs["strides"], op.attrs["offset"], it.printer.name(op.result))]


@I.impl(ops.ForiLoopOp)
def _loop(it: I, op, _args):
    name = it.printer.name(op.index)
    for i in range(op.attrs["lower"], op.attrs["upper"], op.attrs["step"]):
        it.iteration.append((name, i))
        try:
            it.run_block(op.body, [i])
        finally:
            it.iteration.pop()


@I.impl(ReturnOp)
def _return(_it: I, _op, _args):
    return None


def run(
    graph: Graph, inputs: Mapping[str, np.ndarray], target: Target = TRN2, verify: bool = True
) -> dict[str, np.ndarray]:
    """Run an NKI graph on NumPy; returns ``{output name: array}``. The hardware verifier runs
    first unless ``verify=False`` (the run-time checks hold either way). A kernel launched on
    several physical cores (``nki.program_id``) runs each core's program (run_cores.py)."""
    from .ops.program import lnc_of

    if lnc_of(graph) > 1:
        from .run_cores import run_cores

        return run_cores(graph, inputs, target, verify)
    it, args = start(graph, inputs, target, verify)
    with np.errstate(all="ignore"):  # IEEE results (inf, nan) are the data, not errors
        it.run_block(graph.body, args)
    return finish(it)


def start(graph: Graph, inputs: Mapping[str, np.ndarray], target: Target, verify: bool):
    """(interpreter, kernel argument buffers) for one run of ``graph``: verified (unless
    ``verify=False``), inputs checked and loaded as read-only HBM buffers."""
    from . import interpret_compute  # noqa: F401  (registers the compute rules)

    if verify:
        verify_graph(graph, target)
    for name, v in zip(graph.input_names, graph.inputs):
        if not isinstance(v.type, HbmType):
            raise InterpretError(
                f"graph @{graph.name}: input %{name} has type {v.type}; kernel inputs are HBM tensors"
            )
    arrays = check_inputs(graph, inputs)
    it = NkiInterpreter(graph, target)
    args = []
    aliased = set(graph.aliases.values())  # updated in place; the caller's arrays are copied
    for name, v in zip(graph.input_names, graph.inputs):
        buf = Buffer(v.type.shape, v.type.dtype, MemorySpace.HBM, "%" + name)
        buf.data[...] = arrays[name]
        buf.written[...] = True
        buf.read_only = name not in aliased
        args.append(buf)
    if graph.return_op is None:
        raise InterpretError(f"graph @{graph.name} has no outputs")
    for a, val in zip(graph.body.args, args):
        it.env[a] = val
    return it, args


def finish(it: NkiInterpreter) -> dict[str, np.ndarray]:
    """The outputs of a finished run, after the end-of-kernel checks (no live tile, every
    output element written)."""
    graph, ret = it.graph, it.graph.return_op
    if it.live:
        buf, op = next(iter(it.live.values()))
        raise it.fail(
            op, f"{buf.label} is still allocated at kernel end ({len(it.live)} live tile(s) leaked)"
        )
    out = {}
    for name, v in graph.outputs.items():
        buf = it.env[v]
        if not isinstance(v.type, HbmType):
            raise it.fail(ret, f"output {name} is not an HBM tensor")
        if not buf.written.all():
            bad = [int(i) for i in np.argwhere(~buf.written)[0]]
            missing = int((~buf.written).sum())
            raise it.fail(ret, f"output {name} has {missing:,} unwritten elements (first at {bad})")
        out[name] = buf.data.copy()
    return out


__all__ = ["run", "start", "finish", "NkiInterpreter", "Buffer", "to_storage"]
