"""Per-op hardware legality rules of the NKI verifier (memory spaces, engines, dtypes, shapes).

Each rule is ``fn(ctx, op)`` registered with ``@rule(OpClass)``; it raises through
``ctx.fail(op, message)``. Program-wide rules (capacity, lifetimes, bounds) live in verify.py.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import ops
from .ops.alu import BITVEC_OPS, op_kind
from .pairing import PAIRED_SINGLE_INPUT, pairing_error
from .types import Access, MemorySpace

SBUF, PSUM, HBM = MemorySpace.SBUF, MemorySpace.PSUM, MemorySpace.HBM
OP_RULES: dict[type, Callable] = {}


def rule(*classes):
    """Register a per-op legality rule."""

    def register(fn):
        for c in classes:
            OP_RULES[c] = fn
        return fn

    return register


def _n(x: int) -> str:
    return f"{x:,}"


def _pf(a: Access) -> tuple[int, int]:
    return a.partitions, a.free_size


def _same_pf(ctx, op, name_a: str, name_b: str) -> None:
    a, b = op.access(name_a), op.access(name_b)
    if _pf(a) != _pf(b):
        raise ctx.fail(
            op,
            f"{name_a} has {_n(a.partitions)} partitions x {_n(a.free_size)} "
            f"elements but {name_b} has {_n(b.partitions)} x {_n(b.free_size)}",
        )
    if a.dims[0].offset != b.dims[0].offset:
        raise ctx.fail(
            op,
            f"{name_a} and {name_b} start at different partitions (engines keep each lane on its partition)",
        )


def _same_access_shape(ctx, op, name: str, ref: str = "dst") -> None:
    """A full-tile input of a multi-operand instruction pairs element by element with ``ref``:
    its access shape must equal ``ref``'s, dim by dim (stricter than the documented "same
    partitions and elements per partition": a permuted or re-ranked shape, 43x1x3 against
    43x3x1, is refused). The documented broadcast forms — an fp32 scalar or a (P, 1) column —
    are separate operands with rules of their own (``_column``); a stride-0 broadcast access
    still has the full shape."""
    _same_pf(ctx, op, ref, name)
    a, r = op.access(name), op.access(ref)
    if a.shape != r.shape:
        raise ctx.fail(
            op,
            f"{name} access shape {list(a.shape)} differs from {ref} access shape {list(r.shape)} "
            "(operands pair element by element: equal shapes, no permuted or re-ranked dims; "
            "the only broadcasts are a scalar or a (P, 1) column where documented)",
        )


def _paired_data(ctx, op) -> None:
    """The data operand of activation / tensor_copy / tensor_scalar pairs with dst
    (pairing.py: same partitions, same free dims size-1 dims aside)."""
    name = PAIRED_SINGLE_INPUT[op.name]
    _same_pf(ctx, op, "dst", name)
    msg = pairing_error(op.name, name, op.access(name).shape, op.access("dst").shape)
    if msg:
        raise ctx.fail(op, msg)


def _column(ctx, op, name: str, like: str, dtypes=None) -> None:
    """``name`` must be a (P, 1) access on the partitions of ``like``."""
    a, ref = op.access(name), op.access(like)
    if a is None:
        return
    if a.partitions != ref.partitions or a.free_size != 1:
        raise ctx.fail(
            op,
            f"{name} must be a ({ref.partitions}, 1) per-partition column, got "
            f"{a.partitions} partitions x {a.free_size} elements",
        )
    if a.dims[0].offset != ref.dims[0].offset:
        raise ctx.fail(op, f"{name} must start at the same partition as {like}")
    if dtypes is not None and a.dtype.name not in dtypes:
        raise ctx.fail(op, f"{name} must be {'/'.join(sorted(dtypes))}, got {a.dtype}")


def _fp32_immediate(ctx, op, name: str, value) -> None:
    """A documented "fp32 scalar": a Python float that float32 holds exactly (inf / NaN too)."""
    with np.errstate(over="ignore"):
        exact = isinstance(value, float) and (value != value or float(np.float32(value)) == value)
    if not exact:
        raise ctx.fail(op, f"{name} must be an fp32 number, got {value!r} (not exactly a float32)")


def _alu_on_target(ctx, op, alu: str) -> None:
    if alu not in ctx.target.alu_ops:
        raise ctx.fail(
            op,
            f"ALU operator {alu} is not available on {ctx.target.name} (abs_max / abs_min are "
            "NeuronCore-v4 only, NKI 0.4 release notes)",
        )


def _spaces(ctx, op, name: str, allowed) -> None:
    a = op.access(name)
    if a is not None and a.space not in allowed:
        legal = " or ".join(s.value.upper() for s in allowed)
        raise ctx.fail(op, f"{name} is in {a.space.value.upper()}; {op.name} needs {legal}")


def check_compute_common(ctx, op) -> None:
    """Engine, engine dtypes, on-chip operands, partition rules and dst shape for compute ops."""
    eng = op.engine
    if eng not in op.engines:
        raise ctx.fail(op, f"{op.name} cannot run on the {eng} engine (legal: {', '.join(op.engines)})")
    legal = ctx.target.dtypes_of(eng)
    for name, _ in op.access_attrs():
        a = op.access(name)
        if a.space is HBM:
            raise ctx.fail(op, f"{name} is in HBM; compute engines only read SBUF/PSUM (use dma_copy)")
        if eng == "gpsimd" and a.space is PSUM:
            raise ctx.fail(op, f"{name} is in PSUM; the GpSimd engine cannot access PSUM")
        if a.dtype.name not in legal:
            raise ctx.fail(op, f"{name} dtype {a.dtype} is not supported by the {eng} engine")
        ctx.check_partition_start(op, name, a)
    for name in op.writes:
        if op.access(name) is not None:
            ctx.check_injective(op, name)


@rule(ops.DmaCopyOp)
def _dma(ctx, op) -> None:
    dst, src = op.access("dst"), op.access("src")
    for name, a in (("dst", dst), ("src", src)):
        if a.space is PSUM:
            raise ctx.fail(
                op, f"dma_copy {name} is in PSUM; DMA cannot touch PSUM (tensor_copy PSUM -> SBUF first)"
            )
    if dst.size != src.size:
        raise ctx.fail(
            op, f"dma_copy moves {_n(src.size)} elements from src into a dst window of {_n(dst.size)}"
        )
    ctx.check_injective(op, "dst")


@rule(ops.TensorCopyOp)
def _copy(ctx, op) -> None:
    check_compute_common(ctx, op)
    _paired_data(ctx, op)


@rule(ops.MemsetOp)
def _memset(ctx, op) -> None:
    check_compute_common(ctx, op)
    dt, v = op.access("dst").dtype, op.attrs["value"]
    if dt.is_int or dt.is_bool:
        lo, hi = (0, 1) if dt.is_bool else (np.iinfo(dt.np_dtype).min, np.iinfo(dt.np_dtype).max)
        if isinstance(v, float) or not lo <= int(v) <= hi:
            raise ctx.fail(op, f"memset value {v!r} is not a {dt} integer in [{lo}, {hi}]")


def _pattern_size(ctx, op) -> None:
    pattern, dst = op.attrs["pattern"], op.access("dst")
    if len(pattern) > ctx.target.max_free_dims:
        raise ctx.fail(op, f"pattern has {len(pattern)} dims > {ctx.target.max_free_dims}")
    n = 1
    for _, num in pattern:
        n *= num
    if n != dst.free_size:
        raise ctx.fail(op, f"pattern covers {_n(n)} elements per partition but dst has {_n(dst.free_size)}")


@rule(ops.IotaOp)
def _iota(ctx, op) -> None:
    check_compute_common(ctx, op)
    _pattern_size(ctx, op)


@rule(ops.AffineSelectOp)
def _affine_select(ctx, op) -> None:
    check_compute_common(ctx, op)
    _same_pf(ctx, op, "dst", "on_true_tile")
    _pattern_size(ctx, op)
    _fp32_immediate(ctx, op, "on_false_value", op.attrs["on_false_value"])


@rule(ops.MatmulOp)
def _matmul(ctx, op) -> None:
    check_compute_common(ctx, op)
    t = ctx.target
    _spaces(ctx, op, "dst", (PSUM,))
    _spaces(ctx, op, "stationary", (SBUF,))
    _spaces(ctx, op, "moving", (SBUF,))
    dst, st, mv = op.access("dst"), op.access("stationary"), op.access("moving")
    # NKI 0.6 documents 2-D [K, M] / [K, N] / [M, N] operands only (nki.isa.nc_matmul page):
    # more free dims are accepted when they collapse into one run (emitted as a 2-D .ap pattern)
    for name, a in (("stationary", st), ("moving", mv), ("dst", dst)):
        if len(a.free_pattern()) > 1:
            raise ctx.fail(
                op,
                f"nc_matmul {name} free dims {list(a.shape[1:])} do not collapse "
                "into one contiguous run (operands are documented as 2-D only)",
            )
    k, m = _pf(st)
    k2, n = _pf(mv)
    if k != k2:
        raise ctx.fail(op, f"contraction mismatch: stationary has {k} partitions, moving {k2}")
    if k > t.gemm_contraction_max:
        raise ctx.fail(op, f"contraction K = {k} > {t.gemm_contraction_max} partitions")
    if m > t.gemm_stationary_fmax:
        raise ctx.fail(op, f"stationary free size M = {_n(m)} > {t.gemm_stationary_fmax}")
    if n > t.gemm_moving_fmax:
        raise ctx.fail(op, f"moving free size N = {_n(n)} > {t.gemm_moving_fmax}")
    if _pf(dst) != (m, n):
        raise ctx.fail(
            op, f"dst is {dst.partitions} x {_n(dst.free_size)} but stationary^T @ moving is {m} x {_n(n)}"
        )
    if dst.dtype.name not in t.matmul_dst_dtypes:
        raise ctx.fail(
            op, f"nc_matmul dst must be {'/'.join(sorted(t.matmul_dst_dtypes))} in PSUM, got {dst.dtype}"
        )
    fp32 = t.matmul_fp32_class
    if (st.dtype.name in fp32) != (mv.dtype.name in fp32):
        raise ctx.fail(op, f"stationary {st.dtype} and moving {mv.dtype}: fp32/tf32 pair only with fp32/tf32")


@rule(ops.TransposeOp)
def _transpose(ctx, op) -> None:
    check_compute_common(ctx, op)
    t = ctx.target
    dst, src = op.access("dst"), op.access("data")
    if op.engine == "tensor":
        _spaces(ctx, op, "data", (SBUF,))
        _spaces(ctx, op, "dst", (PSUM,))
        limit = t.pe_transpose_max
        if src.dtype.itemsize == 1:
            raise ctx.fail(op, "fp8/8-bit Tensor-engine transposes (16-bit PSUM output) are not modelled")
    else:
        limit = t.vector_transpose_max
    p, f = _pf(src)
    if p > limit or f > limit:
        raise ctx.fail(op, f"{op.engine} transpose input {p} x {_n(f)} exceeds {limit} x {limit}")
    if _pf(dst) != (f, p):
        raise ctx.fail(
            op, f"dst is {dst.partitions} x {_n(dst.free_size)}, transpose of {p} x {f} is {f} x {p}"
        )
    if dst.dtype is not src.dtype:
        raise ctx.fail(op, f"transpose keeps the dtype: data {src.dtype}, dst {dst.dtype}")


@rule(ops.ActivationOp)
def _activation(ctx, op) -> None:
    check_compute_common(ctx, op)
    _paired_data(ctx, op)
    _column(ctx, op, "bias", "data", {"f32"})
    _column(ctx, op, "scale", "data", {"f32"})
    if op.access("scale") is None:
        _fp32_immediate(ctx, op, "scale", op.attrs["scale"])
    _column(ctx, op, "reduce_res", "data")
    r = op.access("reduce_res")
    if r is not None and not r.dtype.is_float:
        raise ctx.fail(op, f"reduce_res must be a float tile, got {r.dtype}")


def _check_bitvec(ctx, op, alu: str, names) -> None:
    for name in names:
        a = op.access(name)
        if a is not None and not a.dtype.is_int:
            raise ctx.fail(op, f"bitwise op {alu} needs integer operands; {name} is {a.dtype}")


@rule(ops.TensorTensorOp)
def _tensor_tensor(ctx, op) -> None:
    check_compute_common(ctx, op)
    _same_access_shape(ctx, op, "data1")
    _same_access_shape(ctx, op, "data2")
    if op.access("data1").space is PSUM and op.access("data2").space is PSUM:
        raise ctx.fail(op, "data1 and data2 are both in PSUM; at most one input may be")
    alu = op.attrs["op"]
    _alu_on_target(ctx, op, alu)
    if alu in BITVEC_OPS:
        _check_bitvec(ctx, op, alu, ("dst", "data1", "data2"))
    if alu == "power" and op.engine != "gpsimd":
        raise ctx.fail(op, "power runs on the gpsimd engine only")


@rule(ops.TensorScalarOp)
def _tensor_scalar(ctx, op) -> None:
    if op.engine == "gpsimd":
        # nki.isa.tensor_scalar (NKI 0.6): GpSimd is "only allowed for rsqrt", which this
        # dialect's ALU operators do not include
        raise ctx.fail(
            op, "tensor_scalar on the gpsimd engine is documented only for rsqrt; use vector (or scalar)"
        )
    check_compute_common(ctx, op)
    _paired_data(ctx, op)
    chain = [op.attrs["op0"]] + ([op.attrs["op1"]] if op.attrs["op1"] else [])
    kinds = {op_kind(a) == "bitvec" for a in chain}
    if len(kinds) > 1:
        raise ctx.fail(op, f"ops {chain} mix bitwise and arithmetic operators")
    for i, alu in enumerate(chain):
        name = f"operand{i}"
        _alu_on_target(ctx, op, alu)
        val = op.attrs[name]
        if alu not in BITVEC_OPS:  # arithmetic operands are fp32 scalars or fp32 (P, 1) columns
            _column(ctx, op, name, "data", {"f32"})
            if op.access(name) is None:
                _fp32_immediate(ctx, op, name, val)
        else:
            _column(ctx, op, name, "data")
        if alu in BITVEC_OPS:
            if op.engine != "vector":
                raise ctx.fail(op, f"bitwise tensor_scalar ({alu}) runs on the vector engine only")
            _check_bitvec(ctx, op, alu, ("dst", "data", name))
            if isinstance(val, float):
                raise ctx.fail(op, f"{name} of bitwise op {alu} must be an integer, got {val!r}")
    if op.engine == "scalar":
        if (
            tuple(chain) not in ctx.target.scalar_tensor_scalar_ops
            or op.attrs["reverse0"]
            or op.attrs["reverse1"]
        ):
            legal = ", ".join(str(list(c)) for c in ctx.target.scalar_tensor_scalar_ops)
            raise ctx.fail(
                op, f"the scalar engine's tensor_scalar supports only {legal} (unreversed), got {chain}"
            )


@rule(ops.TensorReduceOp)
def _tensor_reduce(ctx, op) -> None:
    check_compute_common(ctx, op)
    src, dst = op.access("data"), op.access("dst")
    axes, rank = op.attrs["axis"], len(src.dims)
    want = tuple(range(rank - len(axes), rank))
    if not axes or tuple(sorted(axes)) != want or 0 in axes:
        raise ctx.fail(
            op,
            f"tensor_reduce axis {list(axes)} must be trailing free axes of the "
            f"rank-{rank} data, e.g. {list(range(1, rank))[-1:]}",
        )
    kept = 1
    for d in src.dims[1 : rank - len(axes)]:
        kept *= d.size
    if _pf(dst) != (src.partitions, kept):
        raise ctx.fail(
            op,
            f"dst is {dst.partitions} x {_n(dst.free_size)} but the reduction "
            f"gives {src.partitions} x {_n(kept)}",
        )
    if dst.dims[0].offset != src.dims[0].offset:
        raise ctx.fail(op, "dst and data start at different partitions")
    alu = op.attrs["op"]
    if alu in BITVEC_OPS:
        _check_bitvec(ctx, op, alu, ("dst", "data"))
        if op.attrs["negate"]:
            raise ctx.fail(op, f"negate applies to arithmetic reductions only, not bitwise {alu}")


# nisa.select_reduce, NKI 0.6 (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.32.0/nki/api/
# generated/nki.isa.select_reduce.html): predicate int8/uint8/int16/uint16; on_true any dtype but
# tfloat32/int32/uint32; on_false an fp32 scalar or an (on_true.shape[0], 1) vector; on_true and
# predicate not both in PSUM; on_true, predicate and dst the same partitions x elements;
# reduce_res a (P, 1) vector of a float dtype (reduce_op max only).
SELECT_PREDICATE_DTYPES = frozenset({"i8", "u8", "i16", "u16"})
SELECT_ON_TRUE_EXCLUDED = frozenset({"tf32", "i32", "u32"})


@rule(ops.SelectOp)
def _select(ctx, op) -> None:
    check_compute_common(ctx, op)
    _same_access_shape(ctx, op, "predicate")
    _same_access_shape(ctx, op, "on_true")
    pred, on_true = op.access("predicate"), op.access("on_true")
    if pred.dtype.name not in SELECT_PREDICATE_DTYPES:
        raise ctx.fail(op, f"select_reduce predicate must be int8/uint8/int16/uint16, got {pred.dtype}")
    if on_true.dtype.name in SELECT_ON_TRUE_EXCLUDED:
        raise ctx.fail(
            op, f"select_reduce on_true may not be {on_true.dtype} (tfloat32, int32 and uint32 are excluded)"
        )
    if pred.space is PSUM and on_true.space is PSUM:
        raise ctx.fail(op, "predicate and on_true are both in PSUM; at most one may be")
    if op.access("on_false") is not None:
        _column(ctx, op, "on_false", "on_true")
    else:
        v = op.attrs["on_false"]
        with np.errstate(over="ignore"):
            exact = isinstance(v, float) and (v != v or float(np.float32(v)) == v)
        if not exact:
            raise ctx.fail(op, f"select_reduce scalar on_false must be an fp32 number, got {v!r}")
    _column(ctx, op, "reduce_res", "on_true")
    r = op.access("reduce_res")
    if r is not None and not r.dtype.is_float:
        raise ctx.fail(op, f"select_reduce reduce_res must be a float tile, got {r.dtype}")


__all__ = ["OP_RULES", "rule", "check_compute_common"]


from . import verify_bn, verify_dma_transpose, verify_indirect, verify_scan, verify_shuffle, verify_top8  # noqa: E402, F401  (the DMA transpose's, indirect DMAs', scan, shuffle, top-8 and bn_stats / bn_aggr rules)
