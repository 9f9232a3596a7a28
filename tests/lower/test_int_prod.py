"""Integer products along a free axis wrap mod 2**32 like NumPy's (narrowed to 32 bits): the
fp32 multiply reduction rounded and saturated (2147483647), so ProdByTree
(decomposition/reductions.py) multiplies pairwise with the wrapping int32 multiply
(lowering/wide_int_arith.py). Compared exactly (tolerance 0) through nk.run, Kernel.run and
nk.simulate; the reference is the product in uint64 (mod 2**64), reduced mod 2**32."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk

from .test_wide_int_cast import _three_ways


def _want(x, dtype) -> np.ndarray:
    u = np.ones(x.shape[0], np.uint64)
    for col in x.T.astype(np.int64).astype(np.uint64):
        u = u * col
    return (u & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(dtype)


@pytest.mark.parametrize("src, dst", [(np.int32, np.int32), (np.uint32, np.uint32), (np.int16, np.int32)])
def test_integer_prod_along_a_row_wraps_like_numpy(src, dst):
    rng = np.random.default_rng(11)
    x = rng.integers(1, 60, (130, 37)).astype(src)
    x[0, :4] = [np.iinfo(src).max, 3, 0x9ABC if np.iinfo(src).bits == 32 else 7, 5]
    x[1] = np.iinfo(src).max
    _three_ways(lambda x: np.prod(x, axis=1).astype(dst), x, _want(x, dst))
    small = nk.compile(nk.trace(lambda x: np.prod(x & 3, axis=1)).trace(x))  # 3**37 > 2**24
    assert "kind = prod" not in small.ir("decompose")  # multiplied pairwise
    tiny = nk.compile(nk.trace(lambda x: np.prod(x[:, :8] & 3, axis=1)).trace(x))  # 3**8 < 2**24
    assert "kind = prod" in tiny.ir("decompose")  # the one multiply reduction
