"""Regression tests stored as IR text (tests/regressions/*.mlir), one per bug found by fuzzing.

Each file holds one graph and header comments:

- ``// INPUT name: expr`` — the input array, a NumPy expression (``np``, ``ml_dtypes`` and a
  ``rng = np.random.default_rng(0)`` in scope);
- ``// REF name: expr`` — the expected output, computed by NumPy from the inputs (independently
  of nkigen_lite);
- ``// XFAIL: reason`` — a known open bug (strict: the test fails once the bug is fixed, so
  the marker must go);
- ``// ERROR: regex`` — parsing or compiling the file must raise an NkError matching regex.

The graph runs through ``nk.run(mode="float64")``, ``Kernel.run`` (NKI interpreter) and
``nk.simulate`` (emitted NKI source on the simulator), every RuntimeWarning raised as an
error. Each output is compared with its reference by ``assert_close`` with the output dtype's
tolerance (f32 1e-5, bf16 1e-2, ... relative to max(|ref|, 1); integers and bools exactly;
NaN matches NaN, an infinity the same infinity).
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.ir.errors import NkError
from nkigen_lite.testing import assert_close

HERE = Path(__file__).parent
FILES = sorted(HERE.glob("*.mlir"))
_HEADER = re.compile(r"^//\s*(INPUT|REF|XFAIL|ERROR)\b\s*(\w*)\s*:?\s*(.*)$")


def load_case(path: Path) -> dict:
    """The file's text and its header directives."""
    text = path.read_text()
    case = {"text": text, "inputs": {}, "refs": {}, "xfail": None, "error": None}
    for line in text.splitlines():
        m = _HEADER.match(line.strip())
        if not m:
            continue
        kind, name, expr = m.groups()
        if kind == "INPUT":
            case["inputs"][name] = expr
        elif kind == "REF":
            case["refs"][name] = expr
        elif kind == "XFAIL":
            case["xfail"] = (name + " " + expr).strip()
        else:
            case["error"] = (name + " " + expr).strip() if name else expr
    return case


def _params():
    out = []
    for p in FILES:
        case = load_case(p)
        marks = [pytest.mark.xfail(strict=True, reason=case["xfail"])] if case["xfail"] else []
        out.append(pytest.param(p, id=p.stem, marks=marks))
    return out


def _evaluate(case: dict, graph) -> tuple[dict, dict]:
    env = {"np": np, "ml_dtypes": ml_dtypes, "rng": np.random.default_rng(0)}
    feed = {}
    for name in graph.input_names:
        feed[name] = np.asarray(eval(case["inputs"][name], env))  # noqa: S307 (our own test files)
        env[name] = feed[name]
    with np.errstate(all="ignore"):
        refs = {n: np.asarray(eval(e, dict(env))) for n, e in case["refs"].items()}  # noqa: S307
    return feed, refs


@pytest.mark.parametrize("path", _params())
def test_regression(path: Path):
    case = load_case(path)
    if case["error"] is not None:
        with pytest.raises(NkError, match=case["error"]):
            nk.compile(nk.parse(case["text"]))
        return
    graph = nk.parse(case["text"])
    feed, refs = _evaluate(case, graph)
    assert set(refs) == set(graph.outputs), f"{path.name}: REF lines must cover every output"
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        oracle = nk.run(graph, feed, mode="float64")
        kernel = nk.compile(graph)
        runs = {
            "nk.run float64": oracle,
            "Kernel.run": kernel.run(feed),
            "nk.simulate": nk.simulate(kernel, feed),
        }
    for how, got in runs.items():
        assert list(got) == list(graph.outputs), f"{path.name} {how}: outputs {list(got)}"
        for name, v in graph.outputs.items():
            ref = refs[name]
            assert got[name].shape == v.type.shape, f"{path.name} {how} {name}: shape"
            assert_close(
                got[name],
                ref.astype(np.float64) if v.dtype.is_float else ref,
                v.dtype,
                what=f"{path.name} {how} {name}",
            )


def test_every_regression_file_has_references():
    for p in FILES:
        case = load_case(p)
        assert case["error"] or case["refs"], f"{p.name} has neither REF nor ERROR lines"
