"""Text tests: every .mlir case under text/ (see text_driver.py)."""

import pytest

from nkigen_lite.transforms import CanonicalizeCounts, DecomposeCounts
from nkigen_lite.transforms.canonical import PATTERNS
from nkigen_lite.transforms.decomposition import PATTERN_CLASSES

from .text_driver import load_cases, run_case

CASES = load_cases()


def test_there_are_text_cases():
    assert len(CASES) >= 60


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_text_case(case):
    run_case(case)


def test_every_rule_and_decomposition_has_a_text_case():
    fired = set()
    for case in CASES:
        ctx = run_case(case)
        for kind in (CanonicalizeCounts, DecomposeCounts):
            fired |= set(ctx.get(kind) or {})
    rules = {type(p).__name__ for p in PATTERNS} | {"CSE"}
    # prod is native on trn2: its tree decomposition is tested with another target
    decompositions = {c.__name__ for c in PATTERN_CLASSES} - {"ProdByTree"}
    assert rules - fired == set() and decompositions - fired == set()
