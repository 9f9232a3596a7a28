# ruff: noqa: E501  (a table of one-line cases reads best unwrapped)
"""Corrupted graphs raise VerifyError stating the rule and printing the op, never another error.
(tests/property/test_corruption.py does the same on random graphs.)"""

import pytest

import nkigen_lite as nk
from nkigen_lite.ir import ReturnOp, Use
from nkigen_lite.tensor import ops as T


def _graph():
    b = nk.Builder("g")
    x = b.add_input("x", (2, 3), nk.float32)
    e = b.exp(x)
    s = b.sum(e, axis=-1)
    n = -s
    b.set_outputs({"y": n, "e": e})
    return b.graph, x, e, s, n


def _move_first(g, value):
    op = value.owner
    g.body.remove(op)
    g.body.prepend(op)


def _remove_use(g, value):
    value._uses.pop(next(iter(value._uses)))


def _set_type(value, t):
    value.type = t


CORRUPTIONS = {
    "use_before_def": (
        lambda g, x, e, s, n: _move_first(g, n),
        "operand 0 (%sum) is used before its definition",
    ),
    "missing_use": (lambda g, x, e, s, n: _remove_use(g, s), "is missing this use in its use-list"),
    "bogus_use_index": (
        lambda g, x, e, s, n: s._add_use(n.owner, 3),
        "use-list of result 0 names operand 3 of a tensor.neg op that does not use it",
    ),
    "use_by_detached_op": (
        lambda g, x, e, s, n: x._add_use(T.ExpOp([e]), 0),
        "use-list of %x names a tensor.exp op that is not in the graph",
    ),
    "use_by_foreign_op": (
        lambda g, x, e, s, n: T.SqrtOp([x]),
        "names a tensor.sqrt op that is not in the graph",
    ),
    "wrong_result_shape": (
        lambda g, x, e, s, n: _set_type(e, nk.TensorType((3, 2), nk.float32)),
        "tensor.exp: result type is tensor<3x2xf32> but the operands give tensor<2x3xf32>",
    ),
    "wrong_result_dtype": (
        lambda g, x, e, s, n: _set_type(s, nk.TensorType((2,), nk.float16)),
        "tensor.reduce: result type is tensor<2xf16>",
    ),
    "result_type_not_a_type": (lambda g, x, e, s, n: _set_type(e, 42), "tensor.exp: result type is 42"),
    "input_type_garbage": (
        lambda g, x, e, s, n: _set_type(x, None),
        "tensor.exp: operand 0 must be a tensor",
    ),
    "dangling_operand": (
        lambda g, x, e, s, n: n.owner.set_operand(0, nk.Builder().add_input("z", (2,))),
        "operand 0 (%<undefined:z>) is used before its definition or outside its scope",
    ),
    "removed_while_used": (
        lambda g, x, e, s, n: g.body.remove(s.owner),
        "operand 0 (%<undefined:sum>) is used before its definition",
    ),
    "terminator_not_last": (
        lambda g, x, e, s, n: g.body.insert_before(n.owner, ReturnOp([], {"names": ()})),
        "return must be the last op of its block",
    ),
    "return_moved_up": (
        lambda g, x, e, s, n: _move_return_before(g, n),
        "graph @g must end with a return op",
    ),
    "no_terminator": (lambda g, x, e, s, n: g.body.remove(g.return_op), "graph @g must end with a return op"),
    "operand_not_a_value": (lambda g, x, e, s, n: _operand_to_float(n), "operand 0 is not a Value"),
    "result_index": (lambda g, x, e, s, n: setattr(s, "index", 4), "result 0 does not point back to its op"),
    "parent_pointer": (
        lambda g, x, e, s, n: setattr(e.owner, "parent", None),
        "op's parent pointer does not match its block",
    ),
    "input_names": (
        lambda g, x, e, s, n: g.input_names.append("ghost"),
        "graph input names and block arguments differ in number",
    ),
    "bad_attrs": (
        lambda g, x, e, s, n: setattr(
            s.owner, "attrs", {"axes": (5,), "kind": "sum", "keepdims": False, "ddof": 0}
        ),
        "tensor.reduce: axes [5] must be sorted, unique and in [0, 2)",
    ),
    "attrs_emptied": (
        lambda g, x, e, s, n: _empty_scatter_attrs(g, x),
        "tensor.scatter_rows: attributes missing: unique; unknown: none",
    ),
    "attr_garbage_value": (
        lambda g, x, e, s, n: setattr(
            s.owner, "attrs", {"axes": (1,), "kind": "sum", "keepdims": None, "ddof": 0}
        ),
        "tensor.reduce: attribute 'keepdims': expected",
    ),
    "full_value_type": (
        lambda g, x, e, s, n: _replace_with_full(g, e),
        "tensor.full: value 'oops' is not a float",
    ),
    "return_names": (
        lambda g, x, e, s, n: setattr(g.return_op, "attrs", {"names": ("y",)}),
        "return: number of names and values differ",
    ),
}


def _operand_to_float(value):
    op = value.owner
    op.operand(0)._remove_use(op, 0)
    op._operands[0] = 3.0


def _move_return_before(g, value):
    ret = g.return_op
    g.body.remove(ret)
    g.body.insert_before(value.owner, ret)


def _empty_scatter_attrs(g, x):
    """Regression (thorough corruption property): scatter_rows' infer never reads ``unique``,
    so only the attribute check notices it gone."""
    ids = T.FullOp([], {"value": 0}, [nk.TensorType((1,), nk.int32)])
    rows = T.FullOp([], {"value": 1.0}, [nk.TensorType((1, 3), nk.float32)])
    for op in (ids, rows):
        g.body.insert_before(g.return_op, op)
    sc = T.ScatterRowsOp([x, ids.result, rows.result])
    g.body.insert_before(g.return_op, sc)
    sc.attrs = {}


def _replace_with_full(g, e):
    full = T.FullOp([], {"value": 1.0}, [e.type])
    g.body.insert_before(e.owner, full)
    e.replace_all_uses_with(full.result)
    object.__setattr__(full, "attrs", {"value": "oops"})


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_corruption_is_a_verify_error(name):
    fn, fragment = CORRUPTIONS[name]
    g, *vals = _graph()
    g.verify()
    fn(g, *vals)
    with pytest.raises(nk.VerifyError) as info:
        g.verify()
    assert fragment in str(info.value), str(info.value)


def test_verify_error_prints_the_op():
    g, x, e, s, n = _graph()
    e.type = nk.TensorType((2, 3), nk.int8)
    with pytest.raises(nk.VerifyError, match=r"\n  at: %exp = tensor.exp %x : tensor<2x3xi8>"):
        g.verify()


def test_uses_are_tracked_through_rauw_and_set_operand():
    g, x, e, s, n = _graph()
    assert e.uses == [Use(s.owner, 0), Use(g.return_op, 1)]
    n.owner.set_operand(0, s)
    g.verify()
    e.replace_all_uses_with(x)
    assert e.uses == [] and x.num_uses == 3
    g.verify()
