"""The value a 16-bit causal-mask tile holds for its masked entries, when the mask is added to
fp32 scores in PSUM by a 16-bit identity matmul (grouped_attention.py, causal_attention.py)
instead of a VectorE add in fp32."""

from __future__ import annotations

import numpy as np


def mask_value_16(mask_off: float, skips: bool, dt) -> float | None:
    """The 16-bit (``dt``) value of the masked entries standing for ``mask_off`` (the fp32
    mask/scale added to the unscaled scores), or None when the mask must be added in fp32: a
    value ``dt`` does not represent exactly, unless ``skips`` (the mask is small enough that its
    entries' probabilities are taken as 0, as for skipped key chunks): then the 16-bit value at
    or below it (bf16: -1e4·8 = -80,000 -> -80,384) -- never an f16 overflow (0 × inf is NaN in
    the identity matmul)."""
    with np.errstate(over="ignore"):
        v = np.array([mask_off], np.float32).astype(dt.np_dtype)
    if float(v[0]) == mask_off:
        return float(v[0])
    if not skips:
        return None
    if float(v[0]) > mask_off:  # one 16-bit step further from zero (negative: +1 in bits)
        v = (v.view(np.uint16) + np.uint16(1)).view(v.dtype)
    return float(v[0]) if np.isfinite(float(v[0])) else None
