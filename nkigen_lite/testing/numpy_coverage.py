"""The NumPy APIs NKIPy users write (the reference list: the NumPy column of
shared/reference/nkipy_ops_and_workloads.md §3, one row per API or mode) with one probe each:
a small function using the API, traced with ``@nk.trace``, compiled, run on the NKI interpreter
and compared with NumPy itself (float64 reference, the dtype's tolerance; integers exact).

``uv run python -m nkigen_lite.testing.numpy_coverage`` runs every probe and rewrites
docs/numpy_coverage.md; ``tests/trace/test_numpy_coverage.py`` runs them again and fails when
the document differs (a probe that starts or stops working changes its row).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DOC = Path(__file__).resolve().parents[2] / "docs" / "numpy_coverage.md"

_R = np.random.default_rng(2026)
X = _R.standard_normal((4, 6)).astype(np.float32)  # general floats
P = (np.abs(X) + 0.5).astype(np.float32)  # positive floats
Y = _R.standard_normal((4, 6)).astype(np.float32)
I = _R.integers(-9, 10, (4, 6)).astype(np.int32)  # small ints
J = _R.integers(1, 5, (4, 6)).astype(np.int32)  # positive ints
M = X > 0  # a bool mask
W = _R.standard_normal((6, 3)).astype(np.float32)  # a right matmul operand
C3 = _R.standard_normal((2, 4, 6)).astype(np.float32)
D3 = _R.standard_normal((2, 6, 3)).astype(np.float32)
TABLE = _R.standard_normal((16, 8)).astype(np.float32)  # an embedding table
IDS = np.array([3, 0, 15, 3, 7], np.int32)  # traced row ids
COLS = np.array([5, 0, 7], np.int32)  # traced column ids
POS = np.array(2, np.int32)  # a traced position
ROW = _R.standard_normal((4,)).astype(np.float32)  # a column to write
ARGS = _R.integers(0, 6, (4, 2)).astype(np.int32)  # indices along axis 1 of X


@dataclass(frozen=True)
class Probe:
    """One API: its name as users write it, the reference section, a function using it and
    the arrays it is traced on."""

    api: str
    section: str
    fn: Callable
    args: tuple


def _p(api, section, fn, *args):
    return Probe(api, section, fn, args)


def _put_along(x, idx):
    y = x.copy()
    np.put_along_axis(y, idx, 0.0, axis=1)
    return y


def _set_traced_row(x, t, v):
    y = x.copy()
    y[t] = v
    return y


def _set_traced_col(x, t, v):
    y = x.copy()
    y[:, t] = v
    return y


def _set_strided(x):
    y = x.copy()
    y[::2, ::3] = 0.0
    return y


def _set_block(x):
    y = x.copy()
    y[1:3, 2:5] = 7.0
    return y


def _padder(mode):
    return lambda x: np.pad(x, ((1, 2), (3, 0)), mode=mode)


def _copyto(x):
    y = np.zeros_like(x)
    np.copyto(y, x)
    return y


PROBES: tuple[Probe, ...] = (
    # §3.1 elementwise unary
    *(_p(f"np.{n}", "3.1", getattr(np, n), X) for n in ("exp", "tanh", "sin", "cos", "arctan")),
    *(_p(f"np.{n}", "3.1", getattr(np, n), P) for n in ("log", "sqrt", "reciprocal", "log1p", "log2")),
    *(_p(f"np.{n}", "3.1", getattr(np, n), X) for n in ("sign", "abs", "floor", "ceil", "negative")),
    *(_p(f"np.{n}", "3.1", getattr(np, n), X) for n in ("square", "tan", "rint", "trunc", "expm1")),
    _p("-x", "3.1", lambda x: -x, X),
    _p("np.logical_not", "3.1", np.logical_not, M),
    _p("np.round", "3.1", lambda x: np.round(x * 4.0), X),
    _p("np.round(decimals)", "3.1", lambda x: np.round(x, 2), X),
    _p("np.clip", "3.1", lambda x: np.clip(x, -0.5, 0.5), X),
    _p("np.isnan", "3.1", np.isnan, X),
    _p("np.isfinite", "3.1", np.isfinite, X),
    _p("np.invert / ~x", "3.1", lambda x: ~x, I),
    _p("np.bitwise_not", "3.1", np.bitwise_not, I),
    _p("x.astype", "3.1", lambda x: x.astype(np.int32), X),
    _p("np.copy", "3.1", np.copy, X),
    _p("+x", "3.1", lambda x: +x, X),
    # §3.2 elementwise binary and comparisons
    _p("x + y", "3.2", lambda a, b: a + b, X, Y),
    _p("x - y", "3.2", lambda a, b: a - b, X, Y),
    _p("x * y", "3.2", lambda a, b: a * b, X, Y),
    _p("x / y", "3.2", lambda a, b: a / b, X, P),
    _p("x ** y", "3.2", lambda a, b: a**b, P, Y),
    _p("x ** 2", "3.2", lambda a: a**2, X),
    _p("np.maximum", "3.2", np.maximum, X, Y),
    _p("np.minimum", "3.2", np.minimum, X, Y),
    _p("x // y", "3.2", lambda a, b: a // b, I, J),
    _p("np.floor_divide (float)", "3.2", np.floor_divide, X, P),
    _p("x % y", "3.2", lambda a, b: a % b, I, J),
    _p("np.mod", "3.2", np.mod, X, P),
    _p("np.remainder", "3.2", np.remainder, I, J),
    _p("x & y", "3.2", lambda a, b: a & b, I, J),
    _p("x | y", "3.2", lambda a, b: a | b, I, J),
    _p("x ^ y", "3.2", lambda a, b: a ^ b, I, J),
    _p("x == y", "3.2", lambda a, b: a == b, I, J),
    _p("x != y", "3.2", lambda a, b: a != b, I, J),
    _p("x < y", "3.2", lambda a, b: a < b, X, Y),
    _p("x <= y", "3.2", lambda a, b: a <= b, X, Y),
    _p("x > y", "3.2", lambda a, b: a > b, X, Y),
    _p("x >= y", "3.2", lambda a, b: a >= b, X, Y),
    _p("np.logical_and", "3.2", lambda a, b: np.logical_and(a > 0, b > 0), X, Y),
    _p("np.logical_or", "3.2", lambda a, b: np.logical_or(a > 0, b > 0), X, Y),
    _p("np.logical_xor", "3.2", lambda a, b: np.logical_xor(a > 0, b > 0), X, Y),
    _p("np.logaddexp", "3.2", np.logaddexp, X, Y),
    _p("np.where", "3.2", lambda m, a, b: np.where(m, a, b), M, X, Y),
    # §3.3 reductions and scans
    _p("np.sum", "3.3", lambda x: np.sum(x, axis=1), X),
    _p("np.sum (all)", "3.3", np.sum, X),
    _p("np.max", "3.3", lambda x: np.max(x, axis=0), X),
    _p("np.min", "3.3", lambda x: np.min(x, axis=1, keepdims=True), X),
    _p("np.mean", "3.3", lambda x: np.mean(x, axis=-1), X),
    _p("np.var", "3.3", lambda x: np.var(x, axis=-1), X),
    _p("np.var(ddof=1)", "3.3", lambda x: np.var(x, axis=-1, ddof=1), X),
    _p("np.std", "3.3", lambda x: np.std(x, axis=0), X),
    _p("np.prod", "3.3", lambda x: np.prod(x, axis=1), X),
    _p("np.argmax", "3.3", lambda x: np.argmax(x, axis=1), X),
    _p("np.argmin", "3.3", lambda x: np.argmin(x, axis=0), X),
    _p("np.any", "3.3", lambda x: np.any(x > 1, axis=1), X),
    _p("np.all", "3.3", lambda x: np.all(x > -2, axis=0), X),
    _p("np.count_nonzero", "3.3", lambda x: np.count_nonzero(x, axis=1), I),
    _p("np.cumsum", "3.3", lambda x: np.cumsum(x, axis=1), X),
    _p("np.cumsum (int)", "3.3", lambda x: np.cumsum(x, axis=0), I),
    _p("nk.topk", "3.3", lambda x: __import__("nkigen_lite").topk(x, 3), X),
    # §3.4 matmul, dot, einsum, linalg
    _p("x @ y", "3.4", lambda a, b: a @ b, X, W),
    _p("np.matmul (batched)", "3.4", np.matmul, C3, D3),
    _p("np.dot", "3.4", lambda a, b: np.dot(a, b), X, W),  # np.dot has no signature on numpy 2.2
    _p("np.outer", "3.4", np.outer, X[0], W[:, 0]),
    _p("np.linalg.norm", "3.4", np.linalg.norm, X),
    _p("np.linalg.norm(axis)", "3.4", lambda x: np.linalg.norm(x, axis=-1), X),
    _p("np.trace", "3.4", np.trace, X),
    _p("np.einsum (matmul)", "3.4", lambda a, b: np.einsum("ij,jk->ik", a, b), X, W),
    _p("np.einsum (batched)", "3.4", lambda a, b: np.einsum("bij,bjk->bik", a, b), C3, D3),
    _p("np.einsum (transposed out)", "3.4", lambda a, b: np.einsum("bij,bjk->kbi", a, b), C3, D3),
    # §3.5 shape and layout
    _p("np.reshape", "3.5", lambda x: np.reshape(x, (3, 8)), X),
    _p("x.reshape(-1)", "3.5", lambda x: x.reshape(-1), X),
    _p("x.ravel", "3.5", lambda x: x.ravel(), X),
    _p("np.transpose / x.T", "3.5", lambda x: x.T, X),
    _p("np.swapaxes", "3.5", lambda x: np.swapaxes(x, 0, 2), C3),
    _p("np.expand_dims", "3.5", lambda x: np.expand_dims(x, (0, 2)), X),
    _p("np.squeeze", "3.5", lambda x: np.squeeze(x[None, :, None]), X),
    _p("np.broadcast_to", "3.5", lambda x: np.broadcast_to(x[0], (3, 6)), X),
    _p("np.concatenate", "3.5", lambda a, b: np.concatenate([a, b], axis=1), X, Y),
    _p("np.stack", "3.5", lambda a, b: np.stack([a, b], axis=1), X, Y),
    _p("np.split", "3.5", lambda x: np.split(x, 3, axis=1), X),
    _p("np.split (indices)", "3.5", lambda x: np.split(x, [1, 4], axis=1), X),
    _p("np.repeat", "3.5", lambda x: np.repeat(x, 2, axis=0), X),
    _p("np.tile", "3.5", lambda x: np.tile(x, (2, 1)), X),
    *(
        _p(f"np.pad ({m})", "3.5", _padder(m), X)
        for m in ("constant", "edge", "reflect", "symmetric", "wrap")
    ),
    _p("np.flip", "3.5", lambda x: np.flip(x, 1), X),
    _p("np.roll", "3.5", lambda x: np.roll(x, 2, axis=1), X),
    _p("np.diff", "3.5", lambda x: np.diff(x, axis=1), X),
    _p("np.diff(prepend)", "3.5", lambda x: np.diff(x, prepend=0.0), X),
    _p("np.tril", "3.5", np.tril, X),
    _p("np.triu", "3.5", lambda x: np.triu(x, 1), X),
    _p("np.diag (extract)", "3.5", np.diag, X),
    _p("np.diag (build)", "3.5", lambda x: np.diag(x[0]), X),
    _p("np.zeros_like", "3.5", lambda x: np.zeros_like(x) + x, X),
    _p("np.ones_like", "3.5", lambda x: np.ones_like(x) + x, X),
    _p("np.empty_like", "3.5", lambda x: np.empty_like(x).shape[0] + x, X),
    _p("np.full_like", "3.5", lambda x: np.full_like(x, 3.0) + x, X),
    _p("np.zeros", "3.5", lambda x: np.zeros((4, 6), np.float32) + x, X),
    _p("np.full", "3.5", lambda x: np.full((4, 6), 2.0, np.float32) * x, X),
    _p("np.copyto", "3.5", _copyto, X),
    # §3.6 indexing, gather and scatter
    _p("x[a:b:s, i]", "3.6", lambda x: x[1:4:2, 3], X),
    _p("x[static idx]", "3.6", lambda x: x[np.array([2, 0, 2])], X),
    _p("np.take (static)", "3.6", lambda x: np.take(x, [5, 1], axis=1), X),
    _p("table[ids] (traced)", "3.6", lambda t, i: t[i], TABLE, IDS),
    _p("np.take (traced, axis 0)", "3.6", lambda t, i: np.take(t, i, axis=0), TABLE, IDS),
    _p("np.take (traced, axis 1)", "3.6", lambda t, i: np.take(t, i, axis=1), TABLE, COLS),
    _p("np.take_along_axis", "3.6", lambda x, i: np.take_along_axis(x, i, axis=1), X, ARGS),
    _p("x[t] = v (traced t)", "3.6", _set_traced_row, X.copy(), POS, X[0].copy()),
    _p("x[:, t] = v (traced t)", "3.6", _set_traced_col, X.copy(), POS, ROW),
    _p("np.put_along_axis", "3.6", _put_along, X.copy(), ARGS),
    _p("x[::2, ::3] = v", "3.6", _set_strided, X.copy()),
    _p("x[a:b, c:d] = v", "3.6", _set_block, X.copy()),
)
"""Every API of the reference list, with its probe."""


def run_probe(p: Probe) -> str:
    """'' when the probe traces, compiles and matches NumPy; else the first line of the error."""
    import nkigen_lite as nk

    from .tolerance import assert_close

    args = [np.array(a, copy=True) for a in p.args]
    try:
        want = p.fn(*[np.array(a, copy=True) for a in p.args])
        k = nk.compile(p.fn, *args)
        got = k(*[np.array(a, copy=True) for a in p.args])
        wants = want if isinstance(want, (list, tuple)) else (want,)
        gots = got if isinstance(got, (list, tuple)) else (got,)
        if len(wants) != len(gots):
            return f"{len(gots)} results, NumPy gives {len(wants)}"
        ref = p.fn(*[np.asarray(a, np.float64) if a.dtype.kind == "f" else a.copy() for a in p.args])
        refs = ref if isinstance(ref, (list, tuple)) else (ref,)
        for g, w, r in zip(gots, wants, refs):
            w = np.asarray(w)
            if np.shape(g) != w.shape:
                return f"shape {np.shape(g)}, NumPy {w.shape}"
            dt = nk.get_dtype(np.asarray(g).dtype)
            if p.api == "np.empty_like":
                continue
            if dt.is_float:
                assert_close(g, np.asarray(r, np.float64), dt)
            else:
                np.testing.assert_array_equal(g, w)
    except Exception as e:  # noqa: BLE001  (any failure is the row's status)
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        return f"{type(e).__name__}: {first}"[:160]
    return ""


def coverage_doc() -> str:
    """docs/numpy_coverage.md, from running every probe."""
    rows, ok = [], 0
    for p in PROBES:
        err = run_probe(p)
        ok += not err
        status = "traced, compiled, matches NumPy" if not err else f"**no**: {err}"
        rows.append(f"| `{p.api}` | {p.section} | {status.replace('|', '/')} |")
    head = [
        "# NumPy coverage of `@nk.trace`",
        "",
        "Every NumPy API of the reference list (what NKIPy users write:",
        "shared/reference/nkipy_ops_and_workloads.md §3; one row per API, or per mode where the",
        "modes lower differently), probed on a small example: traced, compiled for trn2, run on",
        "the NKI interpreter and compared with NumPy (float64 reference, the dtype's tolerance;",
        "integers exact). Generated by `uv run python -m nkigen_lite.testing.numpy_coverage`",
        "(nkigen_lite/testing/numpy_coverage.py holds the probes); tests/trace/test_numpy_coverage.py",
        "fails when this file is out of date.",
        "",
        f"**{ok} of {len(PROBES)} APIs work.**",
        "",
        "| NumPy API | reference § | status |",
        "| --- | --- | --- |",
    ]
    return "\n".join(head + rows) + "\n"


def main() -> int:
    text = coverage_doc()
    if not DOC.exists() or DOC.read_text() != text:
        DOC.write_text(text)
        print(f"updated {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
