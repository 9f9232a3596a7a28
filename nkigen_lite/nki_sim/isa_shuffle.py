"""Vector-engine cross-partition shuffle: ``nisa.nc_stream_shuffle`` [ISA].

Within each quadrant of 32 partitions, dst partition i receives src partition shuffle_mask[i]
(bit for bit). Refused beyond the page (stricter): a dst and src starting at different
partitions (the page's rules for that case are not spelled out), a partition count that is not
whole quadrants, and the mask value 255 ("leave unmodified").
"""

from __future__ import annotations

import numpy as np

from . import limits
from .errors import NkiSimError
from .operands import Instruction, begin, tile_arg


def nc_stream_shuffle(dst, src, shuffle_mask, name=""):
    """dst[32q + i] = src[32q + shuffle_mask[i]] for every quadrant q."""
    where = "nisa.nc_stream_shuffle"
    run = begin(where, name)
    dst, src = tile_arg(dst, where, "dst"), tile_arg(src, where, "src")
    q = limits.PARTITION_QUADRANT
    mask = list(shuffle_mask)
    if len(mask) != q or any(not isinstance(m, (int, np.integer)) or not 0 <= m < q for m in mask):
        raise NkiSimError(f"{where}: shuffle_mask must be {q} partition indices 0..{q - 1}, got {mask}")
    if dst.dtype.numpy_name != src.dtype.numpy_name:
        raise NkiSimError(f"{where}: dst is {dst.dtype.numpy_name} but src is {src.dtype.numpy_name} [ISA]")
    p = src.shape[0]
    if dst.shape[0] != p or dst.free_size != src.free_size:
        raise NkiSimError(
            f"{where}: dst {dst.describe()} and src {src.describe()} differ in partitions or elements [ISA]"
        )
    if dst.partition_start != src.partition_start or p % q or src.partition_start % q:
        raise NkiSimError(
            f"{where}: src {src.describe()} and dst {dst.describe()} must cover whole quadrants "
            "from the same start partition"
        )
    x = src.read(f"{where} src").reshape(p, -1)
    idx = [b + m for b in range(0, p, q) for m in mask]
    dst.write(x[idx].reshape(dst.shape), where)
    run.count("vector")
    return Instruction(where)
