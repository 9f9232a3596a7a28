"""Reference-port cases: ``np.take_along_axis`` and ``np.put_along_axis`` written with our API.

Each case mirrors a test of the public reference (aws-neuron/nkipy,
``tests/unit/test_tensor_api.py``) — same shapes, traced uint32 indices, values and axes, our
own code — and is checked through ``nk.run``, ``Kernel.run`` and ``nk.simulate`` against NumPy
on float64 copies (tests/reference_port/helpers.py):

- ``test_put_along_axis`` mirrors ``test_put_along_axis`` (array values, 3 cases) and
  ``test_put_along_axis_scalar_value`` (scalar values 100, 3.0, 2; 3 cases): a copy of the input
  updated in place by ``np.put_along_axis`` and returned;
- ``test_take_along_axis`` mirrors ``test_take_along_axis`` (3 cases);
- ``test_take_along_axis_random`` mirrors ``test_take_along_axis_random`` ((2048, 64) along
  axis 0 with (128, 1) indices, and (10, 20, 30) flattened with 50 indices).
"""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import check

R = np.random.default_rng(20260614)

PUT = [
    ((2, 3), [[1, 0, 0]], [[4, 5, 6]], 0),
    ((2, 3), [[1], [0]], [[4], [5]], 1),
    ((2, 3), [1, 0], [4, 5], None),
]
PUT_SCALAR = [
    ((2, 3), [[1, 0, 0]], 100, 0),
    ((2, 3), [[1], [0]], 3.0, 1),
    ((2, 3), [1, 0], 2, None),
]


def _put(axis):
    def kernel(a, idx, values):
        b = np.copy(a)
        np.put_along_axis(b, idx, values, axis=axis)
        return b

    return kernel


@pytest.mark.parametrize("shape, idx, values, axis", PUT)
def test_put_along_axis(shape, idx, values, axis):
    a = R.random(shape).astype(np.float32)
    check(_put(axis), a, np.array(idx).astype(np.uint32), np.array(values, np.float32))


@pytest.mark.parametrize("shape, idx, value, axis", PUT_SCALAR)
def test_put_along_axis_scalar_value(shape, idx, value, axis):
    a = R.random(shape).astype(np.float32)
    put = _put(axis)
    check(lambda a, idx: put(a, idx, value), a, np.array(idx).astype(np.uint32))


@pytest.mark.parametrize(
    "shape, idx, axis", [((2, 3), [[1, 0, 0]], 0), ((2, 3), [[1], [0]], 1), ((2, 3), [1, 0], None)]
)
def test_take_along_axis(shape, idx, axis):
    a = R.random(shape).astype(np.float32)
    check(lambda a, idx: np.take_along_axis(a, idx, axis=axis), a, np.array(idx).astype(np.uint32))


@pytest.mark.parametrize("shape, axis", [((2048, 64), 0), ((10, 20, 30), None)])
def test_take_along_axis_random(shape, axis):
    a = R.random(shape).astype(np.float32)
    if axis == 0:
        idx = R.integers(0, shape[0], (128, 1)).astype(np.uint32)
    else:
        idx = R.integers(0, int(np.prod(shape)), (50,)).astype(np.uint32)
    check(lambda a, idx: np.take_along_axis(a, idx, axis=axis), a, idx)
