"""Band masks (causal, sliding window) lower to one GpSimd affine_select per tile
(transforms/lower/affine_mask.py): no iota, compare or predicate copies are emitted, no mask
bytes cross HBM, and results match float64 NumPy bit for bit in the selection (numerics checked
on the NKI interpreter and the simulator)."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import AffineSelectOp, ForiLoopOp, IotaOp, SelectOp
from nkigen_lite.testing import assert_close


def _count(kern, cls) -> int:
    """Executed instructions of class ``cls`` (loop trip counts included)."""

    def walk(block, mult):
        n = 0
        for op in block:
            if isinstance(op, ForiLoopOp):
                n += walk(op.body, mult * op.trip_count)
            elif isinstance(op, cls):
                n += mult
        return n

    return walk(kern.nki.body, 1)


def _check(fn, x, kern):
    ref = fn(np.asarray(x, np.float64))
    assert_close(kern.run({"x": x})["y"], ref, nk.float32, what=f"{fn.__name__} on the interpreter")
    assert_close(nk.simulate(kern, {"x": x})["y"], ref, nk.float32, what=f"{fn.__name__} on the simulator")


def causal_additive(x):
    n = x.shape[-1]
    s = x + np.triu(np.full((n, n), -1e4, np.float32), 1)
    return np.exp(s - s.max(-1, keepdims=True))


def causal_where(x):
    n = x.shape[-1]
    s = np.where(np.tril(np.ones((n, n), bool)), x, -np.inf)
    return np.exp(s - s.max(-1, keepdims=True))


def sliding_window(x):
    """Each row keeps its 8 latest columns (8-wide causal band) — a constant band mask."""
    n = x.shape[-1]
    d = np.arange(n)[None, :] - np.arange(n)[:, None]
    s = x + np.where((d <= 0) & (d > -8), np.float32(0), np.float32(-1e4))
    return np.exp(s - s.max(-1, keepdims=True))


@pytest.mark.parametrize("fn", [causal_additive, causal_where, sliding_window])
def test_band_mask_is_affine_select_per_tile(fn):
    """300 rows: three row tiles (two full, one of 44 rows), heads 2: the mask's chain is folded
    into affine_selects (no iota, no predicate select) and nothing of the mask is read from
    HBM (traffic = the minimum)."""
    x = np.random.default_rng(0).standard_normal((2, 300, 300)).astype(np.float32)
    kern = nk.compile(fn, x)
    assert _count(kern, IotaOp) == 0
    assert _count(kern, SelectOp) == 0
    # one affine_select per (head, row tile) per band bound
    bounds = 2 if fn is sliding_window else 1
    assert _count(kern, AffineSelectOp) == 2 * 3 * bounds
    assert kern.stats().hbm_traffic_ratio == pytest.approx(1.0)
    _check(fn, x, kern)


def test_diagonal_offset_and_upper_triangle():
    """np.triu with k = 2 as an additive mask (keep where j - i < 2): offsets other than 0."""

    def fn(x):
        n = x.shape[-1]
        return x + np.triu(np.full((n, n), -5.0, np.float32), 2)

    x = np.random.default_rng(1).standard_normal((260, 260)).astype(np.float32)
    kern = nk.compile(fn, x)
    assert _count(kern, IotaOp) == 0 and _count(kern, AffineSelectOp) >= 1
    _check(fn, x, kern)


def test_qwen3_layer_mask_has_no_iota():
    """The registered Qwen3 layer (causal where(iota <= iota, s, -inf)): one affine_select on the
    scores per tile, no iota."""
    from nkigen_lite.workloads import get_workload

    w = get_workload("qwen3_layer")
    g = w.graph(seq=256, hidden=256, heads=4, kv_heads=2, head_dim=64, inter=256)
    kern = nk.compile(g)
    assert _count(kern, IotaOp) == 0
    assert _count(kern, AffineSelectOp) == 4 * 2  # (query head, row tile)
