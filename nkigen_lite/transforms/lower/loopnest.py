"""A loop nest shared by several participants (fusion groups, matmul row tiles).

Participants with identical loop structures are emitted inside one set of fori_loops: at each
level every participant emits what belongs there (``before``), the next loop is entered
(full chunks in a fori_loop, then a peeled remainder), and on the way out every participant
finishes what spans the inner loops (``after``). A single participant is the plain case.
"""

from __future__ import annotations

from typing import Protocol

from ...nki.types import Affine
from .instance import LoopSpec


class Participant(Protocol):
    """What the shared loop nest asks of each item it emits."""

    loops: list[LoopSpec]

    def prepare(self) -> None: ...
    def top_instance(self): ...
    def enter(self, inst, level: int, offset, extent: int): ...
    def before(self, level: int, inst) -> None: ...
    def after(self, level: int, inst) -> None: ...


class Shifted:
    """A participant whose partition-loop offsets start at ``base`` rows (an Affine of outer
    loops): the same loop nest run over one group of rows (mlp_block.py's row groups)."""

    def __init__(self, part, base):
        self.part, self.base, self.loops = part, base, part.loops

    def prepare(self) -> None:
        self.part.prepare()

    def top_instance(self):
        return self.part.top_instance()

    def enter(self, inst, level: int, offset, extent: int):
        if self.loops[level].kind == "P":
            offset = Affine.of(offset) + self.base
        return self.part.enter(inst, level, offset, extent)

    def before(self, level: int, inst) -> None:
        self.part.before(level, inst)

    def after(self, level: int, inst) -> None:
        self.part.after(level, inst)


def loop_signature(loops: list[LoopSpec]) -> tuple:
    """What must be equal for two participants to share their loops."""
    return tuple((lp.kind, lp.chunk, lp.n_full, lp.rem) for lp in loops)


def run_loop_nest(b, loops: list[LoopSpec], participants: list, shared: int | None = None) -> None:
    """Emit the participants' shared loop nest (see the module docstring). With ``shared``,
    only the first ``shared`` loops are common: inside them, each participant in turn runs its
    own inner loops (``p.loops[shared:]``) to completion, so a later participant can read what
    an earlier one finished there (row_sequence.py)."""
    for p in participants:
        p.prepare()
    split = len(loops) if shared is None else shared

    def level(lv: int, insts: list, who: list) -> None:
        if shared is not None and lv == split and len(who) > 1:
            for p, inst in zip(who, insts):
                level(lv, [inst], [p])
            return
        for p, inst in zip(who, insts):
            p.before(lv, inst)
        nest = who[0].loops if lv >= split else loops
        if lv < len(nest):
            lp = nest[lv]

            def go(offset, extent: int) -> None:
                level(lv + 1, [p.enter(inst, lv, offset, extent) for p, inst in zip(who, insts)], who)

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
        for p, inst in zip(who, insts):
            p.after(lv, inst)

    level(0, [p.top_instance() for p in participants], list(participants))
