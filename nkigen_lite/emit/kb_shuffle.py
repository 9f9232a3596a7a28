"""Kernel Builder rule of ``nki.stream_shuffle`` (nki/ops/shuffle.py). No public Kernel Builder
reference documents it: the name and keywords follow ``nki.isa`` (kb_table.py marks it
assumed), checked only against the recording stand-in (tests/emit/kb_standin.py)."""

from __future__ import annotations

from ..nki import ops as K
from . import kb_table as T
from .kb_rules import rule


@rule(K.StreamShuffleOp)
def _stream_shuffle(w, op) -> None:
    w.isa_call(
        T.STREAM_SHUFFLE,
        dst=w.access(op, "dst"),
        src=w.access(op, "src"),
        shuffle_mask=list(op.attrs["mask"]),
    )
