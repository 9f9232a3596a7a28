"""Cost rule of ``nki.stream_shuffle`` (nki/ops/shuffle.py), registered into ``COST_RULES``:
``max(MIN_II, N)`` Vector-engine cycles, N the elements per partition. No source gives its cost;
assumed one pass over the data, as ``tensor_copy`` on VectorE [OLD-ISA]."""

from __future__ import annotations

from ..nki.ops import StreamShuffleOp
from ..nki.target import Target
from .instruction_cost import COST_RULES, InstructionCost, _cycles, _min_ii


def _shuffle(op, target: Target) -> InstructionCost:
    return _cycles(op, _min_ii(op.access("src").free_size, target), target)


COST_RULES[StreamShuffleOp] = _shuffle
