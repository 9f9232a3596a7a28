"""Cost rules of the batch-norm statistics instructions (nki/ops/bn.py), registered into
``COST_RULES``: bn_stats max(MIN_II, N) and bn_aggr max(MIN_II, 13·N/3) Vector-engine cycles, N
the data's elements per partition (facts §7.2 cost table, [OLD-ISA])."""

from __future__ import annotations

from ..nki.ops import BnAggrOp, BnStatsOp
from ..nki.target import Target
from .instruction_cost import COST_RULES, InstructionCost, _cycles, _min_ii


def _bn_stats(op, target: Target) -> InstructionCost:
    return _cycles(op, _min_ii(op.access("data").free_size, target), target)


def _bn_aggr(op, target: Target) -> InstructionCost:
    n = op.access("data").free_size
    return _cycles(op, _min_ii(target.bn_aggr_cycles_per_element * n, target), target)


COST_RULES[BnStatsOp] = _bn_stats
COST_RULES[BnAggrOp] = _bn_aggr
