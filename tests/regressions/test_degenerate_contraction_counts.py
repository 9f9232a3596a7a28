"""P1 / issue 10 point 4: degenerate contractions (K = 1; batched M or N = 1) compile to
elementwise code, not one Tensor-engine matmul per batch instance. Count-based bounds on the
kernels of the regression files (their values are checked by test_regressions.py)."""

from pathlib import Path

import numpy as np
import pytest

import nkigen_lite as nk

HERE = Path(__file__).parent

# file -> bound on executed instructions (measured: 3,080 and 10; before the rewrite the K = 1
# case executed 330,885 instructions, one 1x1x1 matmul per batch instance)
BOUNDS = {"p1_k1_batched_matmul": 4_000, "p1_batched_matvec": 40}


@pytest.mark.parametrize("stem", sorted(BOUNDS))
def test_degenerate_contraction_is_elementwise(stem):
    k = nk.compile(nk.parse((HERE / f"{stem}.mlir").read_text()))
    stats = k.stats()
    assert stats.instructions_dynamic <= BOUNDS[stem], (stem, stats.instructions_dynamic)
    assert stats.dynamic_by_engine.get("tensor", 0) == 0, stats.dynamic_by_engine


def test_batched_vector_matrix_products_with_large_matrices_stay_on_the_tensor_engine():
    """A batch of M = 1 products whose matrices exceed one 128 x 128 tile (the MoE expert
    projections) is not rewritten to multiply + sum: that broadcast the vector against every
    matrix in f32 and moved the product through HBM (3 x the bytes); the Tensor engine reads
    each matrix once."""
    b = nk.Builder("batched_vm")
    x = b.add_input("x", (32, 1, 256), nk.bfloat16)
    w = b.add_input("w", (32, 256, 128), nk.bfloat16)
    b.set_outputs({"y": x @ w})
    k = nk.compile(b.graph)
    s = k.stats()
    assert s.dynamic_by_engine.get("tensor", 0) > 0, s.dynamic_by_engine
    assert s.hbm_bytes <= 1.05 * s.min_hbm_bytes, s.summary()
    rng = np.random.default_rng(0)
    ins = {
        n: rng.standard_normal(v.type.shape).astype(nk.bfloat16.np_dtype)
        for n, v in zip(("x", "w"), b.graph.inputs)
    }
    ref = ins["x"].astype(np.float64) @ ins["w"].astype(np.float64)
    got = k.run(ins)["y"].astype(np.float64)
    assert np.abs(got - ref).max() <= 1e-2 * np.abs(ref).max()
