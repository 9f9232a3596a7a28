"""A concat along a narrow last axis (``np.stack([...], -1)``, the interleaved RoPE's output) is
assembled on chip (transforms/lower/concat_last.py): per block of rows each part is loaded
contiguously, placed at its columns by an engine copy, and the tile is stored contiguously,
instead of one 4-byte DMA descriptor per element (RoPE interleaved 2048x32x128: 61.7x -> 5.0x
roofline).

Compared with NumPy float64 on the same inputs, through the NKI interpreter and the simulator:
float32 results within 1e-6 of the largest magnitude (one or two f32 roundings; a * c - b * s
may cancel, so the bound is absolute), int32 exactly. DMA descriptor sizes are asserted."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import DmaCopyOp
from nkigen_lite.nki.target import TRN2
from nkigen_lite.perf.dma_cost import dma_cost

RNG = np.random.default_rng(4242)
BF16 = ml_dtypes.bfloat16


def rope_interleaved(x, c, s):
    a, b = x[..., ::2], x[..., 1::2]
    return np.stack([a * c - b * s, a * s + b * c], -1).reshape(x.shape)


def _normal(shape, dtype):
    return RNG.standard_normal(shape).astype(dtype)


CASES = [
    (
        rope_interleaved,
        lambda: [
            _normal((130, 4, 64), BF16),
            _normal((130, 1, 32), np.float32),
            _normal((130, 1, 32), np.float32),
        ],
    ),
    (
        lambda a, b: np.stack([a * 2, b + 1], -1),
        lambda: [_normal((300, 7), np.float32), _normal((300, 7), np.float32)],
    ),
    (
        lambda a, b, c: np.stack([a + 1, b * 3, c - 2], -1),
        lambda: [RNG.integers(-99, 99, (64, 33)).astype(np.int32) for _ in range(3)],
    ),
]


@pytest.mark.parametrize("fn, make", CASES, ids=["rope-interleaved", "stack2-f32", "stack3-i32"])
def test_stack_on_the_last_axis_matches_numpy(fn, make):
    xs = make()
    k = nk.compile(nk.trace(fn).trace(*xs))
    ins = dict(zip(k.input_names, xs))
    want = fn(*[x.astype(np.float64) for x in xs])
    for how, out in (("Kernel.run", k.run(ins)), ("nk.simulate", nk.simulate(k, ins))):
        (got,) = out.values()
        assert got.shape == want.shape, how
        if got.dtype == np.int32:
            np.testing.assert_array_equal(got, want, err_msg=how)
        else:
            atol = 1e-6 * np.abs(want).max()
            np.testing.assert_allclose(got.astype(np.float64), want, rtol=0, atol=atol, err_msg=how)
    for op in k.nki.walk():  # no element-wise descriptors (each part's rows are whole)
        if isinstance(op, DmaCopyOp):
            assert dma_cost(op, TRN2).chunk_bytes > 4


def test_interleaved_rope_at_model_size_counts():
    """2048x32x128 bf16, cos / sin f32: no descriptor under 128 B, under 6x the roofline (was
    4-byte descriptors for the stack's two halves, 61.7x)."""
    xs = [((2048, 32, 128), nk.bfloat16), ((2048, 1, 64), nk.float32), ((2048, 1, 64), nk.float32)]
    k = nk.compile(nk.trace(rope_interleaved).trace(*[nk.TensorType(s, d) for s, d in xs]))
    dmas = [op for op in k.nki.walk() if isinstance(op, DmaCopyOp)]
    assert min(dma_cost(op, TRN2).chunk_bytes for op in dmas) >= 128
    assert k.estimate().ratio < 6
