"""Registry completeness: every NKI op either has a cost rule or is known to cost nothing, and a
kernel using every instruction gets a positive cost for each on the engine it names."""

from __future__ import annotations

from nkigen_lite.nki.ops import (
    ALL_OPS,
    BN_OPS,
    COLLECTIVE_OPS,
    COMPUTE_OPS,
    INDIRECT_OPS,
    SCAN_OPS,
    SHUFFLE_OPS,
    TOP8_OPS,
    CollectiveOp,
    DmaCopyOp,
    DmaTransposeOp,
    ForiLoopOp,
)
from nkigen_lite.nki.target import TRN2
from nkigen_lite.perf import estimate, kernel_stats
from nkigen_lite.perf.instruction_cost import COST_RULES, FREE_OPS, instruction_cost

from .kernels import every_op


def test_every_instruction_has_a_cost_rule():
    assert set(COST_RULES) == set(COMPUTE_OPS) | {
        DmaCopyOp,
        DmaTransposeOp,
        *INDIRECT_OPS,
        *TOP8_OPS,
        *SCAN_OPS,
        *SHUFFLE_OPS,
        *BN_OPS,
    } | set(COLLECTIVE_OPS)


def test_every_nki_op_is_costed_free_or_a_loop():
    for cls in ALL_OPS:
        assert (cls in COST_RULES) + (cls in FREE_OPS) + (cls is ForiLoopOp) == 1, cls.name


def test_every_op_kernel_costs_each_instruction_on_its_engine():
    g = every_op()
    used = {type(o) for o in g.walk() if type(o) in COST_RULES}
    assert used == set(COST_RULES)  # the kernel really exercises every rule
    for op in g.walk():
        if type(op) in COST_RULES:
            c = instruction_cost(op, TRN2)
            assert c.ns > 0, op.name
            want = "collective" if isinstance(op, CollectiveOp) else op.engine
            assert c.engine == ("dma" if isinstance(op, DmaCopyOp) else want), op.name
    e = estimate(g)  # verifies the kernel first
    s = kernel_stats(g)
    assert e.instructions == s.instructions_dynamic
    for eng, n in s.dynamic_by_engine.items():
        assert (e.by_engine_ns[eng] > 0) == (n > 0), eng
