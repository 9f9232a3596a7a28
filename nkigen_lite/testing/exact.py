"""Exact-result checks for integer kernels: one graph run three ways (the tensor interpreter
``nk.run``, the compiled kernel's NKI interpreter ``Kernel.run`` and the NumPy NKI simulator
``nk.simulate``), each compared bit for bit with an independently computed NumPy result."""

from __future__ import annotations

import numpy as np

WAYS = ("nk.run", "Kernel.run", "nk.simulate")


def assert_exact_three_ways(g, feed: dict, want: np.ndarray, ways=WAYS):
    """Assert that graph ``g`` on ``feed`` gives exactly ``want`` (dtype, shape and every value)
    on each of ``ways``; returns the compiled kernel (None when only ``nk.run`` is asked)."""
    import nkigen_lite as nk

    outs = {"nk.run": lambda: nk.run(g, feed)}
    k = None
    if tuple(ways) != ("nk.run",):
        k = nk.compile(g)
        outs["Kernel.run"] = lambda: k.run(feed)
        outs["nk.simulate"] = lambda: nk.simulate(k, feed)
    for how in ways:
        (got,) = outs[how]().values()
        assert got.dtype == want.dtype and got.shape == want.shape, (how, got.dtype, got.shape)
        np.testing.assert_array_equal(got, want, err_msg=how)
    return k
