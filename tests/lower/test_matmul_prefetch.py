"""Weight prefetch (transforms/lower/matmul_prefetch.py): a row pipeline of one row instance
(decode: one token) loads all of its matmul's B into tiles of their own, issued before the
first matmul, instead of streaming it through a rotating tile in the K loop. Counted on the
NKI IR: where the weight DMAs sit, how many and how large; results against float64 NumPy."""

import ml_dtypes
import numpy as np

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp, ForiLoopOp, HbmViewOp, MatmulOp

BF16 = ml_dtypes.bfloat16


def _decode(x, w_in, w):
    v = x.astype(np.float32)
    h = (v / np.sqrt((v * v).mean(-1, keepdims=True) + 1e-6)).astype(x.dtype) * w_in
    return h @ w


def _inputs(d, n, seed=0):
    rng = np.random.default_rng(seed)
    return [
        rng.standard_normal((1, d)).astype(BF16),
        (1 + 0.1 * rng.standard_normal(d)).astype(BF16),
        (rng.standard_normal((d, n)) / np.sqrt(d)).astype(BF16),
    ]


def _root(v):
    op = v.defining_op
    return op.operand(0) if isinstance(op, HbmViewOp) else v


def _weight_dmas(kern, name="w"):
    """(DMA op, inside a loop?) for every DMA reading the input ``name``, in program order,
    and the program-order position of the first nc_matmul among all instructions."""
    g = kern.nki
    w = g.inputs[g.input_names.index(name)]
    out, order = [], []

    def walk(block, in_loop):
        for op in block:
            if isinstance(op, ForiLoopOp):
                walk(op.body, True)
                continue
            order.append(op)
            if isinstance(op, DmaCopyOp) and _root(op.access("src").tensor) is w:
                out.append((op, in_loop))

    walk(g.body, False)
    first_mm = next(i for i, op in enumerate(order) if isinstance(op, MatmulOp))
    return out, [order.index(op) for op, _ in out], first_mm


def test_decode_weights_are_prefetched_before_the_first_matmul():
    args = _inputs(1024, 4096)
    kern = nk.compile(_decode, *args)
    dmas, pos, first_mm = _weight_dmas(kern)
    # two N blocks of 2048 columns x 8 K chunks: 16 DMAs of 128 x 2048 bf16 (4 KiB per partition)
    assert len(dmas) == 16
    assert not any(in_loop for _, in_loop in dmas)
    assert all(p < first_mm for p in pos)
    tiles = {op.access("dst").tensor for op, _ in dmas}
    assert len(tiles) == 16
    assert all(t.defining_op.bufs == 1 for t in tiles)
    assert all(t.type.shape == (128, 1, 2048) for t in tiles)
    # read once: the traffic is the minimum
    assert kern.stats().hbm_traffic_ratio == 1.0


def test_decode_prefetch_computes_the_projection():
    args = _inputs(1024, 4096, seed=1)
    kern = nk.compile(_decode, *args)
    x, w_in, w = (a.astype(np.float64) for a in args)
    h = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w_in
    ref = h @ w
    # h is rounded to bf16 before the matmul (rel 2^-8 per element, independent over K = 1024:
    # ~2^-8 * sqrt(K) * |h||w| ~ 2^-8 of the output scale), fp32 accumulation, bf16 output
    # (rel 2^-8): 3e-2 of the largest output bounds both
    np.testing.assert_allclose(kern(*args).astype(np.float64), ref, rtol=0, atol=3e-2 * np.abs(ref).max())


def test_row_tiles_keep_streaming_or_resident_weights():
    # several row instances: the weights are resident (resident.py) or streamed, never prefetched
    rng = np.random.default_rng(2)
    args = [
        rng.standard_normal((256, 256)).astype(BF16),
        (1 + 0.1 * rng.standard_normal(256)).astype(BF16),
        (rng.standard_normal((256, 512)) / 16).astype(BF16),
    ]
    kern = nk.compile(_decode, *args)
    names = [str(op.result.name_hint) for op in kern.nki.walk() if op.name == "nki.alloc"]
    assert not any("w_prefetch" in n for n in names)


def test_a_weight_that_does_not_fit_is_streamed():
    # 1 x 4096 @ 4096 x 8192 bf16: 512 KiB per partition does not fit SBUF
    rng = np.random.default_rng(3)
    args = [
        rng.standard_normal((1, 4096)).astype(BF16),
        np.ones(4096, BF16),
        (rng.standard_normal((4096, 8192)) / 64).astype(BF16),
    ]
    kern = nk.compile(_decode, *args)
    dmas, _, _ = _weight_dmas(kern)
    assert any(in_loop for _, in_loop in dmas)


def test_standalone_one_row_matmul_stages_a_in_one_dma_and_prefetches_b():
    # x @ W alone (no pipeline): Aᵀ (1024 x 1, K-major) was 8 DMAs into one tile, each waiting
    # for the one before; now one DMA for the full chunks, and B is prefetched as in decode
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 1024)).astype(BF16)
    w = (rng.standard_normal((1024, 4096)) / 32).astype(BF16)
    kern = nk.compile(lambda x, w: x @ w, x, w)
    a_dmas, _, _ = _weight_dmas(kern, "x")
    assert len(a_dmas) == 1
    assert a_dmas[0][0].access("dst").tensor.type.shape == (128, 8, 1)
    dmas, pos, first_mm = _weight_dmas(kern, "w")
    assert len(dmas) == 16 and not any(in_loop for _, in_loop in dmas)
    assert all(p < first_mm for p in pos)
    ref = x.astype(np.float64) @ w.astype(np.float64)
    # bf16 operands, fp32 accumulation, one bf16 rounding of the result (2^-8 relative)
    np.testing.assert_allclose(kern(x, w).astype(np.float64), ref, rtol=1e-2, atol=1e-2 * np.abs(ref).max())


def test_k_major_a_with_a_partial_chunk_and_prefetched_b_match_numpy():
    # A = a.T (K-major in HBM, K = 2 x 128 + 44): one DMA for the full chunks plus one for the
    # partial chunk; B (300 x 900 f32) prefetched in two N blocks of 512 and 388 columns
    rng = np.random.default_rng(5)
    a = rng.standard_normal((300, 64)).astype(np.float32)
    b = rng.standard_normal((300, 900)).astype(np.float32)
    kern = nk.compile(lambda a, b: a.T @ b, a, b)
    a_dmas, _, _ = _weight_dmas(kern, "a")
    assert len(a_dmas) == 2
    names = [str(op.result.name_hint) for op in kern.nki.walk() if op.name == "nki.alloc"]
    assert "w_prefetch" in names
    ref = a.astype(np.float64).T @ b.astype(np.float64)
    # fp32 matmul, 300 terms: rtol 1e-4 of the output scale
    tol = 1e-4 * np.abs(ref).max()
    np.testing.assert_allclose(kern(a, b), ref, rtol=1e-4, atol=tol)
    np.testing.assert_allclose(nk.simulate(kern, {"a": a, "b": b})["y"], ref, rtol=1e-4, atol=tol)
