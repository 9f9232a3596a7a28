"""tensor.custom_kernel (a hand-written NKI body inside a tensor graph), nk.check_custom, and
composite ops with a registered lowering. References are float64 NumPy computed here."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.ir.registry import scratch_tables

RNG = np.random.default_rng(3)


def affine_body(p=128, f=64, name="affine"):
    """y = 3 x + 1 and z = x * w (w a (p, f) input): two outputs."""
    kb = nk.nki.Builder(name)
    x = kb.add_input("x", (p, f), nk.float32)
    w = kb.add_input("w", (p, f), nk.float32)
    y = kb.alloc((p, f), nk.float32, "hbm", name="y")
    z = kb.alloc((p, f), nk.float32, "hbm", name="z")
    t, u = kb.alloc((p, f), nk.float32, "sbuf"), kb.alloc((p, f), nk.float32, "sbuf")
    kb.dma_copy(dst=t, src=x)
    kb.dma_copy(dst=u, src=w)
    kb.tensor_tensor(dst=u, data1=t, data2=u, op="multiply")
    kb.tensor_scalar(dst=t, data=t, op0="multiply", operand0=3.0, op1="add", operand1=1.0)
    kb.dma_copy(dst=y, src=t)
    kb.dma_copy(dst=z, src=u)
    kb.dealloc(t)
    kb.dealloc(u)
    kb.set_outputs({"y": y, "z": z})
    return kb.graph


def ref(x, w):
    return 3.0 * x + 1.0, x * w


def test_two_outputs_on_a_transposed_operand_match_numpy_everywhere():
    b = nk.Builder("g")
    a = b.add_input("a", (64, 128), nk.float32)
    w = b.add_input("w", (128, 64), nk.float32)
    y, z = b.custom_kernel(affine_body(), [b.transpose(a), w], reference=ref)
    b.set_outputs({"s": y + z})
    av = RNG.standard_normal((64, 128)).astype(np.float32)
    wv = RNG.standard_normal((128, 64)).astype(np.float32)
    a64, w64 = av.T.astype(np.float64), wv.astype(np.float64)
    want = 3 * a64 + 1 + a64 * w64
    ins = {"a": av, "w": wv}
    np.testing.assert_allclose(nk.run(b.graph, ins)["s"], want, rtol=1e-5, atol=1e-5)
    k = nk.compile(b.graph)
    nk.nki.verify(k.nki)
    np.testing.assert_allclose(k.run(ins)["s"], want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(nk.simulate(k, ins)["s"], want, rtol=1e-5, atol=1e-5)
    src = k.nki_source()
    assert "# custom kernel affine" in src and src == nk.compile(b.graph).nki_source()  # deterministic


def test_outputs_selects_and_orders_the_results_and_the_text_round_trips():
    b = nk.Builder("g")
    x = b.add_input("x", (128, 64), nk.float32)
    w = b.add_input("w", (128, 64), nk.float32)
    z = b.custom_kernel(affine_body(name="affine_z"), [x, w], outputs=["z"], reference=lambda x, w: x * w)
    b.set_outputs({"z": z})
    text = str(b.graph)
    assert 'outputs = ["z"]' in text and str(nk.parse(text)) == text
    xv, wv = RNG.standard_normal((2, 128, 64)).astype(np.float32)
    want = xv.astype(np.float64) * wv
    np.testing.assert_allclose(nk.compile(nk.parse(text)).run({"x": xv, "w": wv})["z"], want, rtol=1e-6)


@pytest.mark.parametrize(
    "inputs, outputs, match",
    [
        ([(128, 32)], None, r"custom_kernel 'affine': the body takes 2 inputs"),
        ([(128, 32), (128, 64)], None, r"input 'x' of the body is \[128, 64\] f32, but the operand is"),
        ([(128, 64), (128, 64)], ["q"], r"custom_kernel 'affine': the body has no output 'q'"),
    ],
)
def test_a_body_that_does_not_fit_its_operands_is_refused(inputs, outputs, match):
    b = nk.Builder("g")
    vals = [b.add_input(f"i{k}", s, nk.float32) for k, s in enumerate(inputs)]
    with pytest.raises(nk.BuildError, match=match):
        b.custom_kernel(affine_body(), vals, outputs=outputs, reference=ref)


def test_an_illegal_body_is_refused_naming_the_custom_kernel():
    kb = nk.nki.Builder("gpsimd_scalar")
    x = kb.add_input("x", (128, 64), nk.float32)
    y = kb.alloc((128, 64), nk.float32, "hbm", name="y")
    t = kb.alloc((128, 64), nk.float32, "sbuf")
    kb.dma_copy(dst=t, src=x)
    kb.tensor_scalar(dst=t, data=t, op0="add", operand0=1.0, engine="gpsimd")
    kb.dma_copy(dst=y, src=t)
    kb.dealloc(t)
    kb.set_outputs({"y": y})
    b = nk.Builder("g")
    a = b.add_input("a", (128, 64), nk.float32)
    with pytest.raises(nk.VerifyError, match="custom_kernel 'gpsimd_scalar'.*documented only for rsqrt"):
        b.custom_kernel(kb.graph, [a], reference=lambda v: v + 1)
    with pytest.raises(nk.VerifyError, match="custom kernel 'gpsimd_scalar'.*documented only for rsqrt"):
        nk.check_custom(kb.graph, lambda v: v + 1)


def test_a_parsed_kernel_without_a_reference_gets_a_clear_error():
    with scratch_tables():
        b = nk.Builder("g")
        x = b.add_input("x", (128, 64), nk.float32)
        w = b.add_input("w", (128, 64), nk.float32)
        y, _ = b.custom_kernel(affine_body(name="nobody_registered"), [x, w])
        b.set_outputs({"y": y})
        with pytest.raises(nk.NkError, match="'nobody_registered': no NumPy reference is registered"):
            nk.run(b.graph, {"x": np.ones((128, 64), np.float32), "w": np.ones((128, 64), np.float32)})


def test_check_custom_reports_where_body_and_reference_disagree():
    body = affine_body(name="affine_check")
    ok = nk.check_custom(body, ref)
    assert ok.ok and [o.name for o in ok.outputs] == ["y", "z"]
    xv, wv = RNG.standard_normal((2, 128, 64)).astype(np.float32)

    def wrong(x, w):
        y, z = ref(x, w)
        z = z.copy()
        z[5, 7] += 1.0  # one element off
        return y, z

    rep = nk.check_custom(body, wrong, {"x": xv, "w": wv})
    assert not rep.ok
    y, z = rep.outputs
    assert y.mismatches == 0 and z.mismatches == 1 and z.first == (5, 7)
    assert z.body_value == pytest.approx(float(xv[5, 7]) * float(wv[5, 7]), rel=1e-6)
    assert "1 of 8192 elements differ" in str(rep) and "(5, 7)" in str(rep)


def _neg_twice(x):
    """-2 x."""
    return x * -2.0


def _neg_twice_kernel(types, attrs):
    (t,) = types
    kb = nk.nki.Builder("neg_twice_kernel")
    x = kb.add_input("x", t.shape, t.dtype)
    y = kb.alloc(t.shape, t.dtype, "hbm", name="y")
    s = kb.alloc(t.shape, t.dtype, "sbuf")
    kb.dma_copy(dst=s, src=x)
    kb.activation(dst=s, op="copy", data=s, scale=-2.0)
    kb.dma_copy(dst=y, src=s)
    kb.dealloc(s)
    kb.set_outputs({"y": y})
    return kb.graph


def test_a_composite_with_a_registered_lowering_is_kept_by_decompose_and_inlined():
    with scratch_tables():
        op = nk.define_op("neg_twice_t", _neg_twice)
        b = nk.Builder("g")
        x = b.add_input("x", (128, 64), nk.float32)
        b.set_outputs({"y": b.neg_twice_t(x)})
        expanded = nk.compile(b.graph)
        assert "tensor.neg_twice_t" not in expanded.ir("decompose")  # no lowering: expanded
        nk.register_composite_lowering(op, _neg_twice_kernel)
        k = nk.compile(b.graph)
        assert "tensor.neg_twice_t" in k.ir("decompose")
        assert "registered lowering neg_twice_kernel" in k.nki_source()
        acts = [o for o in k.nki.walk() if o.name == "nki.activation"]
        assert len(acts) == 1 and acts[0].attrs["scale"] == -2.0
        xv = RNG.standard_normal((128, 64)).astype(np.float32)
        np.testing.assert_array_equal(k.run({"x": xv})["y"], xv * np.float32(-2.0))


def test_register_composite_lowering_refuses_other_classes_and_misfit_kernels():
    with pytest.raises(nk.BuildError, match="is not a composite op class"):
        nk.register_composite_lowering(nk.tensor.ops.ExpOp, _neg_twice_kernel)
    with scratch_tables():
        op = nk.define_op("neg_twice_u", _neg_twice)
        nk.register_composite_lowering(
            op, lambda types, attrs: _neg_twice_kernel([types[0].__class__((64, 64), types[0].dtype)], attrs)
        )
        b = nk.Builder("g")
        x = b.add_input("x", (128, 64), nk.float32)
        b.set_outputs({"y": b.neg_twice_u(x)})
        with pytest.raises(nk.BuildError, match="tensor.neg_twice_u's registered lowering: kernel tensor"):
            nk.compile(b.graph)
