"""A kernel that breaks a documented instruction rule is rejected by the hardware verifier (so by
the NKI interpreter, which verifies first) and, emitted as NKI source, by the NumPy simulator.

Each case initialises its tiles, then issues one illegal instruction (rules and sources: the
select_reduce and nc_matmul pages of NKI 0.6, see docs/nki_ir.md)."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.emit import emit_nki_source
from nkigen_lite.nki_sim.errors import NkiSimError

F32, I32, U8 = nk.float32, nk.int32, nk.uint8


def _tile(b, made, shape=(128, 64), dtype=F32, space="sbuf"):
    t = b.alloc(shape, dtype, space)
    if space == "psum":
        b.memset(dst=t, value=0.0 if dtype.is_float else 0)
    else:
        b.memset(dst=t, value=1.0 if dtype.is_float else 1)
    made.append(t)
    return t


CASES = {
    "select predicate bool": (
        lambda b, m: b.select(
            dst=_tile(b, m), predicate=_tile(b, m, dtype=nk.bool_), on_true=_tile(b, m), on_false=0.0
        ),
        "predicate must be int8/uint8/int16/uint16",
        "predicate dtype must be int8",
    ),
    "select predicate f32": (
        lambda b, m: b.select(dst=_tile(b, m), predicate=_tile(b, m), on_true=_tile(b, m), on_false=0.0),
        "predicate must be int8/uint8/int16/uint16",
        "predicate dtype must be int8",
    ),
    "select on_true int32": (
        lambda b, m: b.select(
            dst=_tile(b, m, dtype=I32),
            predicate=_tile(b, m, dtype=U8),
            on_true=_tile(b, m, dtype=I32),
            on_false=0.0,
        ),
        "on_true may not be i32",
        "on_true may not be int32",
    ),
    "select on_false full tile": (
        lambda b, m: b.select(
            dst=_tile(b, m), predicate=_tile(b, m, dtype=U8), on_true=_tile(b, m), on_false=_tile(b, m)
        ),
        r"on_false must be a \(128, 1\) per-partition column",
        r"must be a scalar or a \(128, 1\)",
    ),
    "select on_false integer scalar": (
        lambda b, m: b.select(
            dst=_tile(b, m), predicate=_tile(b, m, dtype=U8), on_true=_tile(b, m), on_false=3
        ),
        "scalar on_false must be an fp32 number",
        "scalar on_false must be a float32",
    ),
    "matmul 3-d operand": (
        lambda b, m: b.nc_matmul(
            dst=_tile(b, m, (16, 64), space="psum"),
            stationary=_tile(b, m, (128, 4, 32))[:, :, 0:4],
            moving=_tile(b, m, (128, 64)),
        ),
        "do not collapse into one contiguous run",
        "must be a 2-D tile view",
    ),
}


def _kernel(bad):
    b = nk.nki.Builder("bad")
    x = b.add_input("x", (128, 64), F32)
    y = b.alloc((128, 64), F32, "hbm", name="y")
    made = []
    t = _tile(b, made)
    b.dma_copy(dst=t, src=x)
    bad(b, made)
    b.dma_copy(dst=y, src=t)
    for u in made:
        b.dealloc(u)
    b.set_outputs({"y": y})
    return b.graph


@pytest.mark.parametrize("case", sorted(CASES))
def test_rejected_by_verifier_interpreter_and_simulator(case):
    bad, verifier_msg, sim_msg = CASES[case]
    g = _kernel(bad)
    x = np.ones((128, 64), np.float32)
    with pytest.raises(nk.VerifyError, match=verifier_msg):
        nk.nki.verify(g)
    with pytest.raises(nk.VerifyError, match=verifier_msg):
        nk.nki.run(g, {"x": x})
    with pytest.raises(NkiSimError, match=sim_msg):
        nk.simulate(emit_nki_source(g), {"x": x})


def test_the_legal_variant_runs_on_all_three():
    """Control: the same frame with a legal select passes everywhere (so the cases above fail
    for their rule, not for the frame)."""

    def good(b, m):
        b.select(
            dst=_tile(b, m),
            predicate=_tile(b, m, dtype=U8),
            on_true=_tile(b, m),
            on_false=_tile(b, m, (128, 1)),
        )

    g = _kernel(good)
    x = np.arange(128 * 64, dtype=np.float32).reshape(128, 64)
    nk.nki.verify(g)
    np.testing.assert_array_equal(nk.nki.run(g, {"x": x})["y"], x)
    np.testing.assert_array_equal(nk.simulate(emit_nki_source(g), {"x": x})["y"], x)
