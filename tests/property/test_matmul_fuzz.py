"""Differential fuzzing of the matmul family (nkigen_lite/testing/matmul_programs.py): random
programs — ``a @ b`` with transposed operands, 3-D @ 2-D, 3-D @ 3-D, broadcasting batch dims,
vectors, casts, bias / scale / activation / residual / cast epilogues, Linear layers, chained
matmuls, operand producers, sliced operands, mixed dtypes, integer matmuls, gathered rows and
selected experts — compiled with ``nk.compile``, run on the NKI interpreter (``k(*arrays)``)
and the simulator (``nk.simulate``), compared with float64 NumPy.

Tolerances (``Case.tolerance``): float inputs are multiples of 1/8 in [-2, 2], so products and
fp32 sums of K <= 4096 terms are exact; an output element may differ from the float64
reference by ``(2 + 2 e) u |a| @ |b|`` (plus |bias| / |residual|) for the output dtype's unit
roundoff ``u`` (f32 2**-24, f16 2**-11, bf16 2**-8) and ``e`` epilogue roundings, plus
``4 * 2**-24 * |a| @ |b|``: the bound scales with K through ``|a| @ |b|``. Integers exactly
(NumPy's wrapping matmul in the operands' dtype).

The ``ci`` profile draws small programs (each operand at most 2**16 elements); other
profiles (``NKIGEN_HYPOTHESIS_PROFILE=thorough``, ``NKIGEN_HYPOTHESIS_EXAMPLES=N``) draw up to
2**20-element operands (M up to 9 tiles, K up to 4096, N up to 4096).
"""

from __future__ import annotations

import os

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import nkigen_lite as nk
from nkigen_lite.testing.matmul_programs import MAX_ELEMENTS, Case, draw_case, draw_case2

CAP = 1 << 16 if os.environ.get("NKIGEN_HYPOTHESIS_PROFILE", "ci") == "ci" else MAX_ELEMENTS


def _check(case: Case, got, what: str) -> None:
    got = np.asarray(got)
    assert got.shape == case.ref.shape, f"{case.name} ({what}): shape {got.shape} != {case.ref.shape}"
    if case.out_dtype.startswith("int"):
        assert got.dtype == case.ref.dtype, f"{case.name} ({what}): dtype {got.dtype}"
        bad = got != case.ref
    else:
        bad = ~(np.abs(got.astype(np.float64) - case.ref) <= case.tolerance())
    if bad.any():
        ix = tuple(np.argwhere(bad)[0])
        raise AssertionError(
            f"{case.name} ({what}): {int(bad.sum())}/{bad.size} elements wrong, first {ix}: "
            f"got {got[ix]}, reference {case.ref[ix]}"
        )


def _run(case: Case) -> None:
    arrays = list(case.inputs.values())
    k = nk.compile(case.fn, *arrays)
    _check(case, k(*arrays), "Kernel")
    out = nk.simulate(k, dict(zip(k.input_names, arrays, strict=True)))
    _check(case, next(iter(out.values())), "nk.simulate")


@given(st.integers(0, 2**32 - 1))
def test_matmul_forms_match_numpy(seed):
    _run(draw_case(np.random.default_rng(seed), CAP))


@given(st.integers(0, 2**32 - 1))
def test_matmul_special_paths_match_numpy(seed):
    _run(draw_case2(np.random.default_rng(seed), CAP))
