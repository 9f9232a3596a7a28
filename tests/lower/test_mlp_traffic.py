"""HBM traffic of SwiGLU MLP blocks, per tensor (perf/traffic.py): the gate/up intermediate
stays on chip. Bounds are byte counts; numerics against float64 NumPy."""

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.perf.traffic import bytes_by_tensor, hbm_traffic
from nkigen_lite.transforms import canonicalize

from .qwen3_kernels import qwen3_layer_kernel

BF16 = ml_dtypes.bfloat16


def _silu(x):
    return x / (1 + np.exp(-x))


def fused_gate_up(x, w_gu, w_dn):
    """Qwen-style MLP with one fused gate/up weight split after the matmul, and a residual."""
    g, u = np.split(x @ w_gu, 2, axis=-1)
    return (_silu(g) * u) @ w_dn + x


def _inputs(seq, d, inter, seed=0):
    rng = np.random.default_rng(seed)
    return [
        rng.standard_normal((seq, d)).astype(BF16),
        (rng.standard_normal((d, 2 * inter)) / np.sqrt(d)).astype(BF16),
        (rng.standard_normal((inter, d)) / np.sqrt(inter)).astype(BF16),
    ]


def _reference(x, w_gu, w_dn):
    """float64 with the bf16 roundings the program performs (g, u, silu, act, the product)."""

    def r(a):
        return a.astype(BF16).astype(np.float64)

    x, w_gu, w_dn = (a.astype(np.float64) for a in (x, w_gu, w_dn))
    gu = r(x @ w_gu)
    g, u = np.split(gu, 2, axis=-1)
    act = r(r(_silu(g)) * u)
    return r(act @ w_dn) + x


def _scratch_writes(kern) -> int:
    return sum(d["write"] for t, d in bytes_by_tensor(kern.nki).items() if t.startswith("scratch"))


def test_traffic_rows_add_up_to_the_kernel_hbm_bytes():
    kern = nk.compile(fused_gate_up, *_inputs(256, 1024, 1024))
    rows = hbm_traffic(kern.nki)
    assert sum(r.nbytes for r in rows) == kern.stats().hbm_bytes
    by = bytes_by_tensor(kern.nki)
    assert by["w_dn"] == {"read": 1024 * 1024 * 2, "write": 0}
    assert by["y"] == {"read": 0, "write": 256 * 1024 * 2}


def test_split_of_a_fused_gate_up_product_becomes_two_projections():
    args = _inputs(256, 1024, 1024)
    g = nk.trace(fused_gate_up).trace(*args)
    assert canonicalize(g).get("SplitMatmulColumns") == 2
    kern = nk.compile(fused_gate_up, *args)
    # the (256, 2048) gate/up product (1 MiB) is never written to HBM: at most the down
    # projection's (256, 1024) result is (was 1 MiB + 512 KiB)
    assert _scratch_writes(kern) <= 256 * 1024 * 2
    assert bytes_by_tensor(kern.nki)["w_gu"]["read"] == args[1].nbytes
    got = kern(*args).astype(np.float64)
    want = _reference(*args)
    # bf16 outputs (unit-scale, |y| up to ~6): a few bf16 ulps of the largest value
    np.testing.assert_allclose(got, want, rtol=0, atol=0.03 * np.abs(want).max())


def test_a_product_used_whole_is_not_split():
    def h(x, w_gu, w_dn):
        p = x @ w_gu
        return p[:, :1024] @ w_dn + p.sum(-1, keepdims=True)

    assert not canonicalize(nk.trace(h).trace(*_inputs(128, 1024, 1024))).get("SplitMatmulColumns")


@pytest.mark.parametrize("seq", [512, 2048])
def test_qwen3_0_6b_layer_mlp_intermediate_stays_on_chip(seq):
    """The Qwen3-0.6B layer of benchmarks/model_targets.py (fused gate/up weight, bf16) with
    several row tiles: its 18 MiB of MLP weights do not fit SBUF beside a row pipeline; blocked
    over the intermediate dim (mlp_block.py) every weight is read once and no (seq, 3072)
    intermediate is written to HBM (was the (seq, 6144) gate/up product, written and read
    back). At seq 128 (one row tile) the fused prologue brings the block too
    (test_mlp_prologue.py)."""
    kern = qwen3_layer_kernel(seq)
    by = bytes_by_tensor(kern.nki)
    assert by["w_gu"]["read"] == 1024 * 6144 * 2 and by["w_dn"]["read"] == 3072 * 1024 * 2
    inter_bytes = seq * 3072 * 2
    big = {t: d for t, d in by.items() if t.startswith("scratch") and d["write"] >= inter_bytes}
    assert not big, big
    assert kern.stats().peak_sbuf_bytes <= nk.TRN2.sbuf_bytes_per_partition


def test_blocked_mlp_matches_float64_with_several_blocks_and_a_partial_row_tile():
    """560 rows (two pairs of row tiles in a loop, then 48 rows), intermediate 2048 in a loop
    of two blocks of 1024."""
    args = _inputs(560, 256, 2048, seed=1)
    g = nk.trace(fused_gate_up).trace(*args)
    kern = nk.compile(g)
    # the (560, 2048) intermediate never reaches HBM (at most the (560, 256) down result)
    assert _scratch_writes(kern) <= 560 * 256 * 2, bytes_by_tensor(kern.nki)
    ins = dict(zip(g.input_names, args))
    want = _reference(*args)
    tol = 0.03 * np.abs(want).max()  # bf16 roundings of g, u, act and y (a few ulps of max|y|)
    for got in (kern.run(ins)["y"], nk.simulate(kern, ins)["y"]):
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=0, atol=tol)
