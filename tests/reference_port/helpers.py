"""Shared runner of the reference-port cases: a NumPy function traced with ``@nk.trace``, run
through the tensor interpreter (``nk.run``, float64 mode), the compiled kernel on the NKI
interpreter (``Kernel.run``) and the emitted module on the NumPy NKI simulator
(``nk.simulate``), each compared with NumPy itself on float64 copies of the inputs (the result
dtype's tolerance from ``assert_close``; integer results exactly)."""

from __future__ import annotations

import numpy as np

import nkigen_lite as nk
from nkigen_lite.testing import assert_close


def as_tuple(r):
    return tuple(r) if isinstance(r, (tuple, list)) else (r,)


def numpy_reference(fn, args):
    """``fn`` on float64 copies of the float inputs (other inputs copied unchanged)."""
    return as_tuple(fn(*[a.astype(np.float64) if a.dtype.kind == "f" else a.copy() for a in args]))


def run_three_ways(fn, *args):
    """(graph, kernel, {runner: tuple of outputs in graph order}) for ``fn`` traced on ``args``."""
    g = nk.trace(fn).trace(*[a.copy() for a in args])
    feeds = dict(zip(g.input_names, [a.copy() for a in args]))
    k = nk.compile(g)
    runs = {
        "nk.run": nk.run(g, feeds, mode="float64"),
        "Kernel.run": k.run(feeds),
        "nk.simulate": nk.simulate(k, feeds),
    }
    return g, k, {how: tuple(out[n] for n in g.outputs) for how, out in runs.items()}


def compare(got, want, native_dtype, what: str) -> None:
    want = np.asarray(want)
    assert np.shape(got) == want.shape, f"{what}: shape {np.shape(got)}, NumPy {want.shape}"
    dt = nk.get_dtype(np.dtype(native_dtype))
    if dt.is_float:
        assert_close(np.asarray(got), want.astype(np.float64), dt, what=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def check(fn, *args):
    """Trace, compile and run ``fn``; every output of every runner must match NumPy. Returns
    (graph, kernel)."""
    want = numpy_reference(fn, args)
    native = as_tuple(fn(*[a.copy() for a in args]))
    g, k, runs = run_three_ways(fn, *args)
    for how, got in runs.items():
        assert len(got) >= len(want), f"{how}: {len(got)} outputs, NumPy gives {len(want)}"
        for n, (gv, wv, nv) in enumerate(zip(got, want, native)):
            nd = np.asarray(nv).dtype
            if how != "nk.run":
                assert gv.dtype == nd or (nd.itemsize == 8 and gv.dtype.itemsize == 4), (
                    f"{how}, output {n}: dtype {gv.dtype}, NumPy {nd}"
                )
            compare(gv, wv, nd if nd.itemsize < 8 else gv.dtype, f"{how}, output {n}")
    return g, k
