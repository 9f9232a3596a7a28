"""Kernel Builder rules of the top-8 instructions (nki/ops/top8.py). No public Kernel Builder
reference documents them: the names and keywords follow ``nki.isa`` (kb_table.py marks them
assumed), checked only against the recording stand-in (tests/emit/kb_standin.py)."""

from __future__ import annotations

from ..nki import ops as K
from . import kb_table as T
from .kb_rules import rule


@rule(K.Max8Op)
def _max8(w, op) -> None:
    w.isa_call(T.MAX8, dst=w.access(op, "dst"), src=w.access(op, "src"))


@rule(K.FindIndex8Op)
def _find_index8(w, op) -> None:
    w.isa_call(T.FIND_INDEX8, dst=w.access(op, "dst"), data=w.access(op, "data"), vals=w.access(op, "vals"))


@rule(K.MatchReplace8Op)
def _match_replace8(w, op) -> None:
    w.isa_call(
        T.MATCH_REPLACE8,
        dst=w.access(op, "dst"),
        data=w.access(op, "data"),
        vals=w.access(op, "vals"),
        imm=float(op.attrs["imm"]),
    )
