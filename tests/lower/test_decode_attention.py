"""A decode step's attention over a KV cache (canonical/decode_attention.py ->
tensor.decode_attention, lowered by lower/decode_attention.py): the op is formed from the
program a decoder writes, each cache is read once in one DMA per KV head with runs of whole
partitions' keys, the scores never reach HBM, and results match float64 NumPy (computed here,
independently) on the NKI interpreter and the simulator — at the cache's edges (pos 0, the last
row) and with NaN / inf in the masked key rows (the mask selects, it never adds).

Tolerance: bf16 output, rtol 2e-2 and atol 2e-2 · max(1, max|reference|) (the program rounds
the scores and the probabilities to bf16 before the value product)."""

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.ir.errors import BuildError
from nkigen_lite.nki.ops import AllocOp, DmaCopyOp, MatmulOp, TransposeOp
from nkigen_lite.nki.types import HbmType
from nkigen_lite.perf.layout import contiguous_run
from nkigen_lite.perf.traffic import bytes_by_tensor
from nkigen_lite.tensor.types import TensorType
from nkigen_lite.testing import assert_close
from nkigen_lite.transforms.lower.decode_attention import decode_attention_body, supported

from ..workload_kernels import workload_kernel

BF16 = ml_dtypes.bfloat16
TOL = 2e-2


def _decode(q, k_cache, v_cache, pos):
    """Attention of one token's query heads (G, R, D) over the caches (G, N, D) as a decoder
    writes it: bf16 scores, fp32 masked softmax, bf16 probabilities, bf16 result."""
    s = (q @ np.swapaxes(k_cache, -1, -2)).astype(np.float32) * np.float32(1 / np.sqrt(q.shape[-1]))
    s = np.where(np.arange(k_cache.shape[-2]) <= pos, s, np.float32(-np.inf))
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)).astype(q.dtype) @ v_cache


def _reference(q, k, v, pos):
    """float64: keys 0..pos of each KV head, shared by its R query heads."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    p = int(pos)
    s = np.einsum("grd,gnd->grn", q, k[:, : p + 1]) / np.sqrt(q.shape[-1])
    w = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("grn,gnd->grd", w / w.sum(-1, keepdims=True), v[:, : p + 1])


def _inputs(g, r, d, n, dv, pos, seed=0, garbage=False):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((g, r, d)).astype(BF16)
    k = rng.standard_normal((g, n, d)).astype(BF16)
    v = rng.standard_normal((g, n, dv)).astype(BF16)
    if garbage and pos + 1 < n:  # rows past pos are masked: whatever they hold must not leak
        k[:, pos + 1 :: 3] = np.inf
        k[:, pos + 2 :: 3] = np.nan
    return [q, k, v, np.asarray(pos, np.int32)]


def _close(got, ref, what):
    scale = max(1.0, float(np.abs(ref).max()))
    assert_close(got, ref, nk.bfloat16, what=what, rtol=TOL, atol=TOL * scale)


def _check(kern, arrays, what):
    feeds = dict(zip(kern.input_names, arrays))
    ref = _reference(*arrays)
    _close(kern.run(feeds)["y"], ref, f"{what}, NKI interpreter")
    _close(nk.simulate(kern, feeds)["y"], ref, f"{what}, simulator")


@pytest.mark.parametrize(
    ("shape", "pos"),
    [
        ((2, 2, 64, 256, 64), 0),  # the token sees only key 0
        ((2, 2, 64, 256, 64), 255),  # every key
        ((1, 4, 128, 128, 32), 77),  # one KV head, one key block (T = 1)
        ((4, 1, 32, 512, 128), 300),  # one query per KV head, four blocks per partition
    ],
)
def test_matches_float64_on_the_interpreter_and_the_simulator(shape, pos):
    arrays = _inputs(*shape, pos, seed=pos)
    kern = nk.compile(_decode, *arrays)
    assert "tensor.decode_attention" in kern.ir("cleanup")
    assert "tensor.exp" not in kern.ir("cleanup")
    _check(kern, arrays, f"decode attention {shape} at pos {pos}")


def test_masked_rows_holding_nan_and_inf_do_not_leak():
    arrays = _inputs(2, 2, 64, 256, 64, pos=100, seed=3, garbage=True)
    kern = nk.compile(_decode, *arrays)
    _check(kern, arrays, "decode attention over a cache with NaN / inf past pos")


def test_each_cache_is_read_once_in_one_dma_per_kv_head():
    """G = 4 KV heads of 512 keys: q, pos, 4 K and 4 V loads and one store; each cache DMA moves
    a head's keys with partition p holding keys 4p .. 4p + 3 contiguously (4 · 64 · 2 = 512 B)."""
    g, r, d, n, dv = 4, 2, 64, 512, 64
    arrays = _inputs(g, r, d, n, dv, pos=400)
    kern = nk.compile(_decode, *arrays)
    dmas = [op for op in kern.nki.walk() if isinstance(op, DmaCopyOp)]
    assert len(dmas) == 2 * g + 3
    read = bytes_by_tensor(kern.nki)
    names = kern.input_names
    assert read[names[1]] == {"read": g * n * d * 2, "write": 0}
    assert read[names[2]] == {"read": g * n * dv * 2, "write": 0}
    cache_loads = [
        op for op in dmas if op.access("src").partitions == 128 and op.access("dst").free_size > 64
    ]
    assert len(cache_loads) == 2 * g
    assert all(contiguous_run(op.access("src")) * 2 >= 512 for op in cache_loads)
    # no scratch: the only HBM tensor the kernel allocates is its output
    hbm = [op for op in kern.nki.walk() if isinstance(op, AllocOp) and isinstance(op.result.type, HbmType)]
    assert len(hbm) == 1
    # TensorE: q and the output transposed once, N/128 key blocks per head, the max's two
    # transposes; one score and one value matmul per head and block, one for the sum
    t = n // 128
    assert sum(isinstance(op, TransposeOp) for op in kern.nki.walk()) == g * t + 4
    assert sum(isinstance(op, MatmulOp) for op in kern.nki.walk()) == 2 * g * t + 1


def test_full_size_decode_step_attention_moves_the_caches_in_16_dmas():
    """The Qwen3-0.6B decode step: the attention's cache loads are 8 per cache, at least
    8 KiB contiguous per partition (4096 keys · 128 · 2 B / 128 partitions)."""
    kern = workload_kernel("qwen3_decode")
    assert "tensor.decode_attention" in kern.ir("cleanup")
    loads = [
        op
        for op in kern.nki.walk()
        if isinstance(op, DmaCopyOp)
        and "decode_attention" in (op.loc or "")
        and op.access("dst").free_size == 4096
    ]
    assert len(loads) == 16
    assert all(contiguous_run(op.access("src")) * 2 >= 8192 for op in loads)


def test_not_formed_when_the_keys_are_not_a_multiple_of_128():
    arrays = _inputs(2, 2, 64, 200, 64, pos=150, seed=5)
    assert not supported((2, 2, 64), (2, 200, 64), (2, 200, 64), "bf16")
    kern = nk.compile(_decode, *arrays)
    assert "tensor.decode_attention" not in kern.ir("cleanup")
    feeds = dict(zip(kern.input_names, arrays))
    _close(kern.run(feeds)["y"], _reference(*arrays), "decode attention over 200 keys (not formed)")


def test_not_formed_for_f32_caches():
    arrays = [a.astype(np.float32) if a.dtype == BF16 else a for a in _inputs(2, 2, 64, 256, 64, pos=9)]
    kern = nk.compile(_decode, *arrays)
    assert "tensor.decode_attention" not in kern.ir("cleanup")


def test_the_kernel_refuses_shapes_it_does_not_take():
    bf = nk.bfloat16
    types = [TensorType(s, bf) for s in ((2, 2, 64), (2, 200, 64), (2, 200, 64))] + [TensorType((), nk.int32)]
    with pytest.raises(BuildError, match=r"tensor.decode_attention .*N a multiple of 128"):
        decode_attention_body(types, {"scale": 0.125})
