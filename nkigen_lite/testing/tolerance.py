"""Per-dtype tolerances and ``assert_close``: compare a computed array to a float64 reference.

Tolerances (``tolerance_for``), for data of magnitude about 1 (what ``graph_inputs`` draws):

    dtype                       rtol = atol    why (u = unit roundoff of the format)
    f32                         1e-5           ~100 u: room for libm differences and short chains
    tf32, f16                   2e-3           ~4 u (u = 2**-11)
    bf16                        1e-2           ~2.5 u (u = 2**-8)
    f8e3m4                      6.25e-2        2 u (u = 2**-5)
    f8e4m3, f8e4m3fn            1.25e-1        2 u (u = 2**-4)
    f8e5m2                      2.5e-1         2 u (u = 2**-3)
    int*, uint*, bool           0              exact
    "float64" (oracle mode)     1e-9           float64 results vs an independent float64 formula

An element passes when ``|got - ref| <= atol + rtol * |ref|`` (so, with atol = rtol, the error
is measured relative to ``max(|ref|, 1)``), when both are NaN, or when both are the same
infinity. A reference beyond the dtype's largest finite value also accepts the overflow the
hardware produces: the same-signed infinity (or NaN for formats without infinities, like
f8e4m3fn). Longer computations (big reductions, deep chains) pass wider ``rtol``/``atol``.
"""

from __future__ import annotations

from collections.abc import Mapping

import ml_dtypes
import numpy as np

from ..ir.dtypes import DType, get_dtype

ORACLE = "float64"

_FLOAT_TOL = {
    "f32": 1e-5,
    "tf32": 2e-3,
    "f16": 2e-3,
    "bf16": 1e-2,
    "f8e3m4": 6.25e-2,
    "f8e4m3": 1.25e-1,
    "f8e4m3fn": 1.25e-1,
    "f8e5m2": 2.5e-1,
}
_ORACLE_TOL = 1e-9


def _resolve(dtype) -> DType | str:
    if (
        (isinstance(dtype, str) and dtype == ORACLE)
        or dtype is np.float64
        or (isinstance(dtype, np.dtype) and dtype == np.float64)
    ):
        return ORACLE
    return get_dtype(dtype)


def tolerance_for(dtype) -> tuple[float, float]:
    """``(rtol, atol)`` for results computed in ``dtype`` (a DType, its name, or "float64")."""
    dt = _resolve(dtype)
    if dt == ORACLE:
        return (_ORACLE_TOL, _ORACLE_TOL)
    if not dt.is_float:
        return (0.0, 0.0)
    t = _FLOAT_TOL[dt.name]
    return (t, t)


def _overflow_ok(g: np.ndarray, e: np.ndarray, dt: DType | str) -> np.ndarray:
    """Elements whose reference overflows ``dt`` and whose result is the hardware's overflow."""
    if dt == ORACLE or not dt.is_float:
        return np.zeros(g.shape, bool)
    np_dt = np.float32 if dt.name == "tf32" else dt.np_dtype
    info = ml_dtypes.finfo(np_dt)
    has_inf = bool(np.isinf(np.array([np.inf]).astype(np_dt))[0])
    over = np.isfinite(e) & (np.abs(e) > float(info.max))
    if has_inf:
        hit = np.isinf(g) & (np.sign(g) == np.sign(e))
    else:
        hit = np.isnan(g)
    return over & hit


def close_mask(got, ref, dtype, rtol: float, atol: float) -> np.ndarray:
    """Per element: does ``got`` pass against ``ref`` under the rule of the module docstring
    (same shapes; ``dtype`` as for ``assert_close``)."""
    dt = _resolve(dtype)
    g = np.asarray(got).astype(np.float64)
    e = np.asarray(ref).astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(g - e)
        allowed = atol + rtol * np.abs(e)
        # an infinite reference must be matched exactly (its "allowed" error is infinite)
        ok = (np.isfinite(e) & (err <= allowed)) | (g == e) | (np.isnan(g) & np.isnan(e))
        if dt != ORACLE and not dt.is_float:
            ok = (g == e) | (np.isnan(g) & np.isnan(e))
        ok |= _overflow_ok(g, e, dt)
    return ok


def _label(what: str, dt, rtol: float, atol: float) -> str:
    name = dt if isinstance(dt, str) else dt.name
    head = f"{what}: " if what else ""
    return f"{head}[{name}, rtol={rtol:g}, atol={atol:g}]"


def assert_close(
    got, ref, dtype, *, what: str = "", rtol: float | None = None, atol: float | None = None
) -> None:
    """Assert ``got`` (computed in ``dtype``) matches the float64 reference ``ref``.

    Shapes must be equal (no broadcasting). Integer and bool dtypes compare exactly. On
    failure the AssertionError names ``what``, the number of bad elements and the worst one
    (index, got, expected, error and allowed error). See the module docstring for the rule.
    """
    dt = _resolve(dtype)
    d_rtol, d_atol = tolerance_for(dt)
    rtol = d_rtol if rtol is None else rtol
    atol = d_atol if atol is None else atol
    label = _label(what, dt, rtol, atol)
    g_arr, e_arr = np.asarray(got), np.asarray(ref)
    if g_arr.shape != e_arr.shape:
        raise AssertionError(f"{label} shape {g_arr.shape} differs from the reference's {e_arr.shape}")
    g = g_arr.astype(np.float64)
    e = e_arr.astype(np.float64)
    ok = close_mask(g, e, dt, rtol, atol)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(g - e)
        allowed = atol + rtol * np.abs(e)
    bad = ~ok
    n_bad = int(bad.sum())
    if not n_bad:
        return
    with np.errstate(invalid="ignore", divide="ignore"):
        excess = np.where(bad, np.nan_to_num(err / np.maximum(allowed, 1e-300), nan=np.inf), -1.0)
    flat = int(np.argmax(excess))
    idx = tuple(int(i) for i in np.unravel_index(flat, g.shape)) if g.shape else ()
    gv, ev = float(g.reshape(-1)[flat]), float(e.reshape(-1)[flat])
    raise AssertionError(
        f"{label} {n_bad} of {g.size} elements differ; worst at index {idx}: got {gv!r}, "
        f"expected {ev!r} (abs err {abs(gv - ev):.3g}, allowed {float(allowed.reshape(-1)[flat]):.3g})"
    )


def assert_outputs_close(
    got: Mapping[str, np.ndarray],
    ref: Mapping[str, np.ndarray],
    graph,
    *,
    mode: str = "faithful",
    what: str = "",
    rtol: float | None = None,
    atol: float | None = None,
) -> None:
    """``assert_close`` on every output of ``graph``, each with its own dtype's tolerance
    (``mode="float64"``: float outputs use the oracle tolerance)."""
    outs = graph.outputs
    if set(got) != set(outs) or set(ref) != set(outs):
        raise AssertionError(
            f"{what or graph.name}: outputs {sorted(got)} / reference {sorted(ref)} do not match "
            f"the graph's {sorted(outs)}"
        )
    for name, v in outs.items():
        dt = ORACLE if (mode == "float64" and v.dtype.is_float) else v.dtype
        assert_close(got[name], ref[name], dt, what=f"{what or graph.name}.{name}", rtol=rtol, atol=atol)
