"""Property: DMA through random strided windows moves exactly the elements NumPy slicing names."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from nkigen_lite.nki_sim import installed


@st.composite
def window(draw, n):
    start = draw(st.integers(0, n - 1))
    stop = draw(st.integers(start + 1, n))
    step = draw(st.integers(1, 3))
    return slice(start, stop, step)


@st.composite
def case(draw):
    rows, cols = draw(st.integers(1, 40)), draw(st.integers(1, 40))
    rs, cs = draw(window(rows)), draw(window(cols))
    p, f = len(range(rows)[rs]), len(range(cols)[cs])
    dtype = draw(st.sampled_from([np.float32, np.int16, np.uint8]))
    return rows, cols, rs, cs, p, f, dtype


@given(case())
def test_dma_windows_match_numpy_slicing(c):
    rows, cols, rs, cs, p, f, dtype = c
    x = np.arange(rows * cols).reshape(rows, cols).astype(dtype)
    with installed() as nki:
        nl, nisa = nki.language, nki.isa

        @nki.jit
        def kernel(x):
            y = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
            nisa.dma_copy(dst=y, src=x)
            t = nl.ndarray((p, f), dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x[rs, cs])
            u = nl.ndarray((p, f), dtype=x.dtype, buffer=nl.sbuf)
            nisa.tensor_scalar(dst=u, data=t, op0=nl.add, operand0=1.0)
            nisa.dma_copy(dst=y[rs, cs], src=u)
            return y

        got = kernel(x)
    expect = x.copy()
    bumped = x[rs, cs].astype(np.float64) + 1
    if np.issubdtype(dtype, np.integer):  # engines saturate on a float -> int write
        bumped = np.clip(bumped, np.iinfo(dtype).min, np.iinfo(dtype).max)
    expect[rs, cs] = bumped.astype(dtype)
    np.testing.assert_array_equal(got, expect)
