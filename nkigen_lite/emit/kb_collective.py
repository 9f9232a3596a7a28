"""Kernel Builder rules of the multi-core NKI ops (``nki.program_id``: the builder's program id,
assumed name in kb_table.PROGRAM_ID) and of the collective NKI ops (the reference emits collectives through
the Kernel Builder's collective calls; names and assumed keywords in kb_table.COLLECTIVES)."""

from __future__ import annotations

from ..nki.ops import collective as C
from ..nki.ops import program as P
from . import kb_table as T
from .kb_rules import rule


def _collective(w, op) -> None:
    kw = {
        "srcs": [w.access(op, "src")],
        "dsts": [w.access(op, "dst")],
        "replica_group": [list(range(op.attrs["world"]))],
    }
    if not isinstance(op, C.AllReduceOp):
        kw["collective_dim"] = 0
    if op.reduces:
        kw["op"] = w.alu(op.attrs["op"])
    w.isa_call(T.COLLECTIVES[op.api], **kw)


for _cls in C.COLLECTIVE_OPS:
    rule(_cls)(_collective)


@rule(P.ProgramIdOp)
def _program_id(w, op) -> None:
    w.env[op.result] = getattr(w.nb, T.PROGRAM_ID)(0)
