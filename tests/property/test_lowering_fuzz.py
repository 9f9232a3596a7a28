"""Differential fuzzing of the reduction, element-wise, indexed and topk lowerings
(nkigen_lite/testing/lowering_fuzz.py: program families, shapes straddling the lowerings'
thresholds, f32 / bf16 / int32 / int8 data with ties, NaN, infinities and -0.0): every case is
compiled, run on the NKI interpreter and simulated, and compared with NumPy (floats in float64
within 2e-5 (f32) / 3e-2 (bf16) of max(|ref|, max |ref|, 1); integers exactly with NumPy's
wraparound; argmax / argmin / topk indices exactly).

By default (``ci`` profile, 25 examples) the inputs hold at most 4,096 elements together so
the test takes a few seconds; ``NKIGEN_FUZZ_FULL=1`` draws the full sizes (rows up to 151,936
elements, 2048-row column reductions), e.g. a long run:
``NKIGEN_FUZZ_FULL=1 NKIGEN_HYPOTHESIS_EXAMPLES=2000 uv run pytest tests/property/test_lowering_fuzz.py``.
"""

import os
import warnings

from hypothesis import given
from hypothesis import strategies as st

from nkigen_lite.testing.lowering_fuzz import FAMILIES, check_case, make_case

QUICK_ELEMS = None if os.environ.get("NKIGEN_FUZZ_FULL") == "1" else 4096


@given(seed=st.integers(0, 2**32 - 1), family=st.sampled_from(sorted(FAMILIES)))
def test_lowered_programs_match_numpy(seed, family):
    case = make_case(seed, family, max_elems=QUICK_ELEMS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's reference on inf / NaN data
        check_case(case)
