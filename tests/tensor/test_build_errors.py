# ruff: noqa: E501  (a table of one-line cases reads best unwrapped)
"""Every build-time error is a BuildError that names the op and the broken rule."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.tensor import ops as T


def _b():
    b = nk.Builder("t")
    x = b.add_input("x", (2, 3), nk.float32)
    y = b.add_input("y", (4,), nk.float32)
    i = b.add_input("i", (2, 3), nk.int8)
    c = b.add_input("c", (2, 3), nk.bool_)
    return b, x, y, i, c


CASES = {
    "broadcast": (
        lambda b, x, y, i, c: x + y,
        r"tensor.add: shapes \(2, 3\) and \(4,\) do not broadcast \(dim -1: 3 vs 4\)",
    ),
    "broadcast_where": (lambda b, x, y, i, c: b.where(c, x, y), r"tensor.where: shapes .* do not broadcast"),
    "broadcast_to": (
        lambda b, x, y, i, c: b.broadcast_to(x, (3, 3)),
        r"tensor.broadcast_to: cannot broadcast \(2, 3\) to \(3, 3\)",
    ),
    "reduce_axis": (
        lambda b, x, y, i, c: b.sum(x, axis=2),
        r"tensor.reduce: axis 2 is out of range for rank 2",
    ),
    "reduce_negative_axis": (
        lambda b, x, y, i, c: b.mean(x, axis=-3),
        r"tensor.reduce: axis -3 is out of range",
    ),
    "reduce_repeated_axis": (lambda b, x, y, i, c: b.sum(x, axis=(1, -1)), r"tensor.reduce: repeated axis"),
    "reduce_kind": (lambda b, x, y, i, c: b.reduce(x, 0, "median"), r"tensor.reduce: unknown kind 'median'"),
    "reduce_ddof": (
        lambda b, x, y, i, c: b.reduce(x, 0, "sum", ddof=1),
        r"tensor.reduce: ddof only applies to var and std",
    ),
    "reduce_axis_type": (lambda b, x, y, i, c: b.sum(x, axis=1.0), r"tensor.reduce: axis must be an integer"),
    "transpose_perm": (
        lambda b, x, y, i, c: b.transpose(x, (0, 0)),
        r"tensor.transpose: perm \[0, 0\] is not a permutation of 2 axes",
    ),
    "transpose_axis": (
        lambda b, x, y, i, c: b.transpose(x, (0, 2)),
        r"tensor.transpose: axis 2 is out of range",
    ),
    "reshape_size": (
        lambda b, x, y, i, c: b.reshape(x, (4, 2)),
        r"tensor.reshape: cannot reshape \(2, 3\) \(6 elements\) to \(4, 2\) \(8 elements\)",
    ),
    "reshape_two_minus_one": (
        lambda b, x, y, i, c: x.reshape(-1, -1),
        r"tensor.reshape: only one dim may be -1",
    ),
    "reshape_minus_one": (lambda b, x, y, i, c: x.reshape(4, -1), r"tensor.reshape: cannot reshape \(2, 3\)"),
    "reshape_negative": (lambda b, x, y, i, c: x.reshape(-2, -3), r"tensor.reshape: .*negative dim"),
    "matmul_contraction": (
        lambda b, x, y, i, c: x @ y,
        r"tensor.matmul: contraction dims differ: \(2, 3\) @ \(4,\) \(3 vs 4\)",
    ),
    "matmul_batch": (
        lambda b, x, y, i, c: b.reshape(b.concat([x, x]), (2, 2, 3)) @ b.full((3, 3, 1), 1.0),
        r"tensor.matmul: shapes \(2,\) and \(3,\) do not broadcast",
    ),
    "matmul_scalar": (lambda b, x, y, i, c: x @ 2.0, r"tensor.matmul: operands must be tensors"),
    "matmul_rank0": (lambda b, x, y, i, c: b.sum(x) @ y, r"tensor.matmul: operands must have rank >= 1"),
    "matmul_bool": (lambda b, x, y, i, c: c @ b.transpose(c), r"tensor.matmul: bool operands"),
    "concat_shape": (
        lambda b, x, y, i, c: b.concat([x, y[None]], axis=0),
        r"tensor.concat: operand 1 has shape \(1, 4\), incompatible with \(2, 3\) outside axis 0",
    ),
    "concat_rank": (
        lambda b, x, y, i, c: b.concat([x, y], axis=0),
        r"tensor.concat: operand 1 has shape \(4,\)",
    ),
    "concat_axis": (lambda b, x, y, i, c: b.concat([x, x], axis=2), r"tensor.concat: axis 2 is out of range"),
    "concat_empty": (lambda b, x, y, i, c: b.concat([]), r"tensor.concat: needs at least one"),
    "int_scalar_bounds": (
        lambda b, x, y, i, c: i + 1000,
        r"tensor.add: Python integer 1000 is out of bounds for int8",
    ),
    "uint_negative_scalar": (
        lambda b, x, y, i, c: b.cast(i, nk.uint8) * -1,
        r"tensor.mul: Python integer -1 is out of bounds for uint8",
    ),
    "bitwise_float": (
        lambda b, x, y, i, c: x & i,
        r"tensor.bitwise_and: not defined for dtype float32, int8",
    ),
    "bitwise_bf16": (
        lambda b, x, y, i, c: b.cast(x, nk.bfloat16) | c,
        r"tensor.bitwise_or: needs integer or bool operands, got bfloat16 and bool_",
    ),
    "invert_float": (lambda b, x, y, i, c: ~x, r"tensor.bitwise_not: not defined for dtype float32"),
    "neg_bool": (lambda b, x, y, i, c: -c, r"tensor.neg: not defined for dtype bool"),
    "sub_bool": (lambda b, x, y, i, c: c - c, r"tensor.sub: not defined for dtype bool"),
    "unknown_unary": (lambda b, x, y, i, c: b.unary("expm1", x), r"unknown unary op 'expm1'"),
    "unknown_binary": (lambda b, x, y, i, c: b.binary("hypot", x, x), r"unknown binary op 'hypot'"),
    "unknown_dtype": (lambda b, x, y, i, c: x.astype("float128x"), r"unknown dtype 'float128x'"),
    "float64_dtype": (lambda b, x, y, i, c: x.astype(np.float64), r"dtype float64 is not supported on trn2"),
    "float64_input": (
        lambda b, x, y, i, c: b.add_input("z", (2,), np.float64),
        r"dtype float64 is not supported on trn2",
    ),
    "int64_input": (lambda b, x, y, i, c: b.add_input("z", (2,), "int64"), r"int64 is not supported on trn2"),
    "duplicate_input": (lambda b, x, y, i, c: b.add_input("x", (2,)), r"duplicate input name 'x'"),
    "bad_input_name": (
        lambda b, x, y, i, c: b.add_input("1x", (2,)),
        r"input name '1x' is not an identifier",
    ),
    "negative_shape": (
        lambda b, x, y, i, c: b.add_input("z", (2, -1)),
        r"tensor shape \(2, -1\) has a negative",
    ),
    "slice_step_zero": (lambda b, x, y, i, c: x[::0], r"tensor.slice: step of dim 0 is zero"),
    "slice_arity": (
        lambda b, x, y, i, c: b.slice(x, [0], [1]),
        r"tensor.slice: need 2 starts, stops and strides",
    ),
    "index_bounds": (lambda b, x, y, i, c: x[2], r"index 2 is out of bounds for axis 0 with size 2"),
    "index_negative_bounds": (
        lambda b, x, y, i, c: x[:, -4],
        r"index -4 is out of bounds for axis 1 with size 3",
    ),
    "too_many_indices": (lambda b, x, y, i, c: x[0, 0, 0], r"too many indices for a tensor of rank 2"),
    "two_ellipses": (lambda b, x, y, i, c: x[..., ...], r"only have a single ellipsis"),
    "tensor_index": (lambda b, x, y, i, c: x[i], r"unsupported index .*use gather/take_along_axis"),
    "list_index": (lambda b, x, y, i, c: x[[0, 1]], r"unsupported index \[0, 1\]"),
    "bool_index": (lambda b, x, y, i, c: x[True], r"unsupported index True"),
    "full_range": (
        lambda b, x, y, i, c: b.full((2,), 300, nk.int8),
        r"tensor.full: value 300 is out of range for int8",
    ),
    "full_nan_int": (
        lambda b, x, y, i, c: b.full((2,), float("nan"), nk.int32),
        r"tensor.full: value nan cannot be stored as int32",
    ),
    "iota_bool": (
        lambda b, x, y, i, c: b.iota((3,), 0, nk.bool_),
        r"tensor.iota: result dtype must be numeric",
    ),
    "iota_axis": (lambda b, x, y, i, c: b.iota((3,), 1), r"tensor.iota: axis 1 is out of range for rank 1"),
    "iota_rank0": (lambda b, x, y, i, c: b.iota((), 0), r"tensor.iota: axis 0 is out of range for rank 0"),
    "squeeze_non_1": (lambda b, x, y, i, c: b.squeeze(x, 0), r"tensor.squeeze: axis 0 has size 2, not 1"),
    "expand_dims_axis": (
        lambda b, x, y, i, c: b.expand_dims(x, 3),
        r"tensor.expand_dims: axis 3 is out of range",
    ),
    "split_uneven": (
        lambda b, x, y, i, c: b.split(x, 2, axis=1),
        r"split: 3 elements along axis 1 do not split into 2 equal parts",
    ),
    "stack_shapes": (lambda b, x, y, i, c: b.stack([x, b.transpose(x)]), r"tensor.concat: operand 1"),
    "max_empty": (
        lambda b, x, y, i, c: b.max(b.add_input("e", (0, 2)), axis=0),
        r"tensor.reduce: max of an empty axis has no identity",
    ),
    "operand_type": (lambda b, x, y, i, c: b.exp("x"), r"cannot use str 'x' as a tensor operand"),
    "operand_none": (lambda b, x, y, i, c: x + None, r"tensor.add: cannot use NoneType None"),
    "set_outputs_empty": (lambda b, x, y, i, c: b.set_outputs({}), r"set_outputs takes a non-empty dict"),
    "set_outputs_value": (lambda b, x, y, i, c: b.set_outputs({"y": 1.0}), r"output 'y' must be an IR Value"),
    "set_outputs_name": (
        lambda b, x, y, i, c: b.set_outputs({"a b": x}),
        r"output name 'a b' is not an identifier",
    ),
    "graph_name": (
        lambda b, x, y, i, c: nk.Builder("my graph"),
        r"graph name 'my graph' is not an identifier",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_build_error_names_op_and_rule(name):
    fn, pattern = CASES[name]
    b, *vals = _b()
    with pytest.raises(nk.BuildError, match=pattern):
        fn(b, *vals)


def test_build_errors_are_value_errors_and_nk_errors():
    b, x, *_ = _b()
    with pytest.raises(ValueError):
        b.sum(x, axis=5)
    with pytest.raises(nk.NkError):
        b.sum(x, axis=5)


def test_direct_op_construction_checks_operands_and_attributes():
    b, x, y, i, c = _b()
    with pytest.raises(nk.BuildError, match=r"tensor.where: condition must be bool, got float32"):
        T.WhereOp([x, x, x])
    with pytest.raises(nk.BuildError, match=r"tensor.exp: expected 1 operands, got 2"):
        T.ExpOp([x, x])
    with pytest.raises(nk.BuildError, match=r"tensor.exp: operand 1\.0 is not an IR Value"):
        T.ExpOp([1.0])
    with pytest.raises(nk.BuildError, match=r"tensor.reduce: unknown attribute 'axis'"):
        T.ReduceOp([x], {"axis": (0,), "kind": "sum"})
    with pytest.raises(nk.BuildError, match=r"tensor.reduce: missing required attribute 'kind'"):
        T.ReduceOp([x], {"axes": (0,)})
    with pytest.raises(nk.BuildError, match=r"tensor.reduce: attribute 'kind': expected one of sum"):
        T.ReduceOp([x], {"axes": (0,), "kind": "median"})
    with pytest.raises(nk.BuildError, match=r"tensor.reduce: axes \[1, 0\] must be sorted"):
        T.ReduceOp([x], {"axes": (1, 0), "kind": "sum"})
    with pytest.raises(nk.BuildError, match=r"tensor.reduce: attribute 'keepdims': expected true or false"):
        T.ReduceOp([x], {"axes": (0,), "kind": "sum", "keepdims": 1})
    with pytest.raises(nk.BuildError, match=r"tensor.slice: range\(0, 5, 1\) is out of bounds for dim 1"):
        T.SliceOp([x], {"starts": (0, 0), "stops": (2, 5), "strides": (1, 1)})
    with pytest.raises(nk.BuildError, match=r"tensor.slice: stride of dim 0 is zero"):
        T.SliceOp([x], {"starts": (0, 0), "stops": (2, 3), "strides": (0, 1)})
    with pytest.raises(nk.BuildError, match=r"tensor.cast: attribute 'dtype': expected a dtype"):
        T.CastOp([x], {"dtype": "float64"})
    with pytest.raises(nk.BuildError, match=r"tensor.full: result types must be given explicitly"):
        T.FullOp([], {"value": 1.0})
    with pytest.raises(nk.BuildError, match=r"tensor.concat: needs at least one operand"):
        T.ConcatOp([], {"axis": 0})
