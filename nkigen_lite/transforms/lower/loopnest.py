"""A loop nest shared by several participants (fusion groups, matmul row tiles).

Participants with identical loop structures are emitted inside one set of fori_loops: at each
level every participant emits what belongs there (``before``), the next loop is entered
(full chunks in a fori_loop, then a peeled remainder), and on the way out every participant
finishes what spans the inner loops (``after``). A single participant is the plain case.
"""

from __future__ import annotations

from typing import Protocol

from .instance import LoopSpec


class Participant(Protocol):
    """What the shared loop nest asks of each item it emits."""

    loops: list[LoopSpec]

    def prepare(self) -> None: ...
    def top_instance(self): ...
    def enter(self, inst, level: int, offset, extent: int): ...
    def before(self, level: int, inst) -> None: ...
    def after(self, level: int, inst) -> None: ...


def loop_signature(loops: list[LoopSpec]) -> tuple:
    """What must be equal for two participants to share their loops."""
    return tuple((lp.kind, lp.chunk, lp.n_full, lp.rem) for lp in loops)


def run_loop_nest(b, loops: list[LoopSpec], participants: list) -> None:
    """Emit the participants' shared loop nest (see the module docstring)."""
    for p in participants:
        p.prepare()

    def level(lv: int, insts: list) -> None:
        for p, inst in zip(participants, insts):
            p.before(lv, inst)
        if lv < len(loops):
            lp = loops[lv]

            def go(offset, extent: int) -> None:
                level(lv + 1, [p.enter(inst, lv, offset, extent) for p, inst in zip(participants, insts)])

            if lp.kind == "I":
                with b.fori_loop(0, lp.n_full) as i:
                    go(i, 1)
            else:
                if lp.n_full == 1:
                    go(0, lp.chunk)
                elif lp.n_full > 1:
                    with b.fori_loop(0, lp.n_full) as c:
                        go(c * lp.chunk, lp.chunk)
                if lp.rem:
                    go(lp.n_full * lp.chunk, lp.rem)
        for p, inst in zip(participants, insts):
            p.after(lv, inst)

    level(0, [p.top_instance() for p in participants])
