"""NKI-source rules of the multi-core NKI ops: the collectives, as documented ``nki.collectives``
calls, and ``nki.program_id`` as ``nl.program_id(0)``.

``nki.all_reduce %d, %s {world = 2, op = add}`` becomes
``ncc.all_reduce(srcs=[s], dsts=[d], replica_group=ncc.ReplicaGroup([[0, 1]]), op=nl.add)``
(NKI 0.6 ``nki.collectives``: ``all_reduce(srcs, dsts, replica_group, op)``,
``all_gather(srcs, dsts, replica_group, collective_dim)``,
``reduce_scatter(srcs, dsts, replica_group, collective_dim, op)``,
``all_to_all(srcs, dsts, replica_group, collective_dim)`` [C6]); the module imports
``nki.collectives as ncc`` when the kernel has a collective.
"""

from __future__ import annotations

from ..nki.ops import collective as C
from ..nki.ops import program as P
from .nki_source import SourceEmitter
from .source_rules import rule


def _collective(e: SourceEmitter, op) -> None:
    ranks = ", ".join(str(r) for r in range(op.attrs["world"]))
    args = [
        ("srcs", f"[{e.access(op, 'src')}]"),
        ("dsts", f"[{e.access(op, 'dst')}]"),
        ("replica_group", f"ncc.ReplicaGroup([[{ranks}]])"),
    ]
    if not isinstance(op, C.AllReduceOp):
        args.append(("collective_dim", "0"))
    if op.reduces:
        args.append(("op", f"nl.{op.attrs['op']}"))
    e.call(f"ncc.{op.api}", args)


for _cls in C.COLLECTIVE_OPS:
    rule(_cls, f"ncc.{_cls.api}", "ncc.ReplicaGroup")(_collective)


@rule(P.ProgramIdOp, "nl.program_id")
def _program_id(e: SourceEmitter, op) -> None:
    # the launch is kernel[LNC](...) (module constant LNC, see nki_source._header)
    e.line(f"{e.name(op.result)} = nl.program_id(0)")
