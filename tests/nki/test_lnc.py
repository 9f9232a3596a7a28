"""LNC=2 launches: nk.split_cores shares a kernel's main loop between the two physical cores of a
logical NeuronCore (nki.program_id); the NKI interpreter and the NumPy simulator run both cores
and combine their outputs, refusing races; each core moves half the bytes of the row data."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki import ds, ts
from nkigen_lite.nki.ops import ProgramIdOp, lnc_of


def softmax(n, m):
    b = nk.Builder("softmax")
    x = b.add_input("x", (n, m), nk.float32)
    e = b.exp(x - b.max(x, axis=-1, keepdims=True))
    b.set_outputs({"y": e / b.sum(e, axis=-1, keepdims=True)})
    return b.graph


def rmsnorm(n, m):
    b = nk.Builder("rmsnorm")
    x = b.add_input("x", (n, m), nk.float32)
    w = b.add_input("w", (m,), nk.float32)
    b.set_outputs({"y": x / b.sqrt(b.mean(x * x, axis=-1, keepdims=True) + 1e-6) * w})
    return b.graph


def _numpy(name, ins):
    x = ins["x"].astype(np.float64)
    if name == "softmax":
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * ins["w"].astype(np.float64)


@pytest.mark.parametrize("make", [softmax, rmsnorm], ids=lambda f: f.__name__)
def test_lnc2_kernel_matches_numpy_on_interpreter_and_simulator(make):
    g = make(512, 256)
    k2 = nk.split_cores(nk.compile(g), 2)
    assert lnc_of(k2.nki) == 2
    rng = np.random.default_rng(0)
    ins = {n: rng.standard_normal(v.type.shape).astype(np.float32) for n, v in zip(g.input_names, g.inputs)}
    want = _numpy(make.__name__, ins)
    for got in (k2.run(ins)["y"], nk.simulate(k2, ins)["y"]):
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)
    src = k2.nki_source()
    assert "LNC = 2" in src and "pid = nl.program_id(0)" in src
    assert k2.custom_call()["grid"] == [2]
    text = str(k2.nki)
    assert str(nk.parse(text)) == text


@pytest.mark.parametrize("make", [softmax, rmsnorm], ids=lambda f: f.__name__)
def test_each_core_moves_half_the_row_bytes_of_the_2048x4096_kernel(make):
    k1 = nk.compile(make(2048, 4096))
    k2 = nk.split_cores(k1, 2)
    rows = 2 * 2048 * 4096 * 4  # x in, y out
    weight = 4096 * 4 if make is rmsnorm else 0  # both cores load the weight row
    assert k1.stats().dma_bytes == rows + weight
    assert k2.stats().dma_bytes == rows // 2 + weight
    assert k2.stats().instructions_dynamic < 0.51 * k1.stats().instructions_dynamic + 16


def test_cores_writing_the_same_output_elements_are_a_race_on_interpreter_and_simulator():
    b = nk.nki.Builder("race")
    x = b.add_input("x", (256, 64), nk.float32)
    y = b.alloc((128, 64), nk.float32, "hbm", name="y")
    b.program_id(2)  # both cores run the same program on the same rows
    t = b.alloc((128, 64))
    b.dma_copy(dst=t, src=x[0:128, :])
    b.dma_copy(dst=y, src=t)
    b.dealloc(t)
    b.set_outputs({"y": y})
    xs = {"x": np.ones((256, 64), np.float32)}
    with pytest.raises(nk.InterpretError, match=r"output y: element \[0, 0\] is written by cores \[0, 1\]"):
        nk.nki.run(b.graph, xs)
    from nkigen_lite.emit import emit_nki_source

    with pytest.raises(nk.InterpretError, match=r"written by more than one core"):
        nk.simulate(emit_nki_source(b.graph), xs)


def test_each_core_writes_its_share_through_the_program_id():
    b = nk.nki.Builder("halves")
    x = b.add_input("x", (256, 64), nk.float32)
    y = b.alloc((256, 64), nk.float32, "hbm", name="y")
    pid = b.program_id(2)
    t = b.alloc((128, 64))
    b.dma_copy(dst=t, src=x[ts(pid, 128), :])
    b.tensor_scalar(dst=t, data=t, op0="multiply", operand0=2.0)
    b.dma_copy(dst=y[ds(pid * 128, 128), :], src=t)
    b.dealloc(t)
    b.set_outputs({"y": y})
    x0 = np.random.default_rng(1).standard_normal((256, 64)).astype(np.float32)
    np.testing.assert_array_equal(nk.nki.run(b.graph, {"x": x0})["y"], x0 * 2)


def test_verifier_rules_for_the_program_id():
    for lnc, where, msg in (
        (3, "top", r"lnc 3: a logical NeuronCore groups 1 to 2"),
        (2, "loop", "top level"),
    ):
        b = nk.nki.Builder("bad")
        x = b.add_input("x", (128, 64), nk.float32)
        y = b.alloc((128, 64), nk.float32, "hbm", name="y")
        if where == "loop":
            with b.fori_loop(0, 1):
                b.program_id(lnc)
        else:
            b.program_id(lnc)
        b.dma_copy(dst=y, src=x)
        b.set_outputs({"y": y})
        with pytest.raises(nk.VerifyError, match=msg):
            nk.nki.verify(b.graph)


def test_split_refuses_what_it_cannot_share_out_race_free():
    k = nk.compile(softmax(384, 64))  # 3 row tiles: no loop whose trip count 2 divides
    with pytest.raises(nk.BuildError, match=r"no top-level loop whose trip count divides by lnc 2"):
        nk.split_cores(k, 2)
    with pytest.raises(nk.BuildError, match=r"already split"):
        nk.split_cores(nk.split_cores(nk.compile(softmax(256, 64)), 2), 2)
    assert not any(isinstance(op, ProgramIdOp) for op in nk.split_cores(k, 1).nki.walk())
