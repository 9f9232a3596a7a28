"""``nki.dma_transpose`` through every layer: the interpreter and the simulator (running the
emitted ``nisa.dma_transpose``) give ``np.transpose`` exactly for each documented rank; the
verifier and the simulator reject each documented hardware-DGE rule, naming op, value and rule;
the Kernel Builder emitter writes ``dma_transpose(dst, src, permutation)``; the cost rule charges
the measured DMA-transpose rate (335 GB/s from HBM, 215 GB/s from SBUF)."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.emit import emit_kb
from nkigen_lite.emit.nki_source import emit_nki_source
from nkigen_lite.emit.simulate import simulate
from nkigen_lite.nki.ops import DmaTransposeOp
from nkigen_lite.nki.target import TRN2
from nkigen_lite.nki_sim import NkiSimError
from nkigen_lite.perf.dma_cost import dma_cost
from tests.emit.kb_standin import FakeKernelBuilder

BF16 = nk.bfloat16

# (src view shape, its strides over a (4, 128, 128) input, axes) for each documented rank
CASES = {
    2: ((16, 128), (128, 1), (1, 0)),
    3: ((16, 8, 128), (128, 2048, 1), (2, 1, 0)),
    4: ((16, 4, 8, 128), (128, 16384, 2048, 1), (3, 1, 2, 0)),
}


def _kernel(shape, strides, dst_shape=None, dtype=BF16, via_sbuf=False, dst_space="sbuf"):
    """x (4, 128, 128) -> view -> dma_transpose -> y (the dst's shape in HBM)."""
    axes = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}.get(len(shape), tuple(reversed(range(len(shape)))))
    dst_shape = dst_shape or tuple(shape[a] for a in axes)
    b = nk.nki.Builder("dma_t")
    x = b.add_input("x", (4, 128, 128), dtype)
    y = b.alloc(dst_shape, dtype, "hbm", name="y")
    src = b.hbm_view(x, shape, strides, name="x_view")
    if via_sbuf:  # the same elements staged in SBUF in src's shape, then transposed SBUF -> SBUF
        s = b.alloc(shape, dtype, name="staged")
        b.dma_copy(dst=s, src=src)
        src = s
    t = b.alloc(dst_shape, dtype, dst_space, name="t")
    b.dma_transpose(dst=t, src=src)
    if dst_space == "psum":
        u = b.alloc(dst_shape, dtype, name="u")
        b.tensor_copy(dst=u, src=t, engine="vector")
        b.dma_copy(dst=y, src=u)
        b.dealloc(u)
    else:
        b.dma_copy(dst=y, src=t)
    b.dealloc(t)
    if via_sbuf:
        b.dealloc(s)
    b.set_outputs({"y": y})
    return b.graph


def _expected(x, shape, strides, axes):
    view = np.lib.stride_tricks.as_strided(x, shape, tuple(s * x.itemsize for s in strides))
    return np.transpose(view, axes)


X = (np.arange(4 * 128 * 128) % 251 - 125).astype(np.float32).reshape(4, 128, 128).astype(BF16.np_dtype)


@pytest.mark.parametrize("rank", sorted(CASES))
@pytest.mark.parametrize("via_sbuf", [False, True])
def test_interpreter_and_simulator_give_np_transpose_exactly(rank, via_sbuf):
    shape, strides, axes = CASES[rank]
    g = _kernel(shape, strides, via_sbuf=via_sbuf)
    want = _expected(X, shape, strides, axes)
    got = nk.nki.run(g, {"x": X})["y"]
    assert got.shape == want.shape and np.array_equal(got.view(np.uint16), want.view(np.uint16))
    src = emit_nki_source(g)
    assert "nisa.dma_transpose(dst=" in src and f"axes={axes!r}" in src
    assert "dge_mode=nisa.dge_mode.hwdge" in src
    sim = simulate(src, {"x": X})["y"]
    assert np.array_equal(np.asarray(sim).view(np.uint16), want.view(np.uint16))


def test_text_round_trip():
    g = _kernel(*CASES[4][:2])
    text = str(g)
    assert "nki.dma_transpose %t, %x_view" in text
    assert str(nk.parse(text)) == text


# (case, kernel kwargs, the rule's words in the verifier message, the simulator's)
BAD = {
    "dst_psum": (
        dict(shape=(16, 128), strides=(128, 1), dst_space="psum"),
        "dst is in PSUM",
        "must be in SBUF",
    ),
    "four_byte_dtype": (
        dict(shape=(16, 128), strides=(128, 1), dtype=nk.float32),
        "needs a 2-byte dtype",
        "2-byte",
    ),
    "rank_5": (
        dict(shape=(16, 2, 2, 2, 128), strides=(128, 16384, 8192, 2048, 1)),
        "only 2-D, 3-D and 4-D",
        "axes=",
    ),
    "wrong_permutation": (
        dict(shape=(16, 4, 8, 128), strides=(128, 16384, 2048, 1), dst_shape=(128, 8, 4, 16)),
        "must be src shape [16, 4, 8, 128] permuted by (3, 1, 2, 0)",
        "permuted src shape",
    ),
    "rows_not_16": (dict(shape=(32, 128), strides=(128, 1)), "src.shape[0] is 32", "src.shape[0] == 16"),
    "rows_8_for_4d": (
        dict(shape=(8, 4, 16, 128), strides=(128, 16384, 1024, 1)),
        "src.shape[0] is 8",
        "src.shape[0] == 16",
    ),
    "columns_64": (dict(shape=(16, 64), strides=(128, 1)), "src.shape[-1] is 64", "src.shape[-1]"),
    "strided_inner": (dict(shape=(16, 128), strides=(1, 128)), "element stride 128", "contiguous"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_each_documented_rule_is_rejected_by_verifier_interpreter_and_simulator(case):
    kwargs, verifier_words, sim_words = BAD[case]
    g = _kernel(**kwargs)
    with pytest.raises(nk.VerifyError) as e:
        nk.nki.verify(g)
    msg = str(e.value)
    assert msg.startswith("nki.dma_transpose: dma_transpose") and verifier_words in msg, msg
    assert "at: nki.dma_transpose %t, %x_view" in msg
    with pytest.raises(nk.VerifyError):
        nk.nki.run(g, {"x": X.astype(g.inputs[0].type.dtype.np_dtype)})
    with pytest.raises(NkiSimError, match="nisa.dma_transpose") as s:  # the emitted source, unverified
        simulate(emit_nki_source(g), {"x": X.astype(g.inputs[0].type.dtype.np_dtype)})
    assert sim_words in str(s.value)


def test_src_in_psum_is_rejected():
    b = nk.nki.Builder("dma_t_psum")
    x = b.add_input("x", (16, 128), BF16)
    y = b.alloc((128, 16), BF16, "hbm", name="y")
    s = b.alloc((16, 128), BF16, name="s")
    b.dma_copy(dst=s, src=x)
    p = b.alloc((16, 128), BF16, "psum", name="p")
    b.tensor_copy(dst=p, src=s, engine="vector")
    t = b.alloc((128, 16), BF16, name="t")
    b.dma_transpose(dst=t, src=p)
    b.dma_copy(dst=y, src=t)
    for v in (t, p, s):
        b.dealloc(v)
    b.set_outputs({"y": y})
    with pytest.raises(nk.VerifyError, match=r"nki.dma_transpose: dma_transpose src is in PSUM"):
        nk.nki.verify(b.graph)


def test_kernel_builder_writes_dma_transpose_with_the_permutation():
    g = _kernel(*CASES[4][:2])
    nb = FakeKernelBuilder()
    emit_kb(g, nb, target="trn2")
    calls = [c for c in nb.rec.calls if c.name == "isa.dma_transpose"]
    assert len(calls) == 1
    assert calls[0].kwargs["permutation"] == [3, 1, 2, 0]
    assert calls[0].kwargs["src"].shape == (16, 4, 8, 128) and calls[0].kwargs["dst"].shape == (128, 4, 8, 16)


@pytest.mark.parametrize("via_sbuf, rate", [(False, 335e9), (True, 215e9)])
def test_cost_is_the_measured_transpose_rate(via_sbuf, rate):
    g = _kernel(*CASES[4][:2], via_sbuf=via_sbuf)
    (op,) = [o for o in g.walk() if isinstance(o, DmaTransposeOp)]
    d = dma_cost(op, TRN2)
    nbytes = 128 * 4 * 8 * 16 * 2
    assert d.bytes == nbytes and d.engines == 16
    assert d.transfer_ns == pytest.approx(nbytes / rate * 1e9)
    assert d.hbm_bytes == (0 if via_sbuf else nbytes)
