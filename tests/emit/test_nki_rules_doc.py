"""docs/nki_rules.md covers every NKI op and every instruction the emitter writes, and its rule
keys are exactly the negative cases of tests/emit/test_rejected_by_both.py."""

import re
from pathlib import Path

from nkigen_lite.emit.source_rules import SOURCE_RULES
from nkigen_lite.ir.op import OP_REGISTRY
from nkigen_lite.nki.ops import ALL_OPS

from .test_rejected_by_both import CASES

DOC = (Path(__file__).parents[2] / "docs" / "nki_rules.md").read_text()
ROWS = [line for line in DOC.splitlines() if line.startswith("| ")]
ENUMS = (
    "nisa.engine",
    "nisa.reduce_cmd",
    "nisa.dge_mode",
    "nl.add",
    "nl.sbuf",
    "nl.psum",
    "nl.hbm",
    "nl.shared_hbm",
)


def test_every_nki_op_has_a_row_with_a_source():
    names = {cls.name for cls in ALL_OPS} | {n for n in OP_REGISTRY if n.startswith("nki.")}
    for name in sorted(names):
        rows = [r for r in ROWS if f"`{name}`" in r]
        assert rows, f"docs/nki_rules.md has no row for NKI op {name}: add its rules and source"
        assert rows[0].rstrip(" |").rsplit("|", 1)[-1].strip(), f"{name}: the row names no source"


def test_every_emitted_instruction_has_a_row():
    calls = {c for rule in SOURCE_RULES.values() for c in rule.calls if not c.startswith(ENUMS)}
    assert calls, "the emitter declares the calls it writes"
    for call in sorted(calls):
        assert any(f"`{call}" in r for r in ROWS), f"docs/nki_rules.md lists no rules for {call}"


def test_rule_keys_match_the_negative_cases():
    keys = set(re.findall(r"`([a-z_0-9]+\.[a-z_0-9]+)`", DOC))
    keys = {k for k in keys if k.split(".")[0] in {c.split(".")[0] for c in CASES}}
    assert keys == set(CASES), (
        f"in the doc only: {sorted(keys - set(CASES))}; tested only: {sorted(set(CASES) - keys)}"
    )
