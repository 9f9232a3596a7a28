"""A width-1 slice of a value computed in the same fusion group reads its own column
(frame.py: the slice's free-dim offset applied to an extent-1 dim): ``m[:, 1:2]`` read column 0
before, so ``m[:, :1] + m[:, 1:2]`` doubled column 0. Compared with NumPy through the NKI
interpreter and the simulator (tolerance 0: the sums are small integers, exact in float32)."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_width_one_slices_of_a_group_value_read_their_columns(dtype):
    def f(x):
        m = x[:, :3] + x[:, 3:6]
        return m[:, :1] + m[:, 1:2]

    x = np.random.default_rng(5).integers(1, 50, (4, 6)).astype(dtype)
    want = f(x.astype(np.float64)).astype(dtype)
    k = nk.compile(nk.trace(f).trace(x))
    for how, out in (("Kernel.run", k.run({"x": x})), ("nk.simulate", nk.simulate(k, {"x": x}))):
        (got,) = out.values()
        np.testing.assert_array_equal(got, want, err_msg=how)
