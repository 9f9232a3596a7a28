"""Shared helpers for the trace tests: deterministic inputs, tracing + running a function, and
the comparison against NumPy (the reference never goes through nkigen_lite)."""

import numpy as np

import nkigen_lite as nk
from nkigen_lite.testing import assert_close

_NARROW = {
    np.dtype(np.float64): np.dtype(np.float32),
    np.dtype(np.int64): np.dtype(np.int32),
    np.dtype(np.uint64): np.dtype(np.uint32),
}


def narrow(npd) -> np.dtype:
    """The project's rule: NumPy's result dtype with 64-bit narrowed to 32-bit."""
    npd = np.dtype(npd)
    return _NARROW.get(npd, npd)


def as_tuple(r):
    return tuple(r) if isinstance(r, (tuple, list)) else (r,)


def to64(a):
    """Float arrays as float64 (the reference precision); other arrays unchanged."""
    a = np.asarray(a)
    return a.astype(np.float64) if a.dtype.kind == "f" or a.dtype.name == "bfloat16" else a


def run_traced(fn, args, mode="faithful"):
    """Trace ``fn`` on ``args`` and run the graph on the same arrays: (graph, outputs tuple)."""
    g = nk.trace(fn).trace(*args)
    out = nk.run(g, dict(zip(g.input_names, args)), mode=mode)
    return g, tuple(out[n] for n in g.outputs)


def check_against_numpy(fn, args, *, rtol=None, atol=None):
    """Trace ``fn``; its outputs must have NumPy's dtypes (narrowed) and match NumPy's values:
    float outputs against ``fn`` on float64 copies of the inputs (the dtype's tolerance),
    integer and bool outputs exactly against ``fn`` on the inputs themselves."""
    g, got = run_traced(fn, args)
    native = as_tuple(fn(*args))
    ref64 = as_tuple(fn(*[to64(a) for a in args]))
    assert len(got) == len(native), f"{len(got)} outputs, NumPy gives {len(native)}"
    for k, (gv, nv, rv) in enumerate(zip(got, native, ref64)):
        nv = np.asarray(nv)
        assert gv.dtype == narrow(nv.dtype), f"output {k}: dtype {gv.dtype}, NumPy {nv.dtype}"
        assert gv.shape == nv.shape, f"output {k}: shape {gv.shape}, NumPy {nv.shape}"
        dt = nk.get_dtype(gv.dtype)
        if dt.is_float:
            assert_close(gv, np.asarray(rv, np.float64), dt, what=f"output {k}", rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(gv, nv, err_msg=f"output {k}")
    return g
