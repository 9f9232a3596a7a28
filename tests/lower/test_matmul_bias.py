"""Bias epilogues (transforms/lower/matmul_bias.py): ``x @ w + b`` with ``b`` a row adds the
bias while VectorE evacuates C's PSUM banks, instead of a separate pass over C. Counts are read
off the NKI IR of a model-sized kernel (compile only); results are compared with float64 NumPy
on both interpreters at small shapes.

Tolerances: bf16 results rtol 1e-2 with atol 1e-2 x the reference's largest magnitude (one
bf16 rounding of an fp32 sum of K products); f32 rtol = atol 1e-4 (an fp32 matmul of K = 256
terms, reduced precision on TensorE)."""

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaTransposeOp, MatmulOp, TensorCopyOp, TensorTensorOp
from nkigen_lite.nki.types import MemorySpace

BF16 = ml_dtypes.bfloat16


def _abstract(fn, *specs):
    args = [nk.TensorType(s, nk.get_dtype(d)) for s, d in specs]
    return nk.compile(nk.trace(fn).trace(*args))


def _bias_adds(k) -> list:
    """VectorE additions reading a PSUM bank: the evacuations that add the bias."""
    return [
        op
        for op in k.nki.walk()
        if isinstance(op, TensorTensorOp)
        and op.attrs["op"] == "add"
        and op.access("data1").space is MemorySpace.PSUM
    ]


def _copies_from_acc(k) -> list:
    return [
        op
        for op in k.nki.walk()
        if isinstance(op, TensorCopyOp) and op.access("src").tensor.name_hint == "acc"
    ]


def test_linear_layer_adds_the_bias_in_the_evacuation():
    x, w, b = ((2048, 1024), "bf16"), ((1024, 4096), "bf16"), ((4096,), "bf16")
    k = _abstract(lambda x, w, b: x @ w + b, x, w, b)
    plain = _abstract(lambda x, w: x @ w, x, w)
    st, sp = k.stats(), plain.stats()
    # 16 M tiles x 8 PSUM banks of 512 columns: every evacuation adds, none only copies
    assert st.dynamic_by_engine.get("gpsimd", 0) == 0
    assert len(_copies_from_acc(k)) == 0
    assert sum(isinstance(op, TensorTensorOp) for op in k.nki.walk()) == len(_bias_adds(k))
    # VectorE: the plain matmul's evacuations (adding instead of copying; the plain kernel's
    # copies, its only VectorE / ScalarE work with A DMA-transposed, may run on either
    # engine), plus the ones row's memset
    plain_evacuations = sp.dynamic_by_engine.get("vector", 0) + sp.dynamic_by_engine.get("scalar", 0)
    assert st.dynamic_by_engine["vector"] == plain_evacuations + 1
    # TensorE: the plain matmul's instructions plus 8 ones-matmuls broadcasting b once
    assert st.dynamic_by_engine["tensor"] == sp.dynamic_by_engine["tensor"] + 8
    # HBM: x, w, b read once, y written once
    assert st.hbm_traffic_ratio == 1.0
    assert st.dma_bytes == sp.dma_bytes + 4096 * 2


def test_a_following_activation_reads_the_biased_row_tile():
    x, w, b = ((512, 256), "bf16"), ((256, 1024), "bf16"), ((1024,), "bf16")
    k = _abstract(lambda x, w, b: np.maximum(x @ w + b, 0.0), x, w, b)
    adds = [op for op in k.nki.walk() if isinstance(op, TensorTensorOp) and op.attrs["op"] == "add"]
    assert len(_bias_adds(k)) == len(adds) == 2  # one per bank in the row loop, and no other


def test_matmul_result_used_twice_keeps_its_copy():
    # C is returned as well: it must exist without the bias, so nothing is fused
    x, w, b = ((256, 256), "bf16"), ((256, 512), "bf16"), ((512,), "bf16")
    k = _abstract(lambda x, w, b: (x @ w, x @ w + b), x, w, b)
    assert not _bias_adds(k)


def test_batched_rows_keep_the_weight_resident():
    x, w, b = ((4, 512, 1024), "bf16"), ((1024, 4096), "bf16"), ((4096,), "bf16")
    st = _abstract(lambda x, w, b: x @ w + b, x, w, b).stats()
    assert st.hbm_traffic_ratio == 1.0  # w read once, not once per batch instance
    assert st.dynamic_by_engine.get("gpsimd", 0) == 0


def test_linear_layer_with_transposed_weight_adds_the_bias_in_the_evacuation():
    # x @ w.T + b (PyTorch Linear layout): w DMA-transposed, the add fused (was a pass of its
    # own, 262.1 -> 228.8 us scheduled)
    x, w, b = ((2048, 1024), "bf16"), ((4096, 1024), "bf16"), ((4096,), "bf16")
    k = _abstract(lambda x, w, b: x @ w.T + b, x, w, b)
    plain = _abstract(lambda x, w: x @ w.T, x, w)
    st, sp = k.stats(), plain.stats()
    assert len(_bias_adds(k)) == sum(isinstance(op, TensorTensorOp) for op in k.nki.walk()) > 0
    assert len(_copies_from_acc(k)) == 0
    assert st.dynamic_by_engine.get("gpsimd", 0) == 0
    assert any(isinstance(op, DmaTransposeOp) for op in k.nki.walk())
    assert st.dynamic_by_engine["tensor"] == sp.dynamic_by_engine["tensor"] + 8
    assert st.hbm_traffic_ratio == 1.0
    assert st.dma_bytes == sp.dma_bytes + 4096 * 2


def test_column_bias_is_not_a_row_epilogue():
    x, w, c = ((256, 256), "bf16"), ((256, 512), "bf16"), ((256, 1), "bf16")
    assert not _bias_adds(_abstract(lambda x, w, c: x @ w + c, x, w, c))


def _silu(z):
    return z / (1.0 + np.exp(-z))


CASES = [
    # 3 M tiles (128, 128, 44), a partial PSUM bank (640 columns): the standalone matmul
    ("rows", lambda x, w, b: x @ w + b, (300, 256), (256, 640), (640,), BF16),
    ("f32", lambda x, w, b: x @ w + b, (300, 256), (256, 640), (640,), np.float32),
    ("(1, N) bias", lambda x, w, b: x @ w + b, (256, 256), (256, 640), (1, 640), BF16),
    ("bias first", lambda x, w, b: b + x @ w, (256, 256), (256, 640), (640,), BF16),
    ("one M tile", lambda x, w, b: x @ w + b, (100, 256), (256, 640), (640,), BF16),
    # row pipelines: the biased row tile read by a following group or matmul on chip
    ("relu", lambda x, w, b: np.maximum(x @ w + b, 0.0), (256, 256), (256, 640), (640,), BF16),
    ("silu", lambda x, w, b: _silu(x @ w + b), (256, 256), (256, 640), (640,), BF16),
    ("batched rows", lambda x, w, b: x @ w + b, (2, 128, 256), (256, 640), (640,), BF16),
    ("then a matmul", lambda x, w, b: (x @ w + b) @ w.T, (256, 256), (256, 640), (640,), BF16),
    # transposed weights (x @ w.T + b): bf16 B DMA-transposed, fp32 B and K = 320 (a partial
    # K chunk) transposed on TensorE
    ("w.T", lambda x, w, b: x @ w.T + b, (300, 256), (640, 256), (640,), BF16),
    ("w.T f32", lambda x, w, b: x @ w.T + b, (300, 256), (640, 256), (640,), np.float32),
    ("w.T K 320", lambda x, w, b: x @ w.T + b, (256, 320), (640, 320), (640,), BF16),
]


@pytest.mark.parametrize(("name", "fn", "xs", "ws", "bs", "dt"), CASES, ids=[c[0] for c in CASES])
def test_biased_matmuls_match_numpy(name, fn, xs, ws, bs, dt):
    rng = np.random.default_rng(5)
    x = rng.standard_normal(xs).astype(dt)
    w = (rng.standard_normal(ws) / np.sqrt(xs[-1])).astype(dt)
    b = rng.standard_normal(bs).astype(dt)
    k = nk.compile(fn, x, w, b)
    assert _bias_adds(k), name
    ref = fn(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64))
    tol = 1e-2 if dt is BF16 else 1e-4
    atol = tol * np.abs(ref).max()
    np.testing.assert_allclose(np.asarray(k(x, w, b), np.float64), ref, rtol=tol, atol=atol)
    out = nk.simulate(k, {"x": x, "w": w, "b": b})["y"]
    np.testing.assert_allclose(np.asarray(out, np.float64), ref, rtol=tol, atol=atol)
    assert any(
        isinstance(op, MatmulOp) and op.access("stationary").tensor.name_hint == "ones" for op in k.nki.walk()
    )
