"""docs/numpy_coverage.md is what running every probe of nkigen_lite/testing/numpy_coverage.py
gives (regenerate with `uv run python -m nkigen_lite.testing.numpy_coverage`)."""

from __future__ import annotations

import re

from nkigen_lite.testing import numpy_coverage as cov


def test_the_coverage_doc_is_current():
    want = cov.coverage_doc()
    assert cov.DOC.read_text() == want, (
        "docs/numpy_coverage.md is out of date: run `uv run python -m nkigen_lite.testing.numpy_coverage`"
    )


def test_every_api_has_one_row_and_the_count_adds_up():
    text = cov.DOC.read_text()
    apis = [p.api for p in cov.PROBES]
    assert len(apis) == len(set(apis)), "an API is probed twice"
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert len(rows) == len(apis)
    ok = sum("matches NumPy" in r for r in rows)
    m = re.search(r"\*\*(\d+) of (\d+) APIs work\.\*\*", text)
    assert m and (int(m[1]), int(m[2])) == (ok, len(apis))


def test_a_probe_that_disagrees_with_numpy_is_reported():
    p = cov.Probe("wrong", "-", lambda x: x + 1.0, (cov.X,))
    assert cov.run_probe(p) == ""
    bad = cov.Probe(
        "wrong", "-", lambda x: x * 1.0 if isinstance(x, __import__("numpy").ndarray) else x * 2.0, (cov.X,)
    )
    assert "AssertionError" in cov.run_probe(bad)
