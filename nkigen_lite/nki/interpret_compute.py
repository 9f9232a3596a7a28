"""Interpreter rules of the NKI compute and DMA ops.

Engine model: VectorE and ScalarE compute in fp32 (integers are converted to fp32 first, so
integer arithmetic is exact only up to 2**24), GpSimd computes integer arithmetic exactly in
int32-range (held in int64) and floats in fp32; bitwise ops act on raw integer bits. Every
result is rounded once on write to the destination dtype. Copies between equal dtypes are
bit-exact; DMA and copies between different dtypes convert via fp32. PSUM accumulates in fp32.
"""

from __future__ import annotations

import numpy as np

from . import numerics, ops
from .access import AccessSpec
from .interpret import NkiInterpreter as I
from .ops.alu import BITVEC_OPS
from .pairing import PAIRED_SINGLE_INPUT, pairing_error

F32 = np.dtype(np.float32)


def _f32(x) -> np.ndarray:
    return np.asarray(x).astype(np.float32, copy=False)


def _pf(x: np.ndarray) -> np.ndarray:
    """View an access's values as (partitions, elements per partition)."""
    return x.reshape(x.shape[0], -1)


def _exact_ints(op, names) -> bool:
    """GpSimd computes integer arithmetic exactly when every input operand is an integer tile
    (a bool input makes it fp32, as on the simulator: the stricter reading) and dst is an
    integer or bool tile."""
    if op.engine != "gpsimd":
        return False
    for n in names:
        a = op.access(n)
        if a is not None and not (a.dtype.is_int or (n == "dst" and a.dtype.is_bool)):
            return False
    return True


def _load(it, op, name, args, exact: bool) -> np.ndarray:
    raw = _pf(it.read_access(op, name, args))
    return raw.astype(np.int64) if exact else _f32(raw)


def _operand(it, op, name, args, exact: bool):
    """An immediate (as a 0-d array) or a (P, 1) column."""
    v = op.attrs[name]
    if isinstance(v, AccessSpec):
        return _load(it, op, name, args, exact)
    return np.asarray(v, dtype=np.int64 if exact else np.float32)


def _paired(it, op) -> None:
    """Refuse a data operand that does not pair with dst element by element (pairing.py),
    verified or not."""
    name = PAIRED_SINGLE_INPUT[op.name]
    msg = pairing_error(op.name, name, op.access(name).shape, op.access("dst").shape)
    if msg:
        raise it.fail(op, msg)


def _bits(op, name) -> int:
    return op.access(name).dtype.bits


def _apply(op_name: str, a, b, exact: bool, bits: int):
    if op_name in BITVEC_OPS:
        return numerics.bitvec(op_name, a, b, bits)
    return numerics.alu(op_name, a, b, np.dtype(np.int64) if exact else F32)


@I.impl(ops.DmaCopyOp)
def _dma(it: I, op, args):
    src = it.read_access(op, "src", args)
    dst_dtype = op.access("dst").dtype
    vals = src.reshape(-1) if op.access("src").dtype is dst_dtype else _f32(src).reshape(-1)
    it.write_access(op, "dst", args, vals)


@I.impl(ops.TensorCopyOp)
def _tensor_copy(it: I, op, args):
    _paired(it, op)
    src = it.read_access(op, "src", args)
    same = op.access("src").dtype is op.access("dst").dtype
    it.write_access(op, "dst", args, src if same else _f32(src))


@I.impl(ops.MemsetOp)
def _memset(it: I, op, args):
    dst = op.access("dst")
    v = op.attrs["value"]
    fill = np.int64(v) if dst.dtype.is_int or dst.dtype.is_bool else np.float32(v)
    it.write_access(op, "dst", args, np.full(dst.shape, fill))


def _affine_values(op, args, shape) -> np.ndarray:
    """offset + c*channel_multiplier + sum(step*k) over a (P, F) grid, in int32 arithmetic."""
    spec = op.attrs["offset"]
    off = spec.const + sum(c * args[p] for p, c in spec.terms)
    p = shape[0]
    val = (
        np.full((p, 1), off, dtype=np.int64)
        + np.arange(p, dtype=np.int64)[:, None] * op.attrs["channel_multiplier"]
    )
    grid = np.zeros((1,), dtype=np.int64)
    for step, num in op.attrs["pattern"]:
        grid = (grid[:, None] + np.arange(num, dtype=np.int64)[None, :] * step).reshape(-1)
    return (val + grid[None, :]).astype(np.int32)


@I.impl(ops.IotaOp)
def _iota(it: I, op, args):
    dst = op.access("dst")
    it.write_access(op, "dst", args, _affine_values(op, args, (dst.partitions, dst.free_size)))


@I.impl(ops.AffineSelectOp)
def _affine_select(it: I, op, args):
    on_true = _load(it, op, "on_true_tile", args, False)
    vals = _affine_values(op, args, on_true.shape).astype(np.int64)
    keep = numerics.alu(op.attrs["cmp_op"], vals, 0, np.dtype(bool))
    it.write_access(op, "dst", args, np.where(keep, on_true, np.float32(op.attrs["on_false_value"])))


@I.impl(ops.MatmulOp)
def _matmul(it: I, op, args):
    st = _load(it, op, "stationary", args, False)
    mv = _load(it, op, "moving", args, False)
    res = np.matmul(st.T, mv)
    if op.attrs["accumulate"]:
        if not it.psum_matmul_state(op, "dst", args):
            it.read_access(op, "dst", args)  # poisoned memory reports first
            raise it.fail(
                op, "accumulate=true onto PSUM not last written by nc_matmul (undefined on the chip)"
            )
        res = _load(it, op, "dst", args, False) + res
    it.write_access(op, "dst", args, res, from_matmul=True)


@I.impl(ops.TransposeOp)
def _transpose(it: I, op, args):
    it.write_access(op, "dst", args, np.ascontiguousarray(_pf(it.read_access(op, "data", args)).T))


@I.impl(ops.ActivationOp)
def _activation(it: I, op, args):
    _paired(it, op)
    func = op.attrs["op"]
    x = _load(it, op, "data", args, False)
    z = x * _operand(it, op, "scale", args, False)
    if op.attrs["bias"] is not None:
        z = z + _load(it, op, "bias", args, False)
    dom = it.target.activation_domain(func)
    if func in ("sin", "arctan") and dom is not None:
        fin = z[np.isfinite(z)]
        if fin.size and (fin.min() < dom[0] or fin.max() > dom[1]):
            raise it.fail(
                op,
                f"{func} input range [{fin.min():.6g}, {fin.max():.6g}] leaves the "
                f"documented domain [{dom[0]:.6g}, {dom[1]:.6g}] (no range reduction "
                "on the chip)",
            )
    y = numerics.activation(func, z)
    it.write_access(op, "dst", args, y)
    if op.attrs["reduce_res"] is not None:
        it.write_access(op, "reduce_res", args, np.sum(y, axis=1, dtype=np.float32, keepdims=True))


@I.impl(ops.TensorTensorOp)
def _tensor_tensor(it: I, op, args):
    alu = op.attrs["op"]
    bit = alu in BITVEC_OPS
    exact = bit or _exact_ints(op, ("dst", "data1", "data2")) and alu != "power"
    a = _load(it, op, "data1", args, exact)
    b = _load(it, op, "data2", args, exact)
    it.write_access(op, "dst", args, _apply(alu, a, b, exact, _bits(op, "data1")), wrap=bit)


@I.impl(ops.TensorScalarOp)
def _tensor_scalar(it: I, op, args):
    _paired(it, op)
    chain = [(op.attrs["op0"], "operand0", op.attrs["reverse0"])]
    if op.attrs["op1"] is not None:
        chain.append((op.attrs["op1"], "operand1", op.attrs["reverse1"]))
    bit = chain[0][0] in BITVEC_OPS
    exact = bit or (
        _exact_ints(op, ("dst", "data", "operand0", "operand1"))
        and all(
            isinstance(op.attrs[n], int) or op.attrs[n] is None or isinstance(op.attrs[n], AccessSpec)
            for _, n, _ in chain
        )
    )
    x = _load(it, op, "data", args, exact)
    for alu, name, rev in chain:
        s = _operand(it, op, name, args, exact)
        x = (
            _apply(alu, s, x, exact, _bits(op, "data"))
            if rev
            else _apply(alu, x, s, exact, _bits(op, "data"))
        )
    it.write_access(op, "dst", args, x, wrap=bit)


@I.impl(ops.TensorReduceOp)
def _tensor_reduce(it: I, op, args):
    alu = op.attrs["op"]
    raw = it.read_access(op, "data", args)
    n_red = len(op.attrs["axis"])
    red = int(np.prod(raw.shape[raw.ndim - n_red :]))
    bit = alu in BITVEC_OPS
    x = raw.reshape(raw.shape[0], -1, red)
    x = x.astype(np.int64) if bit else _f32(x)
    r = numerics.REDUCE[alu](x)
    r = r.astype(np.int64 if bit else np.float32)
    if op.attrs["negate"]:
        r = -r
    it.write_access(op, "dst", args, r, wrap=bit)


@I.impl(ops.SelectOp)
def _select(it: I, op, args):
    pred = _pf(it.read_access(op, "predicate", args)) != 0
    if op.attrs["reverse_pred"]:
        pred = ~pred
    on_true = _load(it, op, "on_true", args, False)
    on_false = _operand(it, op, "on_false", args, False)
    out = np.where(pred, on_true, on_false)
    it.write_access(op, "dst", args, out)
    if op.attrs["reduce_res"] is not None:  # the max of the selected values, before dst's rounding
        y = _f32(out).reshape(out.shape[0], -1)
        if np.isnan(y).any():  # the max's NaN rule is undocumented: refuse, as the top-8 ops do
            raise it.fail(
                op,
                "reduce_res: the selected values hold NaN; the max's NaN rule is undocumented, so the "
                "simulated chip refuses it",
            )
        it.write_access(op, "reduce_res", args, np.max(y, axis=1, keepdims=True))


from . import (  # noqa: E402  (registered rules, after the tables they fill)
    interpret_bn,  # noqa: F401
    interpret_dma_transpose,  # noqa: F401
    interpret_indirect,  # noqa: F401
    interpret_scan,  # noqa: F401
    interpret_shuffle,  # noqa: F401
    interpret_top8,  # noqa: F401
)
