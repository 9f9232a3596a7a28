"""Rotating-buffer planning after lowering (transforms/lower/rotation.py): loop-body tiles get
two buffers (loads three) where the kernel's SBUF and PSUM peaks still fit, never where they
do not, and the rotated kernels compute the same results on the NKI interpreter and on the
simulator."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki import ds
from nkigen_lite.nki.ops import AllocOp
from nkigen_lite.transforms.lower.deallocs import insert_deallocs
from nkigen_lite.transforms.lower.rotation import plan_rotation

F32 = nk.float32


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _bufs(graph) -> dict[str, int]:
    """The most buffers of an allocation per source location (a pipelined loop's prologue and
    epilogue copies of a tile run once, outside the loop, stage_pipeline.py)."""
    out: dict[str, int] = {}
    for op in graph.walk():
        if isinstance(op, AllocOp) and op.loc:
            out[op.loc] = max(out.get(op.loc, 0), op.bufs)
    return out


def test_softmax_rows_rotate_loads_and_stores_and_stay_exact():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2048, 512)).astype(np.float32)  # 16 row tiles of 2 KiB rows: a loop
    k = nk.compile(_softmax, x)
    bufs = _bufs(k.nki)
    assert bufs["load %x"] == 3  # loads rotate three deep where SBUF allows
    assert any(loc.startswith("tensor.mul") and n == 2 for loc, n in bufs.items())  # the stored tile
    assert k.stats().peak_sbuf_bytes <= nk.TRN2.sbuf_bytes_per_partition
    ref = _softmax(x.astype(np.float64))
    np.testing.assert_allclose(k(x), ref, rtol=1e-5, atol=1e-7)  # f32 exp / reciprocal
    np.testing.assert_allclose(nk.simulate(k, {"x": x})["y"], ref, rtol=1e-5, atol=1e-7)


def _loop_with_tile(cols: int) -> nk.Graph:
    b = nk.nki.Builder("wide")
    x = b.add_input("x", (512, 512), F32)
    y = b.alloc((512, 512), F32, "hbm", name="y")
    with b.fori_loop(0, 4) as i:
        b.loc = "load"
        t = b.alloc((128, cols), F32)
        b.dma_copy(t[:, 0:512], x[ds(i * 128, 128), :])
        b.loc = "store"
        b.dma_copy(y[ds(i * 128, 128), :], t[:, 0:512])
    b.set_outputs({"y": y})
    insert_deallocs(b.graph.body)
    return b.graph


@pytest.mark.parametrize(("fraction", "expected"), [(0.3, 3), (0.4, 2), (0.6, 1)])
def test_rotation_only_where_the_extra_buffer_fits(fraction, expected):
    cols = int(nk.TRN2.sbuf_bytes_per_partition * fraction) // 4
    g = _loop_with_tile(cols)
    assert plan_rotation(g, nk.TRN2) == (expected > 1)
    assert _bufs(g)["load"] == expected
    nk.nki.verify(g)
    x = np.arange(512 * 512, dtype=np.float32).reshape(512, 512)
    np.testing.assert_array_equal(nk.nki.run(g, {"x": x})["y"], x)


def test_a_rotated_matmul_stays_within_psum_and_exact():
    rng = np.random.default_rng(1)
    # 32 M tiles: lead tiles and a follower peeled (matmul_lead.py), the rest in a rotated loop
    # (768 rows, 6 M tiles, now run straight without a loop: nothing rotates there)
    a = rng.standard_normal((4096, 512)).astype(np.float32)
    w = rng.standard_normal((512, 512)).astype(np.float32)
    k = nk.compile(lambda a, w: a @ w, a, w)
    rotated = {op.result.type.space.value for op in k.nki.walk() if isinstance(op, AllocOp) and op.bufs >= 2}
    assert rotated == {"sbuf", "psum"}
    assert k.stats().peak_psum_bytes <= nk.TRN2.psum_bytes_per_partition
    ref = a.astype(np.float64) @ w
    np.testing.assert_allclose(k(a, w), ref, rtol=1e-4, atol=1e-3)  # fp32 matmul, K = 512
    np.testing.assert_allclose(nk.simulate(k, {"a": a, "w": w})["y"], ref, rtol=1e-4, atol=1e-3)
