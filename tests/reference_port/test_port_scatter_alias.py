"""Reference-port cases: scatters (assignment through traced indices, strided assignment) and IO
aliasing of arguments updated in place, written with our API.

Each case mirrors a test of the public reference (aws-neuron/nkipy) — same shapes, index
dtypes and semantics, our own code — and is checked through ``nk.run``, ``Kernel.run`` and
``nk.simulate`` against NumPy on float64 copies (tests/reference_port/helpers.py):

- ``test_slice_assignment`` mirrors ``tests/unit/test_tensor_api.py::test_slice_assignment``
  (``a[:, t, :] = b`` with distinct traced int32 ``t``, 3 shapes) and
  ``test_slice_assignment_repeated`` its ``test_slice_assignment_indeterministic`` (ids
  ``[0, 2, 2]``: the reference accepts any of the repeated rows; we give NumPy's answer, the
  last one, and check that exactly);
- ``test_step_slicing_assignment`` mirrors
  ``tests/unit/test_indexing_slicing_comprehensive.py::test_step_slicing_assignment``
  (``a[::2, ::2] = b``);
- ``test_alias_single`` / ``test_alias_multi`` mirror ``tests/unit/test_alias.py``
  (``test_single_alias``, ``test_multi_alias``: fp16 (128, 512) inputs updated in place);
- ``test_inplace_*`` mirror ``tests/unit/test_nkigen_lite_backend.py::TestNkigenLiteInplaceUpdate``
  (``test_single_alias``, ``test_no_return_auto_alias``, ``test_multi_alias``,
  ``test_mixed_return_alias``): which outputs alias which inputs, and the updated values.
"""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import check, compare, run_three_ways

R = np.random.default_rng(20260615)


def _assign_rows(a, b, t):
    a[:, t, :] = b
    return a


@pytest.mark.parametrize("shape, n", [((5, 10, 15), 3), ((10, 20, 30), 5), ((15, 25, 35), 7)])
def test_slice_assignment(shape, n):
    a = R.random(shape).astype(np.float32)
    t = R.choice(shape[1], size=n, replace=False).astype(np.int32)
    b = R.random((shape[0], n, shape[2])).astype(np.float32)
    g, _ = check(_assign_rows, a, b, t)
    assert g.aliases == {"y": "a"}


def test_slice_assignment_repeated():
    a = R.random((5, 10, 15)).astype(np.float32)
    t = np.array([0, 2, 2], np.uint32)
    b = R.random((5, 3, 15)).astype(np.float32)
    check(_assign_rows, a, b, t)


def test_step_slicing_assignment():
    a = R.standard_normal((8, 16)).astype(np.float32)
    b = np.ones(a[::2, ::2].shape, np.float32)

    def kernel(a, b):
        a[::2, ::2] = b
        return a

    g, _ = check(kernel, a, b)
    assert g.aliases == {"y": "a"}


def _updated(fn, args, names):
    """NumPy's arrays ``names`` (argument positions) after ``fn`` updated them in place."""
    copies = [a.astype(np.float64) if a.dtype.kind == "f" else a.copy() for a in args]
    fn(*copies)
    return {n: copies[i] for n, i in names.items()}


def _check_outputs(fn, args, want: dict, aliases: dict):
    g, _, runs = run_three_ways(fn, *args)
    assert dict(g.aliases) == aliases
    assert sorted(g.outputs) == sorted(want)
    for how, got in runs.items():
        for name, gv in zip(g.outputs, got):
            compare(gv, want[name], args[0].dtype, f"{how}, {name}")


def test_alias_single():
    a = ((R.random((128, 512)) - 0.5) * 2).astype(np.float16)
    b = ((R.random((128, 512)) - 0.5) * 2).astype(np.float16)

    def kernel(a_input, b_input):
        a_input[0, :] = b_input[1, :]
        return a_input

    want = _updated(kernel, (a, b), {"y": 0})
    _check_outputs(kernel, (a, b), want, {"y": "a_input"})


def test_alias_multi():
    a, b, c = (((R.random((128, 512)) - 0.5) * 2).astype(np.float16) for _ in range(3))

    def kernel(a_input, b_input, c_input):
        a_input[0:1, :] = b_input[0:1, :]
        c_input[2:3, :] = b_input[2:3, :]
        return a_input, c_input

    want = _updated(kernel, (a, b, c), {"y0": 0, "y1": 2})
    _check_outputs(kernel, (a, b, c), want, {"y0": "a_input", "y1": "c_input"})


def _small():
    return R.standard_normal((8, 4)).astype(np.float32), R.standard_normal((8, 4)).astype(np.float32)


def test_inplace_single_alias():
    def kernel(a, b):
        a[0:2, :] = b[0:2, :]
        return a

    a, b = _small()
    _check_outputs(kernel, (a, b), _updated(kernel, (a, b), {"y": 0}), {"y": "a"})


def test_inplace_no_return_auto_alias():
    def kernel(a, b):
        a[0:2, :] = b[0:2, :]

    a, b = _small()
    _check_outputs(kernel, (a, b), _updated(kernel, (a, b), {"a_out": 0}), {"a_out": "a"})


def test_inplace_multi_alias():
    def kernel(a, b, c):
        a[0:1, :] = b[0:1, :]
        c[2:3, :] = b[2:3, :]
        return a, c

    (a, b), c = _small(), R.standard_normal((8, 4)).astype(np.float32)
    want = _updated(kernel, (a, b, c), {"y0": 0, "y1": 2})
    _check_outputs(kernel, (a, b, c), want, {"y0": "a", "y1": "c"})


def test_inplace_mixed_return_alias():
    def kernel(a, b):
        a[0:1, :] = b[1:2, :]
        return a + b

    a, b = _small()
    upd = _updated(kernel, (a, b), {"a_out": 0})
    want = {"y": upd["a_out"] + b.astype(np.float64), "a_out": upd["a_out"]}
    _check_outputs(kernel, (a, b), want, {"a_out": "a"})
