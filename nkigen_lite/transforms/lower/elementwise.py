"""Elementwise ops of a fusion group on tiles: activations (with folded scale / bias / row sum),
binary ALU ops (tensor_tensor / tensor_scalar, engine-balanced, NumPy wrap-around for narrow
integers), unary forms without an activation function, casts and where."""

from __future__ import annotations

import numpy as np

from ...ir.errors import BuildError
from ...ir.op import Op
from ...ir.value import Value
from ...nki.types import Access, DimSlice
from ...tensor import ops as T
from ..float_integral import is_integral
from ..int_range import exact_range, int_range
from .fold import ActSpec
from .frame import TileFrame, immediate_of
from .int_narrow import keep_low_bits, needs_narrow_wrap, wrapping_cast
from .rules import tile_rule
from .select import select_into
from .tile_common import ALU, FLOAT_EXACT_LIMIT, Imm, arg, default_engine, fp32_column, scratch
from .wide_int_arith import leaves_int32, needs_wrap, wrapping_binary


def activation(em: TileFrame, op: Op, inst) -> None:
    spec: ActSpec = em.fold.act[op]
    v = op.result
    ve = em.ext(v)
    if spec.inplace:  # the result is read by nothing: written over its data's tile
        em.tiles[v] = em.tiles[spec.data]
        if spec.data in em.tile_offsets:
            em.tile_offsets[v] = em.tile_offsets[spec.data]
    else:
        em.new_tile(v, inst)
    data = em.access(spec.data, inst, ve)
    scale = spec.scale if not isinstance(spec.scale, Value) else fp32_column(em, spec.scale, inst)
    bias = None
    if isinstance(spec.bias, Value):
        bias = em.access(spec.bias, inst)
        if spec.bias_negate:
            t = em.scratch_tile(spec.bias, inst, "f32")
            neg = em.tile_access(t, inst, em.ext(spec.bias))
            em.b.tensor_scalar(dst=neg, data=bias, op0="multiply", operand0=-1.0)
            bias = neg
        else:
            bias = fp32_column(em, spec.bias, inst)
    elif spec.bias is not None:
        bias = em.const_column(-spec.bias if spec.bias_negate else spec.bias, inst)
    red = None
    if spec.reduce is not None:
        em.new_tile(spec.reduce, inst)
        red = em.access(spec.reduce, inst)
    em.note("scalar", data.free_size)
    em.b.activation(dst=em.access(v, inst), op=spec.func, data=data, bias=bias, scale=scale, reduce_res=red)


WRAPPING = ("add", "subtract", "multiply", "power")
FP32_EXACT = 2**24  # fp32 holds every integer of magnitude at most this
_GPSIMD_OK = ("add", "subtract", "multiply", "maximum", "minimum")  # float ops both engines run


def _wrap_into(em: TileFrame, v: Value, inst, emit) -> None:
    """Integer results narrower than 32 bits wrap around in NumPy but saturate on an engine
    write: compute into an int32 scratch with ``emit(dst)``, then keep its low bits in v's tile
    (int_narrow.keep_low_bits)."""
    wide = scratch(em, v, inst, "i32")
    emit(wide)
    keep_low_bits(em, v, inst, wide, em.access(v, inst))


def const_tile(em: TileFrame, v: Value, inst, value, engine=None) -> Access:
    """A scratch tile of v's extent holding ``value`` (int32 / uint32 for integers, else fp32):
    the second operand of a GpSimd tensor_tensor, since NKI 0.6 documents GpSimd tensor_scalar
    only for rsqrt (nki.isa.tensor_scalar page)."""
    if isinstance(value, float) and not value.is_integer():
        t = scratch(em, v, inst, "f32")
        em.b.memset(dst=t, value=value)
        return t
    value = int(value)
    t = scratch(em, v, inst, "i32" if -(2**31) <= value < 2**31 else "u32")
    if engine is None:
        em.b.memset(dst=t, value=value)
    else:
        em.note(engine, t.free_size)
        em.b.memset(dst=t, value=value, engine=engine)
    return t


def broadcast_column(col: Access, like: Access) -> Access:
    """A (P, 1) column read once per element of ``like``'s free dims (stride 0 on every free
    dim): a tensor_tensor operand with exactly ``like``'s shape, pairing the column with every
    element of each partition."""
    if len(col.dims) < 2 or any(d.size != 1 for d in col.dims[1:]):
        raise BuildError(f"lowering: broadcast_column needs a (P, 1) column, got shape {col.shape}")
    free = like.dims[1:]
    if len(col.dims) == len(like.dims):
        dims = tuple(DimSlice(c.offset, d.size, 0) for c, d in zip(col.dims[1:], free))
    else:  # ranks differ: the column's last dim read like.free_size times
        dims = col.dims[1:-1] + (DimSlice(col.dims[-1].offset, like.free_size, 0),)
    return Access(col.tensor, col.dims[:1] + dims)


def _int_op(
    em: TileFrame, v: Value, inst, dst: Access, data: Access, alu: str, value, rev=False, fill=None
) -> None:
    """dst = data alu value (value alu data with ``rev``) exactly on GpSimd: a tensor_tensor with
    a constant tile (value a number; memset by ``fill``, default VectorE) or a broadcast column
    (value a (P, 1) access)."""
    key = ("bits", value, v.type.dtype.name, tuple(em.ext(v)))
    held = None if isinstance(value, Access) else em.const_tiles.get(key)
    if isinstance(value, Access):
        other = broadcast_column(value, data)
    elif fill is not None and held is not None:  # filled once for the group (fold.bit_consts)
        other = em.tile_access(held, inst, em.ext(v))
    else:
        other = const_tile(em, v, inst, value, fill)
    a, b = (other, data) if rev else (data, other)
    em.note("gpsimd", 2 * dst.free_size)
    em.b.tensor_tensor(dst=dst, data1=a, data2=b, op=alu, engine="gpsimd")


def _widen_bool(em: TileFrame, u: Value, x, inst, dtype):
    if isinstance(x, Imm) or not u.type.dtype.is_bool:
        return x
    t = em.tile_access(em.scratch_tile(u, inst, dtype), inst, em.ext(u))
    em.b.tensor_copy(dst=t, src=em.access(u, inst))
    return Access(
        t.tensor,
        t.dims[:1]
        + tuple(
            DimSlice(d.offset, n, 0 if (d.size == 1 and n > 1) else d.stride)
            for d, n in zip(t.dims[1:], (x.dims[k + 1].size for k in range(len(t.dims) - 1)))
        ),
    )


def _narrow_int(v: Value) -> bool:
    return v.type.dtype.is_int and v.type.dtype.itemsize < 4


def centred_multiply(em: TileFrame, op: Op, inst) -> None:
    """``(data - mean) * factor`` of a centred value (centred.py): one VectorE tensor_scalar, or
    on ScalarE when the balance picks it: ``activation(copy, data·factor + (-mean·factor))``,
    the bias column made by one-op ScalarE tensor_scalars on the (P, 1) columns."""
    cm = em.fold.centred[op]
    v = op.result
    data = em.access(cm.data, inst, em.ext(v))
    mean = fp32_column(em, cm.mean, inst)
    factor = cm.factor if not isinstance(cm.factor, Value) else fp32_column(em, cm.factor, inst)
    em.new_tile(v, inst)
    if em.pick_engine(("vector", "scalar"), data.free_size) == "scalar":
        t = em.scratch_tile(cm.mean, inst, "f32")
        bias = em.tile_access(t, inst, em.ext(cm.mean))
        if isinstance(factor, float):
            em.b.tensor_scalar(dst=bias, data=mean, op0="multiply", operand0=-factor, engine="scalar")
        else:  # one-op forms ScalarE runs too, so the chain may stay on one engine
            neg = em.tile_access(em.scratch_tile(cm.mean, inst, "f32"), inst, em.ext(cm.mean))
            em.b.tensor_scalar(dst=neg, data=mean, op0="multiply", operand0=-1.0, engine="scalar")
            em.b.tensor_scalar(dst=bias, data=neg, op0="multiply", operand0=factor, engine="scalar")
        em.b.activation(dst=em.access(v, inst), op="copy", data=data, bias=bias, scale=factor)
        return
    em.b.tensor_scalar(
        dst=em.access(v, inst), data=data, op0="subtract", operand0=mean, op1="multiply", operand1=factor
    )


@tile_rule(T.BinaryOp)
def binary(em: TileFrame, op: Op, inst) -> None:
    if op in em.fold.centred:
        return centred_multiply(em, op, inst)
    v = op.result
    ve = em.ext(v)
    alu = ALU.get(type(op))
    if alu is None:
        raise BuildError(f"lowering: no NKI rule for {op.name} (the decompose pass rewrites it)")
    if alu.startswith("bitwise") and all(u.type.dtype.is_bool for u in op.operands):
        alu = alu.replace("bitwise", "logical")  # on bools the bitwise ops are the logical ones
    a, b = (arg(em, u, inst, ve) for u in op.operands)
    if (alu.startswith("bitwise") or alu in _GPSIMD_OK) and v.type.dtype.is_int:
        # the bitvector ALU takes integers only, and GpSimd computes exactly only when every
        # tile is an integer (a bool is a uint8 byte): widen bool operands to the result dtype
        a, b = (_widen_bool(em, u, x, inst, v.type.dtype) for u, x in zip(op.operands, (a, b)))
    em.new_tile(v, inst)
    if needs_wrap(op) and not (isinstance(a, Imm) and isinstance(b, Imm)):
        return wrapping_binary(em, op, inst, a, b, em.access(v, inst))
    if _narrow_int(v) and alu in WRAPPING:
        if leaves_int32(op):  # uint16 products: the int32 scratch holds them mod 2**32
            return _wrap_into(em, v, inst, lambda d: wrapping_binary(em, op, inst, a, b, d))
        return _wrap_into(em, v, inst, lambda d: _binary_into(em, op, inst, alu, a, b, d))
    _binary_into(em, op, inst, alu, a, b, em.access(v, inst))


def _binary_into(em: TileFrame, op: Op, inst, alu: str, a, b, dst) -> None:
    v = op.result
    eng = default_engine(op, alu)
    if isinstance(a, Imm) and isinstance(b, Imm):
        val = op.ufunc(np.array(a.value), np.array(b.value))
        em.b.memset(dst=dst, value=v.type.dtype.python_value(val))
        return
    out_pp = em.per_partition(v)
    if isinstance(b, Imm) or (
        not isinstance(a, Imm)
        and not out_pp
        and em.per_partition(op.operand(1))
        and not em.per_partition(op.operand(0))
    ):
        data, operand, rev = a, b, False
    elif isinstance(a, Imm) or (
        not out_pp and em.per_partition(op.operand(0)) and not em.per_partition(op.operand(1))
    ):
        data, operand, rev = b, a, True
    else:
        movable = (
            eng == "vector"
            and alu in _GPSIMD_OK
            and all(x.tensor.type.space.value == "sbuf" for x in (dst, a, b))
            and v.type.dtype.is_float
        )
        if movable:
            eng = em.pick_engine(("vector", "gpsimd"), 2 * dst.free_size)
        else:
            em.note(eng, 2 * dst.free_size)
        em.b.tensor_tensor(dst=dst, data1=a, data2=b, op=alu, engine=eng)
        return
    scalar_side = op.operand(0) if rev else op.operand(1)
    if rev and alu in ("add", "multiply", "maximum", "minimum", "equal", "not_equal"):
        rev = False  # commutative: the scalar side does not matter
    if eng == "vector" and isinstance(operand, Imm) and _bits_on_gpsimd(em, op, alu, dst):
        eng = "gpsimd"
    int_in_f32 = eng == "gpsimd" and isinstance(operand, Imm) and _exact_in_fp32(op, alu)
    if int_in_f32:  # every value within 2**24: VectorE / ScalarE compute it exactly in fp32
        eng = "vector"
    if eng == "gpsimd":  # exact integer arithmetic / power: tensor_tensor (see const_tile)
        value = operand.value if isinstance(operand, Imm) else em.access(scalar_side, inst)
        return _int_op(
            em, v, inst, dst, data, alu, value, rev, fill="gpsimd" if alu.startswith("bitwise") else None
        )
    if isinstance(operand, Imm):
        imm = operand.value
        operand = imm if alu.startswith("bitwise") else float(imm)
        if alu == "subtract" and not rev:
            alu, operand = "add", -operand
    else:  # arithmetic (P, 1) operands are fp32 columns (nki.isa.tensor_scalar page)
        bitwise = alu.startswith("bitwise")
        operand = em.access(scalar_side, inst) if bitwise else fp32_column(em, scalar_side, inst)
        if bitwise and scalar_side.type.dtype.is_bool and not v.type.dtype.is_bool:
            # the bitvector ALU takes integers only: the bool column widened to the result dtype
            col = em.tile_access(em.scratch_tile(scalar_side, inst, v.type.dtype), inst, em.ext(scalar_side))
            em.b.tensor_copy(dst=col, src=operand)
            operand = col
    if eng == "vector" and alu in ("multiply", "add") and not rev and (v.type.dtype.is_float or int_in_f32):
        eng = em.pick_engine(("vector", "scalar"), dst.free_size)
    elif alu.startswith("bitwise"):  # VectorE only: counted, so the balance above sees it
        em.note("vector", dst.free_size)
    em.b.tensor_scalar(dst=dst, data=data, op0=alu, operand0=operand, reverse0=rev, engine=eng)


GPSIMD_BITS_MIN = 512
"""Elements per partition from which a bitwise op with a constant may move to GpSimd."""


def _bits_on_gpsimd(em: TileFrame, op: Op, alu: str, dst: Access) -> bool:
    """Whether the 32-bit integer bitwise op with a constant runs on GpSimd (a tensor_tensor
    against a constant tile it fills itself: 150 + N and 150 + 2N cycles at 1.2 GHz) rather than
    VectorE (N cycles at 0.96 GHz, its only engine for bitwise ``tensor_scalar``): when the
    balance's running busy times (frame.py) end sooner that way."""
    n = dst.free_size
    dt = op.result.type.dtype
    if not alu.startswith("bitwise") or not dt.is_int or dt.bits != 32 or n < GPSIMD_BITS_MIN:
        return False
    if not all(u.type.dtype.is_int and u.type.dtype.bits == 32 for u in op.operands):
        return False
    clock = em._clocks()
    k = next((immediate_of(u) for u in op.operands if immediate_of(u) is not None), None)
    fill = 0 if ("bits", k, dt.name, tuple(em.ext(op.result))) in em.const_tiles else 150 + n  # held tile
    vector = em.busy.get("vector", 0.0) + n / clock["vector"]
    gpsimd = em.busy.get("gpsimd", 0.0) + (150 + 2 * n + fill) / clock["gpsimd"]
    return gpsimd < vector  # counted by _int_op and const_tile when emitted


def _exact_in_fp32(op: Op, alu: str) -> bool:
    """Whether the integer add / subtract / multiply ``op`` (one operand a constant) has every
    operand and its exact result within 2**24 (int_range): fp32 arithmetic is then exact, so
    VectorE or ScalarE computes what GpSimd's integer ALU would."""
    if alu not in ("add", "subtract", "multiply") or not op.result.type.dtype.is_int:
        return False
    if not all(u.type.dtype.is_int for u in op.operands):
        return False
    ranges = [int_range(u) for u in op.operands] + [exact_range(op)]
    return all(-FP32_EXACT <= lo and hi <= FP32_EXACT for lo, hi in ranges)


def _floor_like(em: TileFrame, x: Access, v: Value, inst, dst: Access, ceil: bool) -> None:
    """floor / ceil of floats from engine casts: r = rne(x); r -/+ (r >/< x); keep x when
    |x| >= 2**23 (already integral), inf or NaN."""
    ri = scratch(em, v, inst, "i32")
    em.b.tensor_copy(dst=ri, src=x)
    r = scratch(em, v, inst)
    em.b.tensor_copy(dst=r, src=ri)
    fix = scratch(em, v, inst)
    em.b.tensor_tensor(dst=fix, data1=r, data2=x, op="less" if ceil else "greater")
    adj = scratch(em, v, inst)
    em.b.tensor_tensor(dst=adj, data1=r, data2=fix, op="add" if ceil else "subtract")
    mag = scratch(em, v, inst)  # |x| (abs_max is trn3-only): ScalarE abs is exact, inf/NaN kept
    em.b.activation(dst=mag, op="abs", data=x)
    small = scratch(em, v, inst, "u8")
    em.b.tensor_scalar(dst=small, data=mag, op0="less", operand0=FLOAT_EXACT_LIMIT)
    select_into(em, v, inst, dst, small, adj, x)


@tile_rule(T.UnaryOp)
def unary(em: TileFrame, op: Op, inst) -> None:
    v = op.result
    x = em.access(op.operand(0), inst, em.ext(v))
    em.new_tile(v, inst)
    dst = em.access(v, inst)
    in_t = op.operand(0).type.dtype
    b = em.b
    if isinstance(op, (T.FloorOp, T.CeilOp)):
        if in_t.is_float:
            return _floor_like(em, x, v, inst, dst, isinstance(op, T.CeilOp))
        return b.tensor_copy(dst=dst, src=x)
    if isinstance(op, T.LogicalNotOp) or (isinstance(op, T.BitwiseNotOp) and in_t.is_bool):
        return b.tensor_scalar(dst=dst, data=x, op0="equal", operand0=0.0)
    if isinstance(op, T.BitwiseNotOp):
        ones = (1 << in_t.bits) - 1 if not in_t.is_signed else -1
        return b.tensor_scalar(dst=dst, data=x, op0="bitwise_xor", operand0=ones)

    # integer forms of neg / abs / relu / square / sign: exact GpSimd tensor_tensor ops (GpSimd
    # tensor_scalar is documented only for rsqrt; abs_max is trn3-only)
    def neg_into(d):
        _int_op(em, v, inst, d, x, "subtract", 0, rev=True)

    def abs_into(d):
        n = scratch(em, v, inst, "i32")
        neg_into(n)
        b.tensor_tensor(dst=d, data1=x, data2=n, op="maximum", engine="gpsimd")

    def square_into(d):
        b.tensor_tensor(dst=d, data1=x, data2=x, op="multiply", engine="gpsimd")

    if isinstance(op, (T.NegOp, T.AbsOp, T.SquareOp)) and needs_wrap(op):  # 32 bits, NumPy wraps
        neg_into = lambda d: wrapping_binary(em, op, inst, Imm(0), x, d, "subtract")  # noqa: E731
        square_into = lambda d: wrapping_binary(em, op, inst, x, x, d, "multiply")  # noqa: E731
    if isinstance(op, T.SquareOp) and leaves_int32(op):  # uint16: mod 2**32 in the int32 scratch
        square_into = lambda d: wrapping_binary(em, op, inst, x, x, d, "multiply")  # noqa: E731
    if isinstance(op, (T.NegOp, T.AbsOp, T.SquareOp)):
        rule = {T.NegOp: neg_into, T.AbsOp: abs_into, T.SquareOp: square_into}[type(op)]
        return _wrap_into(em, v, inst, rule) if _narrow_int(v) else rule(dst)
    if isinstance(op, T.ReluOp):
        return _int_op(em, v, inst, dst, x, "maximum", 0)
    if isinstance(op, T.SignOp):
        pos = scratch(em, v, inst, v.type.dtype)
        _int_op(em, v, inst, pos, x, "greater", 0)
        neg = scratch(em, v, inst, v.type.dtype)
        _int_op(em, v, inst, neg, x, "less", 0)
        return b.tensor_tensor(dst=dst, data1=pos, data2=neg, op="subtract", engine="gpsimd")
    raise BuildError(
        f"lowering: no NKI rule for {op.name} on {in_t.numpy_name} (the decompose pass rewrites cos)"
    )


@tile_rule(T.CastOp)
def cast(em: TileFrame, op: Op, inst) -> None:
    v = op.result
    if op in em.fold.aliased and v not in em.into:
        em.tiles[v] = em.tiles[op.operand(0)]
        if op.operand(0) in em.tile_offsets:
            em.tile_offsets[v] = em.tile_offsets[op.operand(0)]
        return
    src_t, dst_t = op.operand(0).type.dtype, v.type.dtype
    x = em.access(op.operand(0), inst, em.ext(v))
    em.new_tile(v, inst)
    dst = em.access(v, inst)
    b = em.b
    if dst_t.is_bool:
        return b.tensor_scalar(dst=dst, data=x, op0="not_equal", operand0=0.0)
    if src_t.is_float and dst_t.is_int and not is_integral(op.operand(0)):
        # NumPy truncates toward zero; engines round to nearest: trunc = sign(x) * floor(|x|)
        # (a value known to hold integers, e.g. an integer matmul's limb sums, is copied)
        a = scratch(em, v, inst)
        b.activation(dst=a, op="abs", data=x)
        fl = scratch(em, v, inst)
        _floor_like(em, a, v, inst, fl, ceil=False)
        s = scratch(em, v, inst)
        b.activation(dst=s, op="sign", data=x)
        t = scratch(em, v, inst)
        b.tensor_tensor(dst=t, data1=fl, data2=s, op="multiply")
        return b.tensor_copy(dst=dst, src=t)
    if needs_narrow_wrap(op):
        return wrapping_cast(em, op, inst, x, dst)
    eng = "vector"
    if src_t.is_float and dst_t.is_float:
        eng = em.pick_engine(("vector", "scalar"), dst.free_size)
    b.tensor_copy(dst=dst, src=x, engine=eng)
