"""Text tests: every .mlir case under text/ (see text_driver.py)."""

import pytest

from .text_driver import load_cases, run_case

CASES = load_cases()


def test_there_are_text_cases():
    assert len(CASES) >= 40


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_text_case(case):
    run_case(case)
