"""Property tests: the verifier's static reasoning agrees with brute force and the interpreter."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import nkigen_lite as nk
from nkigen_lite.nki import ds

F32 = nk.float32
ROWS, COLS = 300, 64


def _dma_kernel(trip, step, coeff, off, size, stride, off2, size2, stride2):
    b = nk.nki.Builder("window")
    x = b.add_input("x", (ROWS, COLS), F32)
    y = b.alloc((size, size2), F32, "hbm", name="y")
    with b.fori_loop(0, trip * step, step) as i:
        t = b.alloc((size, size2), F32)
        b.dma_copy(dst=t, src=x[ds(i * coeff + off, size, stride), ds(off2, size2, stride2)])
        b.dma_copy(dst=y, src=t)
        b.dealloc(t)
    b.set_outputs({"y": y})
    return b.graph


@given(
    trip=st.integers(1, 4),
    step=st.integers(1, 3),
    coeff=st.integers(-60, 60),
    off=st.integers(-20, ROWS),
    size=st.integers(1, 128),
    stride=st.integers(0, 3),
    off2=st.integers(-2, COLS),
    size2=st.integers(1, 64),
    stride2=st.integers(0, 2),
)
def test_dma_bounds_verifier_and_interpreter_agree(
    trip, step, coeff, off, size, stride, off2, size2, stride2
):
    g = _dma_kernel(trip, step, coeff, off, size, stride, off2, size2, stride2)
    x = np.arange(ROWS * COLS, dtype=np.float32).reshape(ROWS, COLS)
    try:
        nk.nki.verify(g)
        static_ok = True
    except nk.VerifyError as e:
        assert "out of bounds" in str(e) or "< 0" in str(e)
        static_ok = False
    try:
        out = nk.nki.run(g, {"x": x}, verify=False)["y"]
        dynamic_ok = True
    except nk.InterpretError as e:
        assert "out of bounds" in str(e)
        dynamic_ok = False
    assert static_ok == dynamic_ok
    starts = [i * coeff + off for i in range(0, trip * step, step)]
    brute = (
        all(0 <= s and s + (size - 1) * stride < ROWS for s in starts)
        and 0 <= off2
        and off2 + (size2 - 1) * stride2 < COLS
    )
    assert static_ok == brute
    if brute:  # the last iteration's window, computed directly
        rows = starts[-1] + np.arange(size) * stride
        cols = off2 + np.arange(size2) * stride2
        np.testing.assert_array_equal(out, x[np.ix_(rows, cols)])


def _start_ok(n, start):
    if n > 64:
        return start == 0
    return start % (64 if n > 32 else 32) == 0


@given(
    lower=st.integers(0, 3),
    trip=st.integers(1, 4),
    step=st.integers(1, 3),
    coeff=st.sampled_from([0, 1, 16, 32, 48, 64, -32]),
    const=st.sampled_from([0, 16, 32, 64, 96]),
    n=st.sampled_from([1, 16, 32, 33, 64, 65, 128]),
)
def test_partition_start_rule_matches_brute_force(lower, trip, step, coeff, const, n):
    starts = [const + coeff * i for i in range(lower, lower + trip * step, step)]
    if not all(0 <= s and s + n <= 128 for s in starts):
        return  # bounds are a different rule
    b = nk.nki.Builder("pstart")
    y = b.alloc((1, 1), F32, "hbm", name="y")
    with b.fori_loop(lower, lower + trip * step, step) as i:
        t = b.alloc((128, 4), F32)
        b.memset(dst=t[ds(i * coeff + const, n), :], value=0.0)
        b.dealloc(t)
    t = b.alloc((1, 1), F32)
    b.memset(dst=t, value=1.0)
    b.dma_copy(dst=y, src=t)
    b.dealloc(t)
    b.set_outputs({"y": y})
    try:
        nk.nki.verify(b.graph)
        ok = True
    except nk.VerifyError as e:
        assert "must start at" in str(e)
        ok = False
    assert ok == all(_start_ok(n, s) for s in starts)


@given(
    c1=st.integers(-5, 5),
    c2=st.integers(-5, 5),
    const=st.integers(-100, 100),
    i_val=st.integers(0, 3),
    j_val=st.integers(0, 2),
)
def test_affine_offsets_round_trip_and_evaluate(c1, c2, const, i_val, j_val):
    b = nk.nki.Builder("aff")
    y = b.alloc((4, 3, 128, 1), nk.int32, "hbm", name="y")
    with b.fori_loop(0, 4) as i:
        with b.fori_loop(0, 3) as j:
            t = b.alloc((128, 1), nk.int32)
            b.iota(dst=t, pattern=[[0, 1]], offset=c1 * i + j * c2 + const, channel_multiplier=1)
            b.dma_copy(dst=y[ds(i, 1), ds(j, 1), :, :], src=t)
            b.dealloc(t)
    b.set_outputs({"y": y})
    text = str(b.graph)
    g = nk.parse(text)
    assert str(g) == text
    got = nk.nki.run(g, {})["y"]
    assert got[i_val, j_val, 5, 0] == c1 * i_val + c2 * j_val + const + 5


_TEXTS = None


def _texts():
    global _TEXTS
    if _TEXTS is None:
        from . import kernels
        from .test_text import every_op_graph

        _TEXTS = [str(every_op_graph()), str(kernels.softmax(300, 64)), str(kernels.matmul(128, 256, 512))]
    return _TEXTS


@given(
    which=st.integers(0, 2),
    line=st.integers(1, 10_000),
    other=st.integers(1, 10_000),
    mutation=st.sampled_from(["delete", "swap", "number", "space", "engine"]),
    number=st.sampled_from([0, 1, 3, 7, 64, 127, 129, 513, 100_000]),
    verify=st.booleans(),
)
def test_corrupted_ir_gives_nk_errors_never_crashes(which, line, other, mutation, number, verify):
    import re

    lines = _texts()[which].split("\n")
    k, j = 1 + line % (len(lines) - 3), 1 + other % (len(lines) - 3)
    if mutation == "delete":
        del lines[k]
    elif mutation == "swap":
        lines[k], lines[j] = lines[j], lines[k]
    elif mutation == "number":
        nums = list(re.finditer(r"\d+", lines[k]))
        if nums:
            m = nums[other % len(nums)]
            lines[k] = lines[k][: m.start()] + str(number) + lines[k][m.end() :]
    elif mutation == "space":
        lines[k] = lines[k].replace("sbuf", "psum")
    else:
        lines[k] = lines[k].replace("vector", "gpsimd").replace("scalar", "vector")
    try:
        g = nk.parse("\n".join(lines))
        ins = {n: np.ones(v.type.shape, v.type.dtype.np_dtype) for n, v in zip(g.input_names, g.inputs)}
        nk.nki.run(g, ins, verify=verify)
    except nk.NkError:
        pass
