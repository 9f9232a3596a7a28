"""Registry completeness: every tensor op is registered, has an interpreter rule, inference or
explicit-type verification, a Builder method, and an instance that round-trips through text."""

import numpy as np

import nkigen_lite as nk
from nkigen_lite.ir import OP_REGISTRY
from nkigen_lite.ir.traits import ExplicitResultTypes
from nkigen_lite.tensor import ops as T
from nkigen_lite.tensor.builder import Builder
from nkigen_lite.tensor.interpret import TensorInterpreter


def _registered_tensor_ops():
    """Every registered op of the tensor dialect, including ones other packages add."""
    return [c for c in OP_REGISTRY.values() if issubclass(c, T.TensorOp)]


def test_every_op_of_the_tensor_module_is_in_the_op_list():
    defined = {
        c
        for c in vars(T).values()
        if isinstance(c, type) and issubclass(c, T.TensorOp) and c.__dict__.get("name")
    }
    assert defined == set(T.ALL_TENSOR_OPS)
    for cls in T.ALL_TENSOR_OPS:
        assert OP_REGISTRY[cls.name] is cls and cls.name.startswith("tensor.")


def test_every_tensor_op_has_an_interpreter_rule():
    missing = [c.name for c in _registered_tensor_ops() if TensorInterpreter.rule_for(c) is None]
    assert missing == [], (
        f"{missing} have no tensor interpreter rule: add @TensorInterpreter.impl"
        "(OpClass) in nkigen_lite/tensor/interpret.py"
    )


def test_every_tensor_op_infers_or_checks_explicit_types():
    for cls in _registered_tensor_ops():
        if cls.has_trait(ExplicitResultTypes):
            assert cls.verify is not nk.ir.Op.verify, cls.name
        else:
            assert cls.infer.__func__ is not nk.ir.Op.infer.__func__, cls.name


def test_every_tensor_op_has_its_builder_methods():
    for cls in T.ALL_TENSOR_OPS:
        assert cls.builder_names, f"{cls.name}: no builder_names on its class"
        for name in cls.builder_names:
            assert callable(getattr(Builder, name, None)), (
                f"{cls.name}: Builder has no method {name!r} (nkigen_lite/tensor/builder.py)"
            )


def _one_of_each(b):
    """A graph with at least one instance of every tensor op; returns the graph's values."""
    x = b.add_input("x", (2, 3), nk.float32)
    i = b.add_input("i", (2, 3), nk.int32)
    outs = {}
    for short in T.UNARY_OPS:
        src = i if short == "bitwise_not" else x
        outs[f"u_{short}"] = b.unary(short, src)
    for short, cls in T.BINARY_OPS.items():
        a = i if cls.category == "bitwise" else x
        outs[f"b_{short}"] = b.binary(short, a, a)
    outs["where"] = b.where(x > 0, x, 1.0)
    outs["cast"] = b.cast(x, nk.bfloat16)
    outs["constant"] = b.constant(np.arange(6, dtype=np.float16).reshape(2, 3))
    outs["full"] = b.full((2,), 7, nk.uint8)
    outs["iota"] = b.iota((2, 3), 1)
    outs["reduce"] = b.var(x, axis=-1, keepdims=True, ddof=1)
    outs["matmul"] = x @ x.T
    outs["transpose"] = b.transpose(x)
    outs["reshape"] = x.reshape(3, 2)
    outs["broadcast_to"] = b.broadcast_to(x, (4, 2, 3))
    outs["slice"] = x[::-1, 1:]
    outs["concat"] = b.concat([x, i], -1)
    outs["topk_values"], outs["topk_indices"] = b.topk(x, 2)
    outs["for_loop"] = b.for_loop(3, x, lambda k, h: h * 0.5 + b.cast(k, nk.float32))
    outs["gather_rows"] = b.gather_rows(x, b.constant(np.array([1, 0, 1], np.int32)))
    outs["scatter_rows"] = b.scatter_rows(x, b.constant(np.array([1, 1], np.int32)), x * 2.0)
    outs["take_along_axis"] = b.take_along_axis(x, b.constant(np.array([[2, 0, -1], [1, 1, 0]], np.int32)), 1)
    outs["one_hot"] = b.one_hot(i, 5, nk.float32)
    outs["dynamic_slice"] = b.dynamic_slice(x, [1, 1], (1, 2))
    outs["dynamic_update_slice"] = b.dynamic_update_slice(x, b.ones((1, 3)), [1, 0])
    outs["custom_kernel"] = b.custom_kernel(_double_body(), [x], reference=lambda a: a * 2)
    return outs


def _double_body():
    """A hand-written NKI kernel y = 2 x on a (2, 3) f32 input (for tensor.custom_kernel)."""
    kb = nk.nki.Builder("double")
    x = kb.add_input("x", (2, 3), nk.float32)
    y = kb.alloc((2, 3), nk.float32, "hbm", name="y")
    t = kb.alloc((2, 3), nk.float32, "sbuf")
    kb.dma_copy(dst=t, src=x)
    kb.tensor_scalar(dst=t, data=t, op0="multiply", operand0=2.0)
    kb.dma_copy(dst=y, src=t)
    kb.dealloc(t)
    kb.set_outputs({"y": y})
    return kb.graph


def test_every_tensor_op_round_trips_through_text_and_runs():
    b = nk.Builder("every_op")
    b.set_outputs(_one_of_each(b))
    g = b.graph
    g.verify()
    present = {type(op) for op in g.walk()}
    assert set(T.ALL_TENSOR_OPS) <= present
    text = str(g)
    g2 = nk.parse(text)
    assert str(g2) == text
    ins = {
        "x": np.linspace(0.5, 2, 6, dtype=np.float32).reshape(2, 3),
        "i": np.arange(1, 7, dtype=np.int32).reshape(2, 3),
    }
    r1, r2 = nk.run(g, ins), nk.run(g2, ins)
    assert set(r1) == set(g.outputs)
    for k in r1:
        assert r1[k].shape == g.outputs[k].shape
        np.testing.assert_array_equal(r1[k], r2[k], err_msg=k)
