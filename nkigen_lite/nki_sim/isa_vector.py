"""Vector/GpSimd ALU instructions: tensor_tensor, tensor_scalar, tensor_reduce, select_reduce.

Arithmetic runs in fp32 and rounds once on write to dst. Bit-vector ops act on the raw bits of
integer operands. tensor_tensor on GpSimd with integer inputs computes exactly (GpSimd has
native int32 lanes), which is why int32 tensor_tensor defaults to GpSimd [ISA] [ARCH-T1].
"""

from __future__ import annotations

import numpy as np

from . import enums as E
from .errors import NkiSimError
from .operands import (
    Instruction,
    begin,
    check_gpsimd_access,
    check_one_psum_input,
    is_scalar,
    pick_engine,
    rows,
    same_free_dims,
    same_shape,
    scalar_or_column,
    tile_arg,
)
from .operators import AluOp, add, maximum, minimum
from .storage import as_fp32, from_bits, round_to, to_bits

_EXACT_INT = ("int32", "uint32")


# ALU operators of NeuronCore-v4 only (NKI 0.4 release notes): not on trn2
V4_ONLY_ALU = frozenset({"abs_max", "abs_min"})


def alu_op(op, where: str, role: str = "op") -> AluOp:
    """Require an ALU operator token that trn2 has."""
    if not isinstance(op, AluOp):
        raise NkiSimError(f"{where}: {role} must be an ALU operator token such as nl.add, got {op!r}")
    if op.name in V4_ONLY_ALU:
        raise NkiSimError(f"{where}: {role} {op!r} is NeuronCore-v4 only, not available on trn2 [RN]")
    return op


def fp32_operand(v, p: int, where: str, role: str):
    """An arithmetic operand: a float scalar (read as float32, as the front end rounds a
    literal) or a float32 (P, 1) tile [ISA]; an int or bool scalar is refused."""
    if is_scalar(v) and not isinstance(v, (float, np.floating)):
        raise NkiSimError(f"{where}: {role} must be a float32 number, got {v!r} [ISA]")
    return scalar_or_column(v, p, where, role, fp32_only=True)


def _require_int(where: str, op: AluOp, **tensors) -> None:
    for role, t in tensors.items():
        if not t.dtype.is_int:
            raise NkiSimError(
                f"{where}: bit-vector op {op!r} needs integer dtypes; {role} is {t.dtype.numpy_name}"
            )


def tensor_tensor(dst, data1, data2, op, engine=E.engine.unknown, name=""):
    """dst = data1 op data2 elementwise (same partitions and elements per partition, no broadcast)."""
    where = "nisa.tensor_tensor"
    run = begin(where, name)
    dst, a, b = (tile_arg(t, where, r) for t, r in ((dst, "dst"), (data1, "data1"), (data2, "data2")))
    op = alu_op(op, where)
    same_shape(where, "dst", dst, data1=a, data2=b)
    ints = any(t.dtype.numpy_name in _EXACT_INT for t in (a, b))
    default = E.engine.gpsimd if not op.is_bitvec and (op.name == "power" or ints) else E.engine.vector
    eng = pick_engine(where, engine, (E.engine.vector, E.engine.gpsimd), default)
    if op.name == "power" and eng is not E.engine.gpsimd:
        raise NkiSimError(f"{where}: nl.power runs on the GpSimd engine only [ISA]")
    check_gpsimd_access(where, eng, dst=dst, data1=a, data2=b)
    check_one_psum_input(where, data1=a, data2=b)
    if op.is_bitvec:
        _require_int(where, op, dst=dst, data1=a, data2=b)
        bits = op.apply(to_bits(a.read(where), a.dtype), to_bits(b.read(where), b.dtype))
        out = from_bits(bits, dst.dtype)
    elif eng is E.engine.gpsimd and a.dtype.is_int and b.dtype.is_int and op.name != "power":
        out = round_to(op.apply(a.read(where).astype(np.int64), b.read(where).astype(np.int64)), dst.dtype)
    else:
        out = round_to(op.apply(as_fp32(a.read(where)), as_fp32(b.read(where))), dst.dtype)
    dst.write(out.reshape(dst.shape), where)
    run.count(eng.name)
    return Instruction(where)


def tensor_scalar(
    dst,
    data,
    op0,
    operand0,
    reverse0=False,
    op1=None,
    operand1=None,
    reverse1=False,
    engine=E.engine.unknown,
    name="",
):
    """dst = (data op0 operand0) op1 operand1; operands are scalars or (P, 1) tiles."""
    where = "nisa.tensor_scalar"
    run = begin(where, name)
    dst = tile_arg(dst, where, "dst")
    data = tile_arg(data, where, "data")
    same_free_dims(where, "dst", dst, data=data)
    steps = [(alu_op(op0, where, "op0"), operand0, reverse0)]
    if op1 is not None:
        steps.append((alu_op(op1, where, "op1"), operand1, reverse1))
    elif operand1 is not None:
        raise NkiSimError(f"{where}: operand1 given without op1")
    bitvec = [op.is_bitvec for op, _, _ in steps]
    if any(bitvec) and not all(bitvec):
        raise NkiSimError(f"{where}: op0 and op1 must both be bit-vector or both arithmetic [ISA]")
    if engine is E.engine.gpsimd:
        raise NkiSimError(f"{where}: on the GpSimd engine tensor_scalar is documented only for rsqrt [ISA]")
    eng = pick_engine(where, engine, (E.engine.vector, E.engine.scalar), E.engine.vector)
    _check_engine_ops(where, eng, [op for op, _, _ in steps], bitvec[0])
    tiles = {f"operand{i}": v for i, (_, v, _) in enumerate(steps) if not is_scalar(v)}
    check_gpsimd_access(where, eng, dst=dst, data=data, **tiles)
    check_one_psum_input(where, data=data, **tiles)
    p = data.shape[0]
    if bitvec[0]:
        _require_int(where, steps[0][0], dst=dst, data=data)
        x = to_bits(data.read(where), data.dtype).reshape(p, -1)
        for i, (op, v, rev) in enumerate(steps):
            s = _bits_operand(v, p, data.dtype, where, f"operand{i}")
            x = op.apply(s, x) if rev else op.apply(x, s)
        out = from_bits(x, dst.dtype)
    else:
        x = rows(data, where, "data")
        for i, (op, v, rev) in enumerate(steps):
            s = fp32_operand(v, p, where, f"operand{i}")
            x = op.apply(s, x) if rev else op.apply(x, s)
            x = np.asarray(x, np.float32)
        out = round_to(x, dst.dtype)
    dst.write(out.reshape(dst.shape), where)
    run.count(eng.name)
    return Instruction(where)


def _check_engine_ops(where: str, eng, ops: list[AluOp], bitvec: bool) -> None:
    if bitvec and eng is not E.engine.vector:
        raise NkiSimError(f"{where}: bit-vector ops run only on the Vector engine [ISA]")
    if eng is E.engine.scalar:
        names = tuple(op.name for op in ops)
        if names not in (("multiply", "add"), ("multiply",), ("add",)):
            raise NkiSimError(
                f"{where}: on the Scalar engine trn2 supports only (multiply, add), (multiply) or "
                f"(add); got {names} [ISA]"
            )


def _bits_operand(v, p: int, dtype, where: str, role: str) -> np.ndarray:
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return np.int64(int(v) & ((1 << dtype.bits) - 1))
    t = tile_arg(v, where, role)
    if t.shape[0] != p or t.free_size != 1 or not t.dtype.is_int:
        raise NkiSimError(f"{where}: {role} must be an int or an integer ({p}, 1) tile")
    return to_bits(t.read(where), t.dtype).reshape(p, 1)


def tensor_reduce(dst, op, data, axis, negate=False, keepdims=False, name=""):
    """Reduce data over trailing free axes with op (Vector engine); negate flips the result's sign."""
    where = "nisa.tensor_reduce"
    run = begin(where, name)
    dst = tile_arg(dst, where, "dst")
    data = tile_arg(data, where, "data")
    op = alu_op(op, where)
    if not op.can_reduce:
        raise NkiSimError(f"{where}: {op!r} is not a reduction operator [SHARED]")
    axes = _trailing_axes(axis, data, where)
    kept = data.shape[: data.ndim - len(axes)]
    if dst.shape[0] != data.shape[0] or dst.free_size != int(np.prod(kept[1:])):
        raise NkiSimError(
            f"{where}: dst {dst.describe()} must hold the {list(kept)} result of reducing "
            f"{data.describe()} over axes {axes}"
        )
    if not isinstance(keepdims, bool) or not isinstance(negate, bool):
        raise NkiSimError(f"{where}: negate and keepdims must be bools")
    if op.is_bitvec:
        _require_int(where, op, dst=dst, data=data)
        if negate:
            raise NkiSimError(f"{where}: negate is meaningless for bit-vector op {op!r}")
        out = from_bits(op.reduce(to_bits(data.read(where), data.dtype), axes), dst.dtype)
    else:
        r = op.reduce(as_fp32(data.read(where)), axes).astype(np.float32)
        out = round_to(-r if negate else r, dst.dtype)
    dst.write(out.reshape(dst.shape), where)
    run.count(E.engine.vector.name)
    return Instruction(where)


def _trailing_axes(axis, data, where: str) -> tuple[int, ...]:
    axes = (axis,) if isinstance(axis, (int, np.integer)) else axis
    if (
        not isinstance(axes, (tuple, list))
        or not axes
        or not all(isinstance(a, (int, np.integer)) for a in axes)
    ):
        raise NkiSimError(f"{where}: axis must be an int or a tuple of ints, got {axis!r}")
    n = data.ndim
    norm = tuple(sorted(int(a) % n if -n <= a < n else n for a in axes))
    if norm != tuple(range(n - len(norm), n)) or 0 in norm:
        raise NkiSimError(
            f"{where}: axis {axis} must be trailing free axes of {data.describe()} (never the "
            "partition axis 0) [ISA]"
        )
    return norm


# select_reduce operand dtypes (NKI 0.6 nki.isa.select_reduce page) [ISA]
SELECT_PREDICATE_DTYPES = frozenset({"int8", "uint8", "int16", "uint16"})
SELECT_ON_TRUE_EXCLUDED = frozenset({"tfloat32", "int32", "uint32"})


def select_reduce(
    dst,
    predicate,
    on_true,
    on_false,
    reduce_res=None,
    reduce_cmd=E.reduce_cmd.idle,
    reduce_op=maximum,
    reverse_pred=False,
    name="",
):
    """dst = predicate ? on_true : on_false (Vector); optional free-axis reduce into reduce_res."""
    where = "nisa.select_reduce"
    run = begin(where, name)
    dst = tile_arg(dst, where, "dst")
    pred = tile_arg(predicate, where, "predicate")
    on_true = tile_arg(on_true, where, "on_true")
    if pred.dtype.numpy_name not in SELECT_PREDICATE_DTYPES:
        raise NkiSimError(
            f"{where}: predicate dtype must be int8, uint8, int16 or uint16, got "
            f"{pred.dtype.numpy_name} [ISA]"
        )
    if on_true.dtype.numpy_name in SELECT_ON_TRUE_EXCLUDED:
        raise NkiSimError(
            f"{where}: on_true may not be {on_true.dtype.numpy_name} (tfloat32, "
            "int32 and uint32 are excluded) [ISA]"
        )
    same_shape(where, "dst", dst, predicate=pred, on_true=on_true)
    p = dst.shape[0]
    if reduce_res is not None:
        res = tile_arg(reduce_res, where, "reduce_res")
        if res.dtype.numpy_name not in ("float32", "bfloat16", "float16"):
            raise NkiSimError(
                f"{where}: reduce_res dtype must be a float type, got {res.dtype.numpy_name} [ISA]"
            )
    if is_scalar(on_false):
        if not isinstance(on_false, (float, np.floating)):
            raise NkiSimError(f"{where}: a scalar on_false must be a float number, got {on_false!r} [ISA]")
        with np.errstate(over="ignore"):
            false_vals = np.float32(on_false)  # the engines read an immediate as fp32
    else:
        on_false = tile_arg(on_false, where, "on_false")
        if on_false.shape[0] != p or on_false.free_size != 1:
            raise NkiSimError(
                f"{where}: on_false {on_false.describe()} must be a scalar or a ({p}, 1) vector [ISA]"
            )
        false_vals = rows(on_false, where, "on_false")
    check_one_psum_input(where, predicate=pred, on_true=on_true)
    mask = pred.read(where).reshape(p, -1) != 0
    if reverse_pred:
        mask = ~mask
    values = np.where(mask, rows(on_true, where, "on_true"), false_vals).astype(np.float32)
    dst.write(round_to(values, dst.dtype).reshape(dst.shape), where)
    reduce_into(
        run.vector_acc,
        where,
        reduce_cmd,
        alu_op(reduce_op, where, "reduce_op"),
        (add, maximum, minimum),
        values,
        dst.partition_start,
        reduce_res,
    )
    run.count(E.engine.vector.name)
    return Instruction(where)


def reduce_into(acc, where, cmd, op, allowed, values, p0, reduce_res) -> None:
    """Fold per-partition reductions of values into accumulator registers; read them out to reduce_res."""
    if not isinstance(cmd, E.reduce_cmd):
        raise NkiSimError(f"{where}: reduce_cmd must be a nisa.reduce_cmd member, got {cmd!r}")
    if op not in allowed:
        raise NkiSimError(f"{where}: reduce_op {op!r} not supported here (allowed: {allowed}) [ISA]")
    acc.update(cmd, op, op.reduce(values, (1,)).astype(np.float32), p0, where)
    if reduce_res is not None:
        res = tile_arg(reduce_res, where, "reduce_res")
        if res.shape[0] != values.shape[0] or res.free_size != 1:
            raise NkiSimError(f"{where}: reduce_res {res.describe()} must be ({values.shape[0]}, 1)")
        res.write(round_to(acc.read(p0, values.shape[0], where), res.dtype).reshape(res.shape), where)
