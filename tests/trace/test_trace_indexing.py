"""Indexing traced arrays (x[...], np.take) and in-place updates (x[...] = v, x += y) give
NumPy's answers; in-place updates that NumPy would propagate through a view are refused."""

import numpy as np
import pytest

import nkigen_lite as nk

from .helpers import check_against_numpy

rng = np.random.default_rng(11)
X = rng.uniform(-2, 2, (4, 5, 6)).astype(np.float32)
I = rng.integers(-9, 10, (4, 5, 6)).astype(np.int32)

READS = {
    "basic": lambda x, i: (
        x[1],
        x[-1, 2:, ::2],
        x[..., 1],
        x[:, None, ::-1, -2],
        x[1:3, ...],
        x[::-2, 4:1:-1],
        x[()],
        x[0, 0, 0],
        x[np.int64(2), np.int32(-1)],
    ),
    "int_array": lambda x, i: (
        x[[0, 3, 1]],
        x[:, [4, 4, 0]],
        x[..., [5, 3, 1, 0]],
        x[np.array([[0, 1], [2, 3]])],
        x[:, :, np.arange(6)[::-1]],
    ),
    "bool_mask": lambda x, i: (
        x[np.array([True, False, True, True])],
        x[:, np.array([False, True, True, False, True])],
        x[X > 0],
        i[I % 2 == 0],
    ),
    "mixed_advanced": lambda x, i: (
        x[0, [1, 2]],
        x[:, 1, [0, 5]],
        x[1, :, [0, 5]],
        x[[2, 0], :, 3],
        x[np.array(1), [0, 0]],
    ),
    "take": lambda x, i: (
        np.take(x, [1, 1, 1], axis=1),
        np.take(x, [[0, 5], [5, 0]], axis=-1),
        np.take(i, [0, 2, 4, 6, 8, 100 % 120]),
        x.take([3, 2, 1], axis=0),
    ),
}

WRITES = {
    "setitem_slices": lambda x, i: _set(x, (slice(1, 3), slice(None), slice(2, 5)), 0.5),
    "setitem_int_and_row": lambda x, i: _set(x, (0, 2), np.arange(6)),
    "setitem_leading_unit_dims": lambda x, i: _set(x, (0, 2), np.arange(6).reshape(1, 1, 6)),
    "setitem_negative_step": lambda x, i: _set(
        x, (slice(None), slice(None, None, -1), 0), np.arange(20).reshape(4, 5)
    ),
    "setitem_ellipsis_none": lambda x, i: _set(x, (Ellipsis, None, slice(4, 6)), -x[0, :, None, :2]),
    "setitem_cast": lambda x, i: _set(i, (slice(None), 0), x[:, 0] * 3),
    "setitem_static_mask": lambda x, i: _set(x, X > 1, 0.0),
    "setitem_traced_mask": lambda x, i: _set(x, x < 0, -1),
    "setitem_empty": lambda x, i: _set(x, (slice(3, 3),), 9.0),
    "setitem_whole": lambda x, i: _set(x, Ellipsis, x * 2),
    "inplace_ops": lambda x, i: _inplace(x, i),
    "out_array_built_by_rows": lambda x, i: _by_rows(x),
}


def _set(a, key, v):
    a = a.copy()
    a[key] = v
    return a


def _inplace(x, i):
    y = x.copy()
    y += 1
    y *= x
    y -= 0.5
    y /= 2
    y **= 2
    j = i.copy()
    j //= 3
    j %= 4
    j &= 7
    j |= 8
    j ^= 1
    alias = y
    alias += 1  # y and alias are one array: both see the update
    return y, j, alias


def _by_rows(x):
    out = np.zeros_like(x)
    for r in range(x.shape[0]):
        out[r] = x[r] * (r + 1)
    return out


@pytest.mark.parametrize("name", sorted(READS))
def test_reads(name):
    check_against_numpy(READS[name], (X, I))


@pytest.mark.parametrize("name", sorted(WRITES))
def test_writes(name):
    check_against_numpy(WRITES[name], (X, I))


def test_reads_are_views_and_build_few_ops():
    """x[[0, 1, 2, 3]] is one run: a single (identity) slice; evenly spaced runs are strided."""
    g = nk.trace(lambda x: x[:, [0, 2, 4, 1]]).trace(X)
    ops = [op.name for op in g.body]
    assert ops.count("tensor.slice") == 2 and ops.count("tensor.concat") == 1
    g = nk.trace(lambda x: x[[0, 1, 2, 3]]).trace(X)
    assert [op.name for op in g.body] == ["return"]


VIEW_UPDATES = {
    "slice_then_update_base": lambda x: _update_base(x, lambda a: a[0:2]),
    "reshape_then_update_base": lambda x: _update_base(x, lambda a: a.reshape(-1)),
    "transpose_then_update_base": lambda x: _update_base(x, lambda a: a.T),
    "update_view": lambda x: _update_view(x, lambda a: a[1]),
    "update_view_of_view": lambda x: _update_view(x, lambda a: a[1][::2]),
    "setitem_on_view": lambda x: _setitem_view(x),
}


def _update_base(x, make_view):
    y = x.copy()
    v = make_view(y)
    y += 1  # NumPy changes v too
    return v


def _update_view(x, make_view):
    y = x.copy()
    v = make_view(y)
    v *= 2  # NumPy changes y too
    return y


def _setitem_view(x):
    y = x.copy()
    v = y[0]
    v[0] = 5.0
    return y


@pytest.mark.parametrize("name", sorted(VIEW_UPDATES))
def test_in_place_update_through_a_live_view_is_refused(name):
    with pytest.raises(nk.BuildError, match="shares memory with another live array"):
        nk.trace(VIEW_UPDATES[name]).trace(X)


def test_in_place_update_after_the_view_is_gone_is_allowed():
    def f(x):
        y = x.copy()
        s = y[0].sum()  # the view y[0] is a temporary: gone before the update
        y += s
        return y

    check_against_numpy(f, (X,))


@pytest.mark.parametrize(
    "fn, match",
    [
        (lambda x: _set(x.copy(), (slice(None, None, 2), None), 0.0), "strided slice"),
        (lambda x: _set(x.copy(), ([0, 1], slice(1, 3)), 0.0), "needs ':' or '...' on every other axis"),
        (lambda x: _set(x.copy(), x > 0, x), "needs a scalar value"),
        (lambda x: _set(x.copy(), np.ones((4, 5), bool), 0.0), "must have the array's shape"),
        (lambda x: _set(x.copy(), (slice(0, 2),), np.ones(3)), "could not broadcast"),
        (lambda x: _set(x.copy(), (7,), 0.0), "index 7 is out of bounds"),
        (lambda x: x[x], "indices must be integers"),
        (lambda x: x[x > 0], "traced boolean mask"),
        (lambda x: x[[0, 1], [1, 2, 3]], "could not be broadcast together"),
        (lambda x: x[np.ones((4, 5), bool)], r"boolean index of shape \(4, 5\)"),
        (lambda x: x[1.5], "unsupported index 1.5"),
        (lambda x: x[0, 0, 0, 0], "too many indices"),
        (lambda x: _iadd(x.astype(np.int32), 1.5), "same_kind"),
        (lambda x: _iadd(x[0].copy(), x), "differs from the target's"),
    ],
)
def test_indexing_errors(fn, match):
    with pytest.raises(nk.BuildError, match=match):
        nk.trace(fn).trace(X)


def _iadd(a, b):
    a += b
    return a
