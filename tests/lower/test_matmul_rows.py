"""Batched activations times one weight (transforms/lower/matmul_rows.py): ``(..., M, K) @ (K,
N)`` runs as one ``(B·M, K) @ (K, N)`` matmul when A's batch dims merge with its rows, so B is
read once. Counts from the NKI IR of model-sized kernels (compile only); results against
float64 NumPy on both interpreters at small shapes.

Tolerances: bf16 results rtol 1e-2 with atol 1e-2 x the reference's largest magnitude (one bf16
rounding of an fp32 sum of K products); f32 rtol = atol 1e-4 (fp32 matmul on TensorE)."""

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk

BF16 = ml_dtypes.bfloat16


def _abstract(fn, *specs):
    args = [nk.TensorType(s, nk.get_dtype(d)) for s, d in specs]
    return nk.compile(nk.trace(fn).trace(*args))


@pytest.mark.parametrize("bias", [False, True], ids=["plain", "bias"])
def test_batched_activation_reads_the_weight_once(bias):
    # (4, 512, 1024) @ (1024, 4096) bf16 was 4 matmuls each loading w: traffic 1.86x (plain),
    # or a row pipeline at 297.3 us (with + b); now 228.0 / 228.6 us, the 2-D matmul's
    # instructions (here at a quarter of the size)
    w, b = ((512, 2048), "bf16"), ((2048,), "bf16")
    if bias:
        k = _abstract(lambda x, w, b: x @ w + b, ((4, 256, 512), "bf16"), w, b)
        flat = _abstract(lambda x, w, b: x @ w + b, ((1024, 512), "bf16"), w, b)
    else:
        k = _abstract(lambda x, w: x @ w, ((4, 256, 512), "bf16"), w)
        flat = _abstract(lambda x, w: x @ w, ((1024, 512), "bf16"), w)
    st, sf = k.stats(), flat.stats()
    assert st.hbm_traffic_ratio == 1.0
    assert st.dma_bytes == sf.dma_bytes
    assert st.dynamic_by_engine == sf.dynamic_by_engine


CASES = [
    # 2 x 200 rows: M tiles span the two instances (128, 128, 128, 16)
    ("3-D", lambda x, w: x @ w, (2, 200, 256), (256, 640), BF16),
    ("3-D f32", lambda x, w: x @ w, (2, 200, 256), (256, 640), np.float32),
    ("4-D", lambda x, w: x @ w, (2, 3, 40, 256), (256, 384), BF16),
    ("bias", lambda x, w: x @ w + w[0], (3, 100, 256), (256, 640), BF16),
    ("w.T", lambda x, w: x @ w.T, (2, 200, 256), (640, 256), BF16),
    # A's batch dims do not merge with its rows: one matmul per instance, as before
    ("permuted A", lambda x, w: x.transpose(1, 0, 2) @ w, (200, 2, 256), (256, 640), BF16),
]


@pytest.mark.parametrize(("name", "fn", "xs", "ws", "dt"), CASES, ids=[c[0] for c in CASES])
def test_batched_rows_match_numpy(name, fn, xs, ws, dt):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(xs).astype(dt)
    w = (rng.standard_normal(ws) / np.sqrt(xs[-1])).astype(dt)
    k = nk.compile(fn, x, w)
    ref = fn(x.astype(np.float64), w.astype(np.float64))
    tol = 1e-2 if dt is BF16 else 1e-4
    atol = tol * np.abs(ref).max()
    np.testing.assert_allclose(np.asarray(k(x, w), np.float64), ref, rtol=tol, atol=atol)
    out = nk.simulate(k, {"x": x, "w": w})["y"]
    np.testing.assert_allclose(np.asarray(out, np.float64), ref, rtol=tol, atol=atol)
