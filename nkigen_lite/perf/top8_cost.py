"""Cost rules of the top-8 instructions (nki/ops/top8.py), registered into ``COST_RULES``.

max8 and nc_find_index8: N Vector-engine cycles, N the data's elements per partition [OLD-ISA];
nc_match_replace8: the page's "min(MIN_II, N)" read as max(MIN_II, N), the form of every
other Vector instruction (one pass over the data) [OLD-ISA].
"""

from __future__ import annotations

from ..nki.ops import FindIndex8Op, MatchReplace8Op, Max8Op
from ..nki.target import Target
from .instruction_cost import COST_RULES, InstructionCost, _cycles, _min_ii


def _pass(name: str):
    def cost(op, target: Target) -> InstructionCost:
        return _cycles(op, _min_ii(op.access(name).free_size, target), target)

    return cost


COST_RULES[Max8Op] = _pass("src")
COST_RULES[FindIndex8Op] = _pass("data")
COST_RULES[MatchReplace8Op] = _pass("data")
