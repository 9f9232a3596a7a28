"""argmax / argmin of bf16 and fp16 rows on the rows-at-once path with the NaN key -FLT_MAX
(topk_sentinel.py): one find_index8 per row gives the first NaN and the first
maximum. Results are compared exactly with NumPy on float64 copies of the inputs, through the
NKI interpreter (Kernel.run) and nk.simulate; the positions are integers, so no tolerance."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.nki.ops import FindIndex8Op
from nkigen_lite.nki.target import TRN2
from nkigen_lite.transforms.lower.topk import fold_factor

ROWS, N = 5, 40000


def _rows(dt, nkdt) -> np.ndarray:
    """Row 0: +inf before two NaNs (the first NaN wins); row 1: all NaN; row 2: ties across
    partitions at both extremes; row 3: one partition's segment of -inf holding a single NaN
    (that segment's max is the NaN key itself) and a later NaN; row 4: plain."""
    rng = np.random.default_rng(7)
    x = rng.integers(-50, 50, (ROWS, N)).astype(np.float64)
    seg = N // fold_factor(ROWS, N, 1, nkdt, TRN2)
    x[0, 3], x[0, 5], x[0, N - 2], x[0, N - 1] = np.inf, -np.inf, np.nan, np.nan
    x[1] = np.nan
    x[2, 7] = x[2, N - 3] = 1000.0
    x[2, 8] = x[2, 2 * seg + 1] = -1000.0
    x[3, seg : 2 * seg] = -np.inf
    x[3, seg + 5] = x[3, 3 * seg + 2] = np.nan
    return x.astype(dt)


@pytest.mark.parametrize("fn", [np.argmax, np.argmin], ids=["argmax", "argmin"])
@pytest.mark.parametrize(
    ("dt", "nkdt"), [(ml_dtypes.bfloat16, nk.bfloat16), (np.float16, nk.float16)], ids=["bf16", "f16"]
)
def test_nan_inf_and_ties_as_numpy(fn, dt, nkdt):
    x = _rows(dt, nkdt)
    k = nk.compile(lambda x: fn(x, axis=-1), x)
    # one find_index8 per row (the keys'; none for the NaN mask) and the merge's none
    assert sum(isinstance(op, FindIndex8Op) for op in k.nki.walk()) == ROWS
    want = fn(x.astype(np.float64), axis=-1)
    for got in (k.run({"x": x})["y"], nk.simulate(k, {"x": x})["y"]):
        np.testing.assert_array_equal(got, want)


def test_greedy_bf16_vocab_one_find_index8_per_row():
    """8 x 151,936 bf16 logits (compile only): 8 find_index8 where the mask's own pass made 16."""
    b = nk.Builder("greedy")
    x = b.add_input("x", (8, 151936), nk.bfloat16)
    b.set_outputs({"y": b.argmax(x, axis=-1)})
    k = nk.compile(b.graph)
    assert sum(isinstance(op, FindIndex8Op) for op in k.nki.walk()) == 8
