"""Core smoke tests: graph mutation, toposort, DCE, rewriter, pipeline, printer naming."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.ir import Pass, Pipeline, RewritePattern, apply_patterns
from nkigen_lite.ir.errors import BuildError
from nkigen_lite.tensor import ops as T


def _chain():
    b = nk.Builder("chain")
    x = b.add_input("x", (4, 8), nk.float32)
    e = b.exp(x)
    n = b.neg(e)
    b.set_outputs({"y": n})
    return b, x, e, n


def test_insert_erase_are_linked_list_ops():
    b, x, e, n = _chain()
    g = b.graph
    ops = g.ops
    assert [o.name for o in ops] == ["tensor.exp", "tensor.neg", "return"]
    s = T.SqrtOp([x])
    g.body.insert_after(ops[0], s)
    assert [o.name for o in g.ops] == ["tensor.exp", "tensor.sqrt", "tensor.neg", "return"]
    s.erase()
    assert len(g.body) == 3
    with pytest.raises(BuildError, match="still used"):
        e.owner.erase()


def test_use_lists_follow_rauw():
    b, x, e, n = _chain()
    assert [u.op.name for u in e.uses] == ["tensor.neg"]
    e.replace_all_uses_with(x)
    assert not e.has_uses and n.owner.operand(0) is x
    b.graph.verify()


def test_dce_removes_dead_pure_ops_only():
    b, x, e, n = _chain()
    b.sqrt(x)
    b.log(b.abs(x))
    assert b.graph.dce() == 3
    assert [o.name for o in b.graph.ops] == ["tensor.exp", "tensor.neg", "return"]


def test_toposort_repairs_order():
    b, x, e, n = _chain()
    g = b.graph
    neg = n.owner
    g.body.remove(neg)
    g.body.prepend(neg)
    with pytest.raises(nk.VerifyError, match="before its definition"):
        g.verify()
    g.toposort()
    g.verify()
    assert [o.name for o in g.ops] == ["tensor.exp", "tensor.neg", "return"]


class _NegNeg(RewritePattern):
    root = T.NegOp

    def match_and_rewrite(self, op, rw):
        inner = op.operand(0).defining_op
        if not isinstance(inner, T.NegOp):
            return False
        rw.replace_op(op, [inner.operand(0)])
        return True


def test_pattern_driver_reaches_fixed_point():
    b = nk.Builder("nn")
    x = b.add_input("x", (3,), nk.float32)
    b.set_outputs({"y": -(-(-(-x)))})
    fired = apply_patterns(b.graph, [_NegNeg()])
    assert fired == {"_NegNeg": 2}
    assert [o.name for o in b.graph.ops] == ["return"]
    b.graph.verify()


def test_pipeline_records_and_verifies():
    class Nop(Pass):
        name = "test-nop"

        def run(self, graph, ctx):
            return None

    b, *_ = _chain()
    seen = []
    res = Pipeline([Nop()], print_after="all", print_fn=lambda n, t: seen.append(n)).run(b.graph)
    assert seen == ["test-nop"] and "tensor.exp" in res.ir_after("test-nop")
    assert set(res.timings()) == {"test-nop"}


def test_printer_names_are_unique_and_stable():
    b = nk.Builder("names")
    x = b.add_input("x", (2,), nk.float32)
    y = b.exp(b.exp(b.exp(x)))
    b.set_outputs({"y": y})
    text = str(b.graph)
    assert "%exp_2 = tensor.exp %exp_1" in text
    assert str(nk.parse(text)) == text


def test_value_operators_need_a_builder():
    g = nk.parse("graph @g(%x: tensor<2xf32>) {\n  return y = %x\n}\n")
    with pytest.raises(TypeError, match="not created by a builder"):
        g.inputs[0] + 1.0
    with pytest.raises(TypeError, match="truth value"):
        bool(nk.Builder().add_input("x", (2,)) > 0)


def test_interpreter_rejects_bad_inputs():
    b, *_ = _chain()
    g = b.graph
    with pytest.raises(nk.InterpretError, match="missing"):
        nk.run(g, {})
    with pytest.raises(nk.InterpretError, match="shape"):
        nk.run(g, {"x": np.zeros((4, 7), np.float32)})
    with pytest.raises(nk.InterpretError, match="dtype float64"):
        nk.run(g, {"x": np.zeros((4, 8))})
    with pytest.raises(nk.InterpretError, match="unexpected"):
        nk.run(g, {"x": np.zeros((4, 8), np.float32), "z": np.zeros(1)})


def test_interpreter_reports_results_too_big_for_host_memory():
    g = nk.parse(
        "graph @g(%x: tensor<2xf32>) {\n"
        "  %c = tensor.full {value = 1.0} : tensor<100000000000x100000xf32>\n"
        "  return y = %c\n}\n"
    )
    with pytest.raises(nk.InterpretError, match="tensor.full: not enough host memory"):
        nk.run(g, {"x": np.zeros(2, np.float32)})
