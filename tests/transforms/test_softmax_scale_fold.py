"""softmax(s / √d): the scale folds into the exp activation instead of a separate full-width pass."""

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.transforms import canonicalize

SEQ, D = 256, 64
F32_RTOL, F32_ATOL = 2e-5, 1e-6  # f32 matmuls of length 64 / 256, exp, one division per element


def attention(scale):
    def f(q, k, v):
        s = q @ k.T
        if scale == "div":
            s = s / np.sqrt(q.shape[-1])
        elif scale == "mul":
            s = s * np.float32(1 / np.sqrt(q.shape[-1]))
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        return (e / e.sum(axis=-1, keepdims=True)) @ v

    return f


def _inputs():
    rng = np.random.default_rng(3)
    return [rng.standard_normal((SEQ, D)).astype(np.float32) for _ in range(3)]


@pytest.mark.parametrize("scale", ["div", "mul"])
def test_scale_folds_into_the_exp_activation(scale):
    q, k, v = _inputs()
    g = nk.trace(attention(scale)).trace(q, k, v)
    assert canonicalize(g).get("SoftmaxScaleIntoExp") == 1
    kern = nk.compile(nk.trace(attention(scale)).trace(q, k, v))
    plain = nk.compile(nk.trace(attention(None)).trace(q, k, v)).stats()
    s = kern.stats()
    # no full-width VectorE pass for the scale: only a per-row bias column per query tile
    assert s.dynamic_by_engine["vector"] == plain.dynamic_by_engine["vector"], s.summary()
    assert s.instructions_dynamic <= plain.instructions_dynamic + SEQ // 128, s.summary()
    (got,) = kern.run({"q": q, "k": k, "v": v}).values()
    q64, k64, v64 = (a.astype(np.float64) for a in (q, k, v))
    sc = q64 @ k64.T / np.sqrt(D)
    e = np.exp(sc - sc.max(axis=-1, keepdims=True))
    want = (e / e.sum(axis=-1, keepdims=True)) @ v64
    np.testing.assert_allclose(got, want, rtol=F32_RTOL, atol=F32_ATOL)


def test_scale_is_kept_when_not_positive_or_scores_are_reused():
    q, k, v = _inputs()

    def negative(q, k, v):
        s = q @ k.T * np.float32(-0.125)
        return np.exp(s - s.max(axis=-1, keepdims=True))

    def reused(q, k, v):
        s = q @ k.T / np.float32(8)
        return np.exp(s - s.max(axis=-1, keepdims=True)) + s

    for fn in (negative, reused):
        g = nk.trace(fn).trace(q, k, v)
        assert "SoftmaxScaleIntoExp" not in canonicalize(g), fn.__name__
