"""P1 / issue 10 point 4: degenerate contractions (K = 1; batched M or N = 1) compile to
elementwise code, not one Tensor-engine matmul per batch instance. Count-based bounds on the
kernels of the regression files (their values are checked by test_regressions.py)."""

from pathlib import Path

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
