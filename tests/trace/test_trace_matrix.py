"""@nk.trace of np.cumsum, np.trace, np.diag, np.linalg.norm, np.einsum, np.pad (every mode
but median) and np.copyto, against NumPy itself (float64 references, the dtype's tolerance;
integers exact) through the tensor interpreter and, compiled, the NKI interpreter."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.testing import assert_close

from .helpers import as_tuple, check_against_numpy, narrow, to64

RNG = np.random.default_rng(11)
F = RNG.standard_normal((4, 5)).astype(np.float32)
H = RNG.standard_normal((6, 3)).astype(ml_dtypes.bfloat16)
I = RNG.integers(-9, 10, (4, 5)).astype(np.int32)
C3 = RNG.standard_normal((3, 4, 5)).astype(np.float32)
D3 = RNG.standard_normal((3, 5, 2)).astype(np.float32)
V = RNG.standard_normal(5).astype(np.float32)


def _both(fn, *args, rtol=None, atol=None):
    """The traced graph against NumPy (tensor interpreter), then compiled (NKI interpreter)."""
    check_against_numpy(fn, args, rtol=rtol, atol=atol)
    got = as_tuple(nk.compile(fn, *args)(*args))
    for g, want in zip(got, as_tuple(fn(*[to64(a) for a in args]))):
        want = np.asarray(want)
        dt = nk.get_dtype(g.dtype)
        assert g.shape == want.shape
        if dt.is_float:
            assert_close(g, want.astype(np.float64), dt, what="compiled", rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(g, np.asarray(fn(*args)).astype(narrow(want.dtype)))


CUMSUM = [
    (lambda x: np.cumsum(x, axis=1), F),
    (lambda x: np.cumsum(x), F),
    (lambda x: x.cumsum(0), I),
    (lambda x: np.cumsum(x, axis=0), H),
    (lambda x: np.cumsum(x, axis=-1, dtype=np.float32), I),
]


@pytest.mark.parametrize("k", range(len(CUMSUM)))
def test_cumsum(k):
    fn, x = CUMSUM[k]
    _both(fn, x, rtol=1e-2 if x.dtype == ml_dtypes.bfloat16 else 1e-5)


MATRIX = [
    (lambda x: np.trace(x), F),
    (lambda x: np.trace(x, offset=2), F),
    (lambda x: np.trace(x, offset=-1), I),
    (lambda x: np.trace(x, axis1=1, axis2=2), C3),
    (lambda x: np.trace(x, axis1=2, axis2=0), C3),
    (lambda x: np.diag(x), F),
    (lambda x: np.diag(x, 3), F),
    (lambda x: np.diag(x, -2), I),
    (lambda x: np.diag(x), V),
    (lambda x: np.diag(x, 2), V),
    (lambda x: np.diag(x, -1), I[0]),
    (lambda x: np.linalg.norm(x), F),
    (lambda x: np.linalg.norm(x, "fro"), F),
    (lambda x: np.linalg.norm(x, axis=1), F),
    (lambda x: np.linalg.norm(x, axis=(0, 2), keepdims=True), C3),
    (lambda x: np.linalg.norm(x, axis=0), H),
]


@pytest.mark.parametrize("k", range(len(MATRIX)))
def test_trace_diag_norm(k):
    fn, x = MATRIX[k]
    _both(fn, x)


EINSUM = [
    ("ij,jk->ik", (F, F.T.copy())),
    ("ij,jk", (F, F.T.copy())),
    ("bij,bjk->bik", (C3, D3)),
    ("bij,bjk->kbi", (C3, D3)),
    ("bij,bkj->bik", (C3, C3)),
    ("ij,ij->i", (F, F)),
    ("i,j->ij", (V, V)),
    ("i,i->", (V, V)),
    ("ij->ji", (F,)),
    ("bij->j", (C3,)),
    ("bij,jk->bik", (C3, F.T.copy())),
    ("bij,k->bi", (C3, V)),  # k summed out of the second operand first
]


@pytest.mark.parametrize("k", range(len(EINSUM)))
def test_einsum_contractions(k):
    sub, ops = EINSUM[k]
    _both(lambda *xs: np.einsum(sub, *xs), *ops)


@pytest.mark.parametrize(
    "sub,msg",
    [
        ("ii->i", r"numpy\.einsum: repeated letter in 'ii'"),
        ("...i->i", r"numpy\.einsum: '\.\.\.' in subscripts"),
        ("ij,jk,kl->il", r"numpy\.einsum: 3 operands"),
    ],
)
def test_einsum_refuses_what_is_not_a_matmul(sub, msg):
    n = sub.split("->")[0].count(",") + 1
    with pytest.raises(nk.TraceError, match=msg):
        nk.trace(lambda *xs: np.einsum(sub, *xs)).trace(*([np.ones((3, 3), np.float32)] * n))


PAD_MODES = [
    ("constant", {}),
    ("constant", {"constant_values": ((1, 2), (3, 4))}),
    ("edge", {}),
    ("reflect", {}),
    ("symmetric", {}),
    ("wrap", {}),
    ("maximum", {}),
    ("minimum", {}),
    ("mean", {}),
    ("linear_ramp", {"end_values": 5}),
]


@pytest.mark.parametrize("mode,kw", PAD_MODES, ids=[f"{m}{i}" for i, (m, _) in enumerate(PAD_MODES)])
@pytest.mark.parametrize("x", [F, I], ids=["f32", "i32"])
@pytest.mark.parametrize("width", [(1, 2), ((0, 3), (7, 1)), 9], ids=["pair", "per_axis", "wide"])
def test_pad_modes(mode, kw, x, width):
    _both(lambda a: np.pad(a, width, mode=mode, **kw), x)


def test_pad_empty_mode_has_the_shape_and_keeps_the_array():
    got = nk.compile(lambda a: np.pad(a, 2, mode="empty"), F)(F)
    assert got.shape == (8, 9)
    np.testing.assert_array_equal(got[2:-2, 2:-2], F)


def test_pad_refuses_median_and_odd_reflection():
    with pytest.raises(nk.TraceError, match=r"numpy\.pad: mode='median' is not supported"):
        nk.trace(lambda a: np.pad(a, 1, mode="median")).trace(F)
    with pytest.raises(nk.TraceError, match=r"numpy\.pad: reflect_type='odd' is not supported"):
        nk.trace(lambda a: np.pad(a, 1, mode="reflect", reflect_type="odd")).trace(F)


def test_copyto_is_a_functional_update():
    def f(x, m):
        y = np.zeros_like(x)
        np.copyto(y, x * 2.0)
        z = np.ones_like(x)
        np.copyto(z, x, where=m)
        w = np.empty_like(x)
        np.copyto(w, 7)  # a scalar broadcast into the destination
        return y, z, w

    m = F > 0
    _both(f, F.copy(), m)


def test_copyto_refuses_a_broadcast_the_destination_cannot_hold():
    def f(x):
        y = np.zeros((4, 1), np.float32)
        np.copyto(x[:, :1] * 0 + y, x)

    with pytest.raises(nk.TraceError, match=r"numpy\.copyto: could not broadcast input array from shape"):
        nk.trace(f).trace(F)
