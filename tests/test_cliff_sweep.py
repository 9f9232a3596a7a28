"""benchmarks/cliff_sweep.py rates one program per row; one tiny case here keeps the script
running (the full sweep stays out of the test suite)."""

from __future__ import annotations

import numpy as np

from benchmarks.cliff_sweep import CASES, measure


def test_one_row_is_rated():
    ratio, line, _ = measure("x[:, ::2] * 2", lambda x: x[:, ::2] * 2.0, [((128, 256), np.float32)])
    assert np.isfinite(ratio) and line.startswith("| x[:, ::2] * 2 | 128x256 | f32 |")
    assert len({name for name, _, _ in CASES}) == len(CASES)  # row names are unique
