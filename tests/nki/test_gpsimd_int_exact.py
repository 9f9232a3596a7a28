"""GpSimd integer arithmetic is exact only when every operand is an integer tile: a bool
operand makes it an fp32 computation on the NKI interpreter, as on the simulator (lowering
widens bool operands of integer arithmetic to int32 first). int32 1376791563 * True is
1376791552 in fp32 (the nearest multiple of 128), 1376791563 exactly on int32 tiles."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.emit.nki_source import emit_nki_source
from nkigen_lite.emit.simulate import simulate

BIG = 1376791563  # above 2**24: fp32 rounds it to 1376791552


def _kernel(mask_dtype):
    """y = x * m on GpSimd, x int32 (128, 4), m of ``mask_dtype``."""
    b = nk.nki.Builder("gpsimd_mul")
    x = b.add_input("x", (128, 4), nk.int32)
    m = b.add_input("m", (128, 4), mask_dtype)
    y = b.alloc((128, 4), nk.int32, "hbm", name="y")
    xs = b.alloc((128, 4), nk.int32, name="xs")
    ms = b.alloc((128, 4), mask_dtype, name="ms")
    ys = b.alloc((128, 4), nk.int32, name="ys")
    b.dma_copy(dst=xs, src=x)
    b.dma_copy(dst=ms, src=m)
    b.tensor_tensor(dst=ys, data1=xs, data2=ms, op="multiply", engine="gpsimd")
    b.dma_copy(dst=y, src=ys)
    for t in (ys, ms, xs):
        b.dealloc(t)
    b.set_outputs({"y": y})
    return b.graph


@pytest.mark.parametrize("mask_dtype, want", [(nk.bool_, 1376791552), (nk.int32, BIG)])
def test_interpreter_and_simulator_agree_on_gpsimd_int_exactness(mask_dtype, want):
    g = _kernel(mask_dtype)
    x = np.full((128, 4), BIG, np.int32)
    m = np.ones((128, 4), mask_dtype.np_dtype)
    got = nk.nki.run(g, {"x": x, "m": m})["y"]
    sim = np.asarray(simulate(emit_nki_source(g), {"x": x, "m": m})["y"])
    np.testing.assert_array_equal(got, np.full((128, 4), want, np.int32))
    np.testing.assert_array_equal(sim, np.full((128, 4), want, np.int32))
