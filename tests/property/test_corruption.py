"""Corrupted random graphs raise nk.VerifyError, never any other exception.

Each corruption below is guaranteed to break an invariant, so verify() must fail; the
assertion that no other exception escapes is the point of the test.
"""

from hypothesis import given, settings
from hypothesis import strategies as st

import nkigen_lite as nk
from nkigen_lite.ir import ReturnOp, Use
from nkigen_lite.tensor import ops as T
from nkigen_lite.testing.strategies import tensor_graphs


def _ops(g):
    return [op for op in g.ops if not isinstance(op, ReturnOp)]


def _move_before_def(g, draw):
    """Move an op in front of the op defining one of its operands (use before def)."""
    cands = [op for op in _ops(g) if any(v.defining_op is not None for v in op.operands)]
    if not cands:
        return False
    op = draw(st.sampled_from(cands))
    d = draw(st.sampled_from([v.defining_op for v in op.operands if v.defining_op is not None]))
    g.body.remove(op)
    g.body.insert_before(d, op)
    return True


def _drop_use(g, draw):
    vals = [v for v in g.inputs + [r for op in _ops(g) for r in op.results] if v.has_uses]
    v = draw(st.sampled_from(vals))
    v._uses.pop(draw(st.sampled_from(v.uses)))
    return True


def _bogus_use(g, draw):
    vals = g.inputs + [r for op in _ops(g) for r in op.results]
    v = draw(st.sampled_from(vals))
    target = draw(st.sampled_from(g.ops + [T.ExpOp([v])]))
    v._uses[Use(target, target.num_operands + draw(st.integers(0, 2)))] = None
    return True


def _foreign_use_entry(g, draw):
    v = draw(st.sampled_from(g.inputs))
    v._uses[Use(draw(st.sampled_from(["op", None, 3])), 0)] = None
    return True


def _wrong_result_type(g, draw):
    cands = [op for op in _ops(g) if not op.has_trait(nk.ir.traits.ExplicitResultTypes)]
    if not cands:
        return False
    r = draw(st.sampled_from(cands)).results[0]
    t = r.type
    choices = [nk.TensorType(t.shape + (2,), t.dtype), 42, None, "tensor<2xf32>"]
    choices += [nk.TensorType(t.shape, d) for d in nk.ALL_DTYPES if d is not t.dtype]
    r.type = draw(st.sampled_from(choices))
    return True


def _garbage_full_type(g, draw):
    cands = [op for op in _ops(g) if op.has_trait(nk.ir.traits.ExplicitResultTypes)]
    if not cands:
        return False
    draw(st.sampled_from(cands)).results[0].type = draw(st.sampled_from([None, 7, "f32"]))
    return True


def _dangling_operand(g, draw):
    cands = [op for op in g.ops if op.num_operands]
    if not cands:
        return False
    op = draw(st.sampled_from(cands))
    other = nk.Builder("other").add_input("z", (1,), nk.float32)
    op.set_operand(draw(st.integers(0, op.num_operands - 1)), other)
    return True


def _remove_used_op(g, draw):
    cands = [op for op in _ops(g) if any(r.has_uses for r in op.results)]
    if not cands:
        return False
    g.body.remove(draw(st.sampled_from(cands)))
    return True


def _terminator_not_last(g, draw):
    ops = _ops(g)
    if not ops:
        return False
    g.body.insert_before(draw(st.sampled_from(ops)), ReturnOp([], {"names": ()}))
    return True


def _garbage_attrs(g, draw):
    cands = [op for op in _ops(g) if op.attrs]
    if not cands:
        return False
    op = draw(st.sampled_from(cands))
    op.attrs = draw(st.sampled_from([{}, {"axes": "x"}, {k: None for k in op.attrs}]))
    return True


def _garbage_operand(g, draw):
    cands = [op for op in g.ops if op.num_operands]
    if not cands:
        return False
    op = draw(st.sampled_from(cands))
    i = draw(st.integers(0, op.num_operands - 1))
    op.operand(i)._remove_use(op, i)
    op._operands[i] = draw(st.sampled_from([None, 1.5, "x"]))
    return True


CORRUPTIONS = [
    _move_before_def,
    _drop_use,
    _bogus_use,
    _foreign_use_entry,
    _wrong_result_type,
    _garbage_full_type,
    _dangling_operand,
    _remove_used_op,
    _terminator_not_last,
    _garbage_attrs,
    _garbage_operand,
]


@settings(max_examples=settings.default.max_examples * 8)
@given(st.data())
def test_corrupted_graphs_raise_verify_error_only(data):
    g = data.draw(tensor_graphs(max_ops=6, dtypes=(nk.float32, nk.int8, nk.bool_)), label="graph")
    g.verify()
    corrupt = data.draw(st.sampled_from(CORRUPTIONS), label="corruption")
    if not corrupt(g, data.draw):
        return
    try:
        g.verify()
    except nk.VerifyError:
        return
    raise AssertionError(f"{corrupt.__name__} was not detected")
