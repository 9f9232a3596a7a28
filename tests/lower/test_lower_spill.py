"""The lowering's last resort (transforms/lower/limits.py): an op that a tile rule cannot lower
inside its fusion group is lowered again alone, its operands and result going through HBM
scratch buffers counted by ``k.stats().hbm_spills``; an op that fails alone is one BuildError
naming it and the hardware rule."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk
from nkigen_lite.ir.errors import BuildError
from nkigen_lite.tensor import ops as T
from nkigen_lite.transforms.lower import driver  # noqa: F401  (registers every rule)
from nkigen_lite.transforms.lower.limits import LoweringLimit
from nkigen_lite.transforms.lower.rules import TILE_RULES


def _graph():
    b = nk.Builder("spill")
    x = b.add_input("x", (64, 48), nk.float32)
    y = b.exp(x)
    b.set_outputs({"y": (y - b.max(y, axis=1, keepdims=True)) * 2.0})
    return b.graph


def _refusing_reduce_in_company(monkeypatch):
    """Make the reduce rule refuse to run next to other ops (as a hardware limit would)."""
    rule = TILE_RULES[T.ReduceOp]

    def picky(em, op, inst):
        if len(em.g.ops) > 1:
            raise LoweringLimit(f"test limit: {op.name} must be alone", op)
        return rule(em, op, inst)

    monkeypatch.setitem(TILE_RULES, T.ReduceOp, picky)


def test_the_limited_op_is_lowered_alone_through_hbm(monkeypatch):
    assert nk.compile(_graph()).stats().hbm_spills == 0
    _refusing_reduce_in_company(monkeypatch)
    g = _graph()
    k = nk.compile(g)
    assert k.stats().hbm_spills == 2  # the max's operand exp(x) and its result
    assert "HBM spills: 2" in k.stats().summary()
    xv = np.linspace(-1, 1, 64 * 48, dtype=np.float32).reshape(64, 48)
    e = np.exp(xv.astype(np.float64))
    ref = (e - e.max(1, keepdims=True)) * 2.0
    np.testing.assert_allclose(k.run({"x": xv})["y"], ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())
    np.testing.assert_allclose(nk.simulate(k, {"x": xv})["y"], ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())


def test_a_limit_met_alone_is_one_clear_error(monkeypatch):
    def never(_em, op, _inst):
        raise LoweringLimit(f"lowering: {op.name} hits a test limit", op)

    monkeypatch.setitem(TILE_RULES, T.ReduceOp, never)
    with pytest.raises(BuildError, match=r"tensor\.reduce hits a test limit"):
        nk.compile(_graph())
