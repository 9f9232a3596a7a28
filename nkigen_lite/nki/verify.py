"""Hardware verifier for NKI graphs: ``verify(graph, target=TRN2)``.

Runs the structural core verifier, then walks the program in order checking each op's
legality (verify_ops.py) and the program-wide rules: live SBUF bytes and PSUM banks per
partition within the target's capacity (a loop body counted once), every access in bounds for
every iteration of its loops, deallocation in the allocating block, no use after dealloc, no
double dealloc, no leak, HBM views inside their tensor, kernel inputs read-only, outputs are
HBM allocations. Errors are ``VerifyError`` naming the rule, the numbers and the op.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ..ir.edits import EDITS
from ..ir.errors import VerifyError
from ..ir.graph import Block, Graph, ReturnOp
from ..ir.op import Op
from ..ir.printer import Printer
from ..ir.value import Value
from . import ops
from .access import AccessSpec, AffineSpec
from .target import TRN2, Target
from .types import HbmType, TileType
from .verify_ops import OP_RULES

PROGRAM_OPS = (ops.AllocOp, ops.DeallocOp, ops.HbmViewOp, ops.ForiLoopOp, ReturnOp, ops.ProgramIdOp)


class _CoreRange:
    """The values an ``nki.program_id`` takes, shaped like a loop for the range checks."""

    def __init__(self, lnc: int):
        self.attrs = {"lower": 0, "upper": lnc, "step": 1}
        self.trip_count, self.last = lnc, lnc - 1


@dataclass(frozen=True)
class MemoryPeaks:
    """Peak on-chip usage per partition found by the verifier."""

    sbuf_bytes: int
    psum_banks: int


def _n(x: int) -> str:
    return f"{x:,}"


class VerifyContext:
    """State of one verification walk; rules call ``fail``, ``check_injective``, ..."""

    def __init__(self, graph: Graph, target: Target):
        self.graph, self.target = graph, target
        self.printer = Printer(graph)
        self.loops: dict[Value, ops.ForiLoopOp] = {}
        self.alloc_block: dict[Value, Block] = {}
        self.dead: dict[Value, Op] = {}
        self.sbuf = self.banks = self.peak_sbuf = self.peak_banks = 0

    # ---- reporting -------------------------------------------------------------------------------
    def describe(self, op: Op) -> str:
        return self.printer.format_op(op)[0].strip()

    def name(self, v: Value) -> str:
        return self.printer.name(v)

    def fail(self, op: Op, msg: str) -> VerifyError:
        return VerifyError(f"{op.name}: {msg}\n  at: {self.describe(op)}", op=op)

    # ---- affine ranges -----------------------------------------------------------------------------
    def value_range(self, op: Op, spec: AffineSpec) -> tuple[int, int, dict, dict]:
        """(min, max) of an offset over every iteration, with the index values reaching them."""
        lo = hi = spec.const
        at_lo, at_hi = {}, {}
        for p, c in spec.terms:
            v = op.operands[p]
            loop = self.loops[v]
            first, last = loop.attrs["lower"], loop.last
            small, big = (first, last) if c > 0 else (last, first)
            lo, hi = lo + c * small, hi + c * big
            at_lo[v], at_hi[v] = small, big
        return lo, hi, at_lo, at_hi

    def _where(self, at: dict) -> str:
        return (" (at " + ", ".join(f"{self.name(v)} = {x}" for v, x in at.items()) + ")") if at else ""

    # ---- access rules --------------------------------------------------------------------------
    def check_bounds(self, op: Op, name: str, spec: AccessSpec) -> None:
        t = op.operands[spec.tensor].type
        for k, (d, n) in enumerate(zip(spec.dims, t.shape)):
            lo, hi, at_lo, at_hi = self.value_range(op, d.offset)
            if lo < 0:
                raise self.fail(op, f"{name} dim {k} starts at {_n(lo)} < 0{self._where(at_lo)}")
            end = hi + (d.size - 1) * d.stride + 1
            if end > n:
                raise self.fail(
                    op,
                    f"{name} dim {k} window [{_n(hi)}, {_n(end)}) is out of bounds "
                    f"for {self.name(op.operands[spec.tensor])} of size {_n(n)}"
                    f"{self._where(at_hi)}",
                )

    def check_partition_start(self, op: Op, name: str, a) -> None:
        """Compute engines address 1..32 partitions from a quadrant, <= 64 from a half, > 64 from 0."""
        spec = op.attrs[name]
        q = self.target.partition_quadrant
        n = a.partitions
        lo, hi, _, _ = self.value_range(op, spec.dims[0].offset)
        if n > 2 * q:
            ok, rule = lo == hi == 0, "0"
        else:
            g = 2 * q if n > q else q
            base = spec.dims[0].offset.const
            ok = True
            for p, c in spec.dims[0].offset.terms:
                loop = self.loops[op.operands[p]]
                base += c * loop.attrs["lower"]
                ok &= loop.trip_count == 1 or (c * loop.attrs["step"]) % g == 0
            ok &= base % g == 0
            rule = f"a multiple of {g}"
        if not ok:
            raise self.fail(
                op,
                f"{name} covers {n} partitions starting at {_n(lo)}..{_n(hi)}; "
                f"an access of {n} partitions must start at {rule}",
            )

    def check_injective(self, op: Op, name: str) -> None:
        """A written access must not hit one element twice (no stride-0 dims, no overlapping view)."""
        spec = op.attrs[name]
        for k, d in enumerate(spec.dims):
            if d.stride == 0 and d.size > 1:
                raise self.fail(op, f"{name} dim {k} has stride 0: a write cannot broadcast")
        view = op.operands[spec.tensor].defining_op
        if isinstance(view, ops.HbmViewOp):
            dims = sorted((s, n) for s, n in zip(view.attrs["strides"], view.results[0].type.shape) if n > 1)
            reach = 0
            for s, n in dims:
                if s <= reach:
                    raise self.fail(
                        op,
                        f"{name} writes through {self.name(view.results[0])}, a view "
                        "whose elements overlap (strides "
                        f"{list(view.attrs['strides'])})",
                    )
                reach += (n - 1) * s

    # ---- program walk ---------------------------------------------------------------------------
    def run(self) -> MemoryPeaks:
        for name, v in zip(self.graph.input_names, self.graph.inputs):
            if not isinstance(v.type, HbmType):
                raise VerifyError(
                    f"graph @{self.graph.name}: input %{name} has type {v.type}; "
                    "kernel inputs are HBM tensors"
                )
        self.block(self.graph.body, None)
        return MemoryPeaks(self.peak_sbuf, self.peak_banks)

    def block(self, block: Block, loop: ops.ForiLoopOp | None) -> None:
        allocated = []
        for op in block:
            for v in op.operands:
                if v in self.dead and isinstance(op, ops.DeallocOp):
                    raise self.fail(
                        op, f"{self.name(v)} is deallocated twice (first by {self.describe(self.dead[v])})"
                    )
                if v in self.dead:
                    raise self.fail(
                        op, f"{self.name(v)} is used after its dealloc ({self.describe(self.dead[v])})"
                    )
            if isinstance(op, ops.AllocOp):
                self.alloc(op, loop)
                allocated.append(op.result)
            elif isinstance(op, ops.DeallocOp):
                self.dealloc(op, block)
            elif isinstance(op, ops.HbmViewOp):
                self.view(op)
            elif isinstance(op, ops.ForiLoopOp):
                self.loops[op.index] = op
                self.block(op.body, op)
            elif isinstance(op, ops.ProgramIdOp):
                self.program_id(op, loop)
            elif isinstance(op, ReturnOp):
                self.outputs(op)
            else:
                rule = OP_RULES.get(type(op))
                if rule is None:
                    raise self.fail(op, "no hardware legality rule for this op")
                self.accesses(op)
                rule(self, op)
        for v in allocated:
            if isinstance(v.type, TileType) and v not in self.dead:
                where = (
                    "is allocated in a loop body but not deallocated there (it would leak on every iteration)"
                    if loop
                    else "is never deallocated (leaked at kernel end)"
                )
                raise self.fail(v.defining_op, f"{self.name(v)} {where}")
            if isinstance(v.type, TileType):
                self.dead.pop(v)

    def program_id(self, op: ops.ProgramIdOp, loop) -> None:
        """One ``nki.program_id`` at the top level, its LNC degree one the target supports."""
        lnc = op.attrs["lnc"]
        if loop is not None:
            raise self.fail(op, "nki.program_id belongs at the kernel's top level, not in a loop")
        if any(isinstance(v, _CoreRange) for v in self.loops.values()):
            raise self.fail(op, "a kernel has one nki.program_id")
        if not 1 <= lnc <= self.target.lnc_max:
            raise self.fail(
                op, f"lnc {lnc}: a logical NeuronCore groups 1 to {self.target.lnc_max} physical cores [LNC]"
            )
        self.loops[op.result] = _CoreRange(lnc)

    def alloc(self, op: ops.AllocOp, loop) -> None:
        t, tg = op.result.type, self.target
        if isinstance(t, HbmType):
            if loop is not None:
                raise self.fail(op, "HBM tensors are allocated at the kernel's top level, not in a loop")
            return
        if t.partitions > tg.num_partitions:
            raise self.fail(op, f"tile has {_n(t.partitions)} partitions > {tg.num_partitions}")
        if t.rank - 1 > tg.max_free_dims:
            raise self.fail(op, f"tile has {t.rank - 1} free dims > {tg.max_free_dims}")
        bufs = op.bufs
        if bufs > 1 and loop is None:
            raise self.fail(op, f"bufs = {bufs} outside a loop: only a tile allocated in a loop body rotates")
        bpp = t.bytes_per_partition * bufs  # every rotating buffer is reserved while the tile lives
        if t.space.value == "sbuf":
            self.sbuf += bpp
            self.peak_sbuf = max(self.peak_sbuf, self.sbuf)
            if self.sbuf > tg.sbuf_bytes_per_partition:
                raise self.fail(
                    op, f"SBUF peak {_n(self.sbuf)} B/partition > {_n(tg.sbuf_bytes_per_partition)}"
                )
        else:
            if t.bytes_per_partition > tg.psum_bank_bytes:
                raise self.fail(
                    op,
                    f"PSUM tile uses {_n(t.bytes_per_partition)} B/partition > one bank of "
                    f"{_n(tg.psum_bank_bytes)} B",
                )
            self.banks += bufs
            self.peak_banks = max(self.peak_banks, self.banks)
            if self.banks > tg.psum_num_banks:
                raise self.fail(
                    op,
                    f"PSUM peak {self.banks} banks ({_n(self.banks * tg.psum_bank_bytes)}"
                    f" B/partition) > {tg.psum_num_banks} banks "
                    f"({_n(tg.psum_bytes_per_partition)})",
                )
        self.alloc_block[op.result] = op.parent

    def dealloc(self, op: ops.DeallocOp, block: Block) -> None:
        v = op.operand(0)
        if not isinstance(v.defining_op, ops.AllocOp):
            raise self.fail(op, f"{self.name(v)} was not made by nki.alloc")
        if self.alloc_block.get(v) is not block:
            raise self.fail(
                op,
                f"{self.name(v)} must be deallocated in the block that allocates it "
                "(a dealloc inside a loop would run on every iteration)",
            )
        self.dead[v] = op
        t = v.type
        bufs = v.defining_op.bufs
        if t.space.value == "sbuf":
            self.sbuf -= t.bytes_per_partition * bufs
        else:
            self.banks -= bufs

    def view(self, op: ops.HbmViewOp) -> None:
        root = op.operand(0)
        if not (root.owner is self.graph.body or isinstance(root.defining_op, ops.AllocOp)):
            raise self.fail(
                op,
                f"{self.name(root)} is not a kernel input or an HBM alloc; views "
                "index a root tensor's storage",
            )
        size = root.type.size
        if op.extent() > size:
            raise self.fail(
                op,
                f"view reaches flat element {_n(op.extent() - 1)} but "
                f"{self.name(root)} has {_n(size)} elements",
            )

    def accesses(self, op: ops.NkiOp) -> None:
        for name, spec in op.access_attrs():
            self.check_bounds(op, name, spec)
            a = op.access(name)
            if isinstance(a.tensor.type, TileType) and a.dims[0].stride != 1 and a.partitions > 1:
                raise self.fail(
                    op,
                    f"{name} strides the partition dim ({a.dims[0].stride}); "
                    "on-chip accesses cover contiguous partitions",
                )
            if name in op.writes:
                root = a.tensor
                if isinstance(root.defining_op, ops.HbmViewOp):
                    root = root.defining_op.operand(0)
                if root.owner is self.graph.body and root not in self.aliased_inputs:
                    raise self.fail(
                        op,
                        f"{name} writes kernel input {self.name(root)}; inputs are read-only "
                        "unless an output aliases them",
                    )

    @functools.cached_property
    def aliased_inputs(self) -> set:
        """Kernel inputs that an output updates in place (writable)."""
        g = self.graph
        return {g.input(n) for n in g.aliases.values()}

    def outputs(self, op: ReturnOp) -> None:
        seen = set()
        aliases = op.alias_map
        for name, v in zip(op.attrs["names"], op.operands):
            if name in aliases:
                if v is not self.graph.input(aliases[name]):
                    raise self.fail(
                        op,
                        f"output {name} aliases input {aliases[name]}, so it must be that kernel "
                        f"input (written in place), not {self.name(v)}",
                    )
                continue
            if not (isinstance(v.defining_op, ops.AllocOp) and isinstance(v.type, HbmType)):
                raise self.fail(op, f"output {name} = {self.name(v)} must be an HBM tensor made by nki.alloc")
            if v in seen:
                raise self.fail(op, f"output {name} = {self.name(v)} is returned twice")
            seen.add(v)


def verify(graph: Graph, target: Target = TRN2, structure: bool = True) -> MemoryPeaks:
    """Check structure and hardware legality; returns peak SBUF bytes / PSUM banks per partition.
    ``structure=False`` skips the structural check (``graph.verify()``) for a caller that has
    just run it on this graph (nk.compile: the pipeline verifies after its last stage).

    A graph that passed is not checked again for the same target while no IR has been edited
    since (``ir/edits.py``: the result is kept on the graph with the edit count): the cost
    model and the statistics of a compiled kernel verify it without walking it again."""
    done = graph.__dict__.get("_nki_verified")
    if done is not None and done[0] == EDITS.n and done[1] == target:
        if structure and not done[2]:
            graph.verify()
            graph._nki_verified = (EDITS.n, target, True, done[3])
        return done[3]
    if structure:
        graph.verify()
    peaks = VerifyContext(graph, target).run()
    graph._nki_verified = (EDITS.n, target, structure, peaks)
    return peaks
