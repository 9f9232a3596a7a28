"""A bitwise op between an integer tile and a bool value broadcast along the free dim (one
element per partition, or 0-d): the bool column is widened to the result dtype before the
bitvector ALU reads it. Found by the long end-to-end fuzz (the verifier rejected the bool
operand0 of nki.tensor_scalar)."""

from __future__ import annotations

import numpy as np
import pytest

import nkigen_lite as nk


@pytest.mark.parametrize("s0,s1", [((128, 1), (128, 8)), ((4, 1), (4, 8)), ((), (4, 8))])
def test_bitwise_with_a_bool_column_matches_numpy(s0, s1):
    b = nk.Builder("bitwise_bool_column")
    x0 = b.add_input("x0", s0, nk.bool_)
    x1 = b.add_input("x1", s1, nk.int32)
    b.set_outputs({"y": b.bitwise_and(x0, x1), "z": b.bitwise_or(x1, x0), "w": b.bitwise_xor(x0, x1)})
    rng = np.random.default_rng(len(s0))
    a0 = rng.random(s0) < 0.5
    a1 = rng.integers(-9, 9, s1).astype(np.int32)
    want = {"y": np.bitwise_and(a0, a1), "z": np.bitwise_or(a1, a0), "w": np.bitwise_xor(a0, a1)}
    k = nk.compile(b.graph)
    for got in (k.run({"x0": a0, "x1": a1}), nk.simulate(k, {"x0": a0, "x1": a1})):
        for name, ref in want.items():
            assert got[name].dtype == np.int32
            np.testing.assert_array_equal(got[name], ref)
