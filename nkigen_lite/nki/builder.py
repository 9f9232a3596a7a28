"""Builder for NKI IR: one method per NISA instruction, dst first, NISA keyword names.

    b = nk.nki.Builder("tiled_add")
    a = b.add_input("a", (256, 512), nk.float32)
    y = b.alloc((256, 512), nk.float32, "hbm")
    with b.fori_loop(0, 2) as i:
        t = b.alloc((128, 512), nk.float32, "sbuf")
        b.dma_copy(dst=t, src=a[ts(i, 128), :])
        ...
        b.dealloc(t)
    b.set_outputs({"y": y})

Index Values support ``i * 128``, ``i + 1``, ``2 * i + j`` (giving ``Affine``); tensors are
windowed with ``t[0:128, ts(i, 512)]``, ``t[:, ds(j * 512 + 64, 128)]`` or
``t[i * 128 : i * 128 + 128, :]``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..ir.dtypes import float32, get_dtype
from ..ir.errors import BuildError
from ..ir.graph import Block, Graph, Region
from ..ir.op import Op
from ..ir.value import Value
from . import ops
from .access import pack
from .types import INDEX, Access, Affine, DimSlice, HbmType, MemorySpace, TileType, is_index

_INDEX_NAMES = "ijklmn"


class Builder:
    """Builds an NKI Graph; see the module docstring."""

    def __init__(self, name: str = "kernel"):
        self.graph = Graph(name)
        self._blocks: list[Block] = [self.graph.body]
        self.loc: str | None = None  # source location stamped on every op appended

    # ---- signature -----------------------------------------------------------------------------
    def add_input(self, name: str, shape: Sequence[int], dtype=float32) -> Value:
        """Declare a kernel argument: an HBM tensor."""
        v = self.graph.add_input(name, HbmType(tuple(shape), get_dtype(dtype)))
        v._builder = self
        return v

    def set_outputs(self, outputs: dict[str, Value], aliases: dict[str, str] | None = None) -> None:
        """Name the kernel outputs (HBM tensors made by ``alloc(..., "hbm")``); none for a kernel
        whose graph outputs are all empty (it computes nothing). An output aliasing an input
        (``aliases={"cache_out": "cache"}``) is that kernel input, written in place."""
        if not isinstance(outputs, dict):
            raise BuildError("set_outputs takes a dict {name: Value}")
        self.graph.set_outputs(dict(outputs), dict(aliases or {}))

    # ---- plumbing ------------------------------------------------------------------------------
    def _append(self, op: Op) -> Op:
        try:
            op.verify()
        except BuildError:
            op.drop_operand_uses()
            raise
        op.loc = self.loc
        self._blocks[-1].append(op)
        for r in op.results:
            r._builder = self
        return op

    def append(self, op: Op) -> Op:
        """Append a ready-made op (e.g. a copy of another kernel's op) at the current position,
        stamped with the current location."""
        return self._append(op)

    def _emit(self, cls: type[ops.NkiOp], **kw) -> Op:
        items = []
        for a in cls.attr_spec:
            if a.name not in kw:
                continue
            items.append((a.name, self._operand(kw[a.name], a.name, cls)))
        operands, attrs = pack(items)
        return self._append(cls(operands, attrs))

    def _operand(self, x: Any, what: str, cls) -> Any:
        if isinstance(x, Value):
            if is_index(x):
                return Affine.of(x)
            if not isinstance(x.type, (TileType, HbmType)):
                raise BuildError(f"{cls.name}: {what} must be a tile or HBM tensor, got {x.type}")
            return Access.whole(x)
        if isinstance(x, np.generic):
            return x.item()
        return x

    # ---- memory --------------------------------------------------------------------------------
    def alloc(
        self, shape: Sequence[int], dtype=float32, space="sbuf", name: str | None = None, bufs: int = 1
    ) -> Value:
        """A fresh uninitialised tensor in ``space`` ("hbm", "sbuf" or "psum"); ``bufs`` rotating
        buffers for a tile allocated in a loop body."""
        sp = MemorySpace.get(space)
        t = HbmType(shape, dtype) if sp is MemorySpace.HBM else TileType(shape, dtype, sp)
        v = self._append(ops.AllocOp([], {"bufs": bufs}, [t])).result
        v.name_hint = name or {"hbm": "hbm", "sbuf": "t", "psum": "ps"}[sp.value]
        return v

    def dealloc(self, t: Value) -> None:
        """End the lifetime of an on-chip tile."""
        self._append(ops.DeallocOp([t]))

    def hbm_view(
        self, x: Value, shape: Sequence[int], strides: Sequence[int], offset: int = 0, name: str | None = None
    ) -> Value:
        """A view of ``x``'s flat storage: element (k...) is flat[offset + sum(k_d * strides_d)]."""
        if not isinstance(x, Value) or not isinstance(x.type, HbmType):
            raise BuildError(f"hbm_view needs an HBM tensor, got {x!r}")
        t = HbmType(tuple(shape), x.type.dtype)
        op = ops.HbmViewOp([x], {"offset": offset, "strides": tuple(strides)}, [t])
        v = self._append(op).result
        v.name_hint = name or "view"
        return v

    def dma_copy(self, dst, src) -> None:
        """DMA between HBM windows and SBUF tiles (row-major element pairing)."""
        self._emit(ops.DmaCopyOp, dst=dst, src=src)

    def dma_transpose(self, dst, src) -> None:
        """DMA transpose into SBUF: ``dst = transpose(src, axes of its rank)`` (ops/dma_transpose.py)."""
        self._emit(ops.DmaTransposeOp, dst=dst, src=src)

    def dma_gather(self, dst, src, index) -> None:
        """Indirect DMA: SBUF ``dst[p] = `` HBM ``src[index[p, 0]]`` (ops/indirect.py)."""
        self._emit(ops.DmaGatherOp, dst=dst, src=src, index=index)

    def dma_scatter(self, dst, src, index) -> None:
        """Indirect DMA: HBM ``dst[index[p, 0]] = `` SBUF ``src[p]`` (ops/indirect.py)."""
        self._emit(ops.DmaScatterOp, dst=dst, src=src, index=index)

    def program_id(self, lnc: int) -> Value:
        """``nki.program_id {lnc}`` at the top: this core's id in a launch on ``lnc`` cores."""
        op = ops.ProgramIdOp([], {"lnc": lnc}, None, [])
        self._append(op)
        return op.results[0]

    # ---- collectives (nki/ops/collective.py) ---------------------------------------------------
    def all_reduce(self, dst, src, world: int, op: str = "add") -> None:
        """Every rank's ``dst`` = the reduction (add, maximum, minimum) of all ranks' ``src``."""
        self._emit(ops.AllReduceOp, dst=dst, src=src, world=world, op=op)

    def all_gather(self, dst, src, world: int) -> None:
        """Every rank's ``dst`` = all ranks' ``src`` stacked along dim 0."""
        self._emit(ops.AllGatherOp, dst=dst, src=src, world=world)

    def reduce_scatter(self, dst, src, world: int, op: str = "add") -> None:
        """Rank r's ``dst`` = block r (dim 0) of the reduction of all ranks' ``src``."""
        self._emit(ops.ReduceScatterOp, dst=dst, src=src, world=world, op=op)

    def all_to_all(self, dst, src, world: int) -> None:
        """Rank r's ``dst`` = block r (dim 0) of every rank's ``src``, stacked in rank order."""
        self._emit(ops.AllToAllOp, dst=dst, src=src, world=world)

    # ---- compute -------------------------------------------------------------------------------
    def tensor_copy(self, dst, src, engine: str = "vector") -> None:
        """On-chip copy (PSUM -> SBUF, casts)."""
        self._emit(ops.TensorCopyOp, dst=dst, src=src, engine=engine)

    def memset(self, dst, value, engine: str = "vector") -> None:
        """Fill ``dst`` with a constant."""
        self._emit(ops.MemsetOp, dst=dst, value=value, engine=engine)

    def iota(self, dst, pattern, offset=0, channel_multiplier: int = 0) -> None:
        """dst[c, k...] = offset + c*channel_multiplier + sum(step*k) (GpSimd, int32)."""
        self._emit(
            ops.IotaOp,
            dst=dst,
            pattern=_pattern(pattern),
            offset=Affine.of(offset),
            channel_multiplier=channel_multiplier,
            engine="gpsimd",
        )

    def nc_matmul(self, dst, stationary, moving, accumulate: bool = False) -> None:
        """dst (+)= stationary.T @ moving on the Tensor engine."""
        self._emit(
            ops.MatmulOp,
            dst=dst,
            stationary=stationary,
            moving=moving,
            accumulate=accumulate,
            engine="tensor",
        )

    def nc_transpose(self, dst, data, engine: str = "tensor") -> None:
        """Swap partition and free dims (TensorE: SBUF -> PSUM; VectorE: <= 32x32)."""
        self._emit(ops.TransposeOp, dst=dst, data=data, engine=engine)

    def activation(self, dst, op: str, data, bias=None, scale=1.0, reduce_res=None) -> None:
        """dst = op(data * scale + bias) on ScalarE, optionally summing each row into reduce_res."""
        self._emit(
            ops.ActivationOp,
            dst=dst,
            data=data,
            op=op,
            bias=bias,
            scale=scale,
            reduce_res=reduce_res,
            engine="scalar",
        )

    def tensor_tensor(self, dst, data1, data2, op: str, engine: str = "vector") -> None:
        """dst = data1 op data2."""
        self._emit(ops.TensorTensorOp, dst=dst, data1=data1, data2=data2, op=op, engine=engine)

    def tensor_scalar(
        self,
        dst,
        data,
        op0: str,
        operand0,
        reverse0: bool = False,
        op1=None,
        operand1=None,
        reverse1: bool = False,
        engine: str = "vector",
    ) -> None:
        """dst = (data op0 operand0) op1 operand1 (operands: numbers or (P, 1) accesses)."""
        self._emit(
            ops.TensorScalarOp,
            dst=dst,
            data=data,
            op0=op0,
            operand0=operand0,
            reverse0=reverse0,
            op1=op1,
            operand1=operand1,
            reverse1=reverse1,
            engine=engine,
        )

    def tensor_reduce(self, dst, op: str, data, axis, negate: bool = False, keepdims: bool = False) -> None:
        """Reduce ``data`` over trailing free axes into ``dst``."""
        axis = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
        self._emit(
            ops.TensorReduceOp,
            dst=dst,
            data=data,
            op=op,
            axis=axis,
            negate=negate,
            keepdims=keepdims,
            engine="vector",
        )

    def max8(self, dst, src) -> None:
        """dst[p, 0:8] = the 8 largest of src's partition p, descending (ops/top8.py)."""
        self._emit(ops.Max8Op, dst=dst, src=src, engine="vector")

    def find_index8(self, dst, data, vals) -> None:
        """dst[p, j] = the first index in data's partition p of vals[p, j] (ops/top8.py)."""
        self._emit(ops.FindIndex8Op, dst=dst, data=data, vals=vals, engine="vector")

    def match_replace8(self, dst, data, vals, imm: float) -> None:
        """dst = data with the first occurrence of each of the 8 vals replaced by imm (ops/top8.py)."""
        self._emit(ops.MatchReplace8Op, dst=dst, data=data, vals=vals, imm=imm, engine="vector")

    def tensor_tensor_scan(
        self,
        dst,
        data0,
        data1,
        initial,
        op0: str = "multiply",
        op1: str = "add",
        reverse0: bool = False,
        reverse1: bool = False,
    ) -> None:
        """dst[p, i] = op1(op0(data0[p, i], dst[p, i-1]), data1[p, i]) from ``initial`` (an fp32
        number or (P, 1) column) over the free elements in access order (ops/scan.py)."""
        self._emit(
            ops.TensorTensorScanOp,
            dst=dst,
            data0=data0,
            data1=data1,
            initial=initial,
            op0=op0,
            op1=op1,
            reverse0=reverse0,
            reverse1=reverse1,
            engine="vector",
        )

    def stream_shuffle(self, dst, src, mask) -> None:
        """dst[32q + i] = src[32q + mask[i]] in every quadrant q of 32 partitions (ops/shuffle.py)."""
        self._emit(ops.StreamShuffleOp, dst=dst, src=src, mask=tuple(mask), engine="vector")

    def bn_stats(self, dst, data) -> None:
        """dst[p, 0:6] = count, mean, variance * count of data's even then odd elements of
        partition p (ops/bn.py)."""
        self._emit(ops.BnStatsOp, dst=dst, data=data, engine="vector")

    def bn_aggr(self, dst, data) -> None:
        """dst[p, 0:2] = mean, variance of the elements data's bn_stats triples describe (ops/bn.py)."""
        self._emit(ops.BnAggrOp, dst=dst, data=data, engine="vector")

    def select(self, dst, predicate, on_true, on_false, reverse_pred: bool = False, reduce_res=None) -> None:
        """dst = on_true where predicate != 0 (== 0 with ``reverse_pred``) else on_false (an fp32
        number or a (P, 1) column access); ``reduce_res``: also each partition's max of dst's
        values into that (P, 1) float column."""
        self._emit(
            ops.SelectOp,
            dst=dst,
            predicate=predicate,
            on_true=on_true,
            on_false=on_false,
            reverse_pred=reverse_pred,
            reduce_res=reduce_res,
            engine="vector",
        )

    def affine_select(
        self,
        dst,
        pattern,
        channel_multiplier: int,
        on_true_tile,
        on_false_value: float,
        cmp_op: str = "equal",
        offset=0,
    ) -> None:
        """dst = on_true_tile where cmp_op(affine value, 0) else on_false_value (GpSimd)."""
        self._emit(
            ops.AffineSelectOp,
            dst=dst,
            on_true_tile=on_true_tile,
            pattern=_pattern(pattern),
            channel_multiplier=channel_multiplier,
            offset=Affine.of(offset),
            cmp_op=cmp_op,
            on_false_value=on_false_value,
            engine="gpsimd",
        )

    # ---- control -------------------------------------------------------------------------------
    @contextmanager
    def fori_loop(self, lower: int, upper: int, step: int = 1, name: str | None = None) -> Iterator[Value]:
        """``with b.fori_loop(0, n) as i:`` appends an on-device loop; ops go into its body."""
        depth = len(self._blocks) - 1
        hint = name or _INDEX_NAMES[depth % len(_INDEX_NAMES)]
        body = Block([INDEX], [hint])
        op = ops.ForiLoopOp([], {"lower": lower, "upper": upper, "step": step}, [], [Region([body])])
        self._append(op)
        i = op.index
        i._builder = self
        self._blocks.append(body)
        try:
            yield i
        finally:
            self._blocks.pop()

    # ---- Python operators on Values --------------------------------------------------------------
    def value_operator(self, name: str, a: Any, b: Any = None):
        """Loop-index arithmetic (+, -, *, unary -) producing Affine expressions."""
        for x in (a, b):
            if isinstance(x, Value) and not is_index(x):
                raise BuildError(
                    f"Python operator {name!r} on {x!r}: NKI tensors have no "
                    "operators; use the Builder's compute methods"
                )
        if name == "neg":
            return -Affine.of(a)
        if name == "add":
            return Affine.of(a) + Affine.of(b)
        if name == "sub":
            return Affine.of(a) - Affine.of(b)
        if name == "mul":
            if isinstance(a, (Value, Affine)) and isinstance(b, (Value, Affine)):
                raise BuildError("loop-index expressions must stay affine: index * index")
            return Affine.of(a) * b if isinstance(b, (int, np.integer)) else Affine.of(b) * a
        raise BuildError(f"loop indices support + - * only, not {name!r}")

    def value_getitem(self, v: Value, key) -> Access:
        """``t[...]``: an Access with one DimSlice per dim (no dims dropped, no clamping)."""
        if is_index(v) or not isinstance(v.type, (TileType, HbmType)):
            raise BuildError(f"{v!r} cannot be indexed")
        shape = v.type.shape
        key = key if isinstance(key, tuple) else (key,)
        if sum(k is Ellipsis for k in key) > 1:
            raise BuildError("an access can have a single '...'")
        if Ellipsis in key:
            i = key.index(Ellipsis)
            key = key[:i] + (slice(None),) * (len(shape) - len(key) + 1) + key[i + 1 :]
        if len(key) > len(shape):
            raise BuildError(f"{len(key)} indices for a rank-{len(shape)} tensor {v.type}")
        key = key + (slice(None),) * (len(shape) - len(key))
        return Access(v, tuple(_dim(k, n) for k, n in zip(key, shape)))


def _pattern(pattern) -> tuple[tuple[int, int], ...]:
    return tuple(tuple(int(x) for x in pair) for pair in pattern)


def _dim(k, n: int) -> DimSlice:
    if isinstance(k, DimSlice):
        return k
    if isinstance(k, slice):
        step = 1 if k.step is None else k.step
        if not isinstance(step, (int, np.integer)) or step <= 0:
            raise BuildError(f"slice step must be a positive integer, got {step!r}")
        start = Affine.of(0 if k.start is None else k.start)
        stop = Affine.of(n if k.stop is None else k.stop)
        for b in (start, stop):
            if b.is_const and b.const < 0:
                raise BuildError(f"negative slice bound {b.const}: NKI accesses do not wrap")
        span = stop.minus(start)
        if span is None:
            raise BuildError("slice bounds must differ by a constant (e.g. i*128 : i*128 + 128)")
        if span <= 0:
            raise BuildError(f"empty slice ({span} elements)")
        return DimSlice(start, -(-span // int(step)), int(step))
    if isinstance(k, (int, np.integer)) and not isinstance(k, bool) and k < 0:
        raise BuildError(f"negative index {k}: NKI accesses do not wrap")
    return DimSlice(Affine.of(k), 1)
