"""Cost rule of ``nki.tensor_tensor_scan`` (nki/ops/scan.py), registered into ``COST_RULES``:
``max(MIN_II, 2N)`` Vector-engine cycles, N the elements per partition (two input streams, as
tensor_tensor with both inputs in SBUF) [OLD-ISA] (shared/reference/nki_isa_constraints.md §6.7)."""

from __future__ import annotations

from ..nki.ops import TensorTensorScanOp
from ..nki.target import Target
from .instruction_cost import COST_RULES, InstructionCost, _cycles, _min_ii


def _scan(op, target: Target) -> InstructionCost:
    return _cycles(op, _min_ii(2 * op.access("dst").free_size, target), target)


COST_RULES[TensorTensorScanOp] = _scan
