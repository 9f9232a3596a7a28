"""The decomposition patterns; ``patterns(caps)`` instantiates them for one target."""

from __future__ import annotations

from ..capabilities import Capabilities
from .arith import DivToMulReciprocal, IntegerPowToMul
from .composite import ExpandComposite
from .division import FloorDivideMod
from .reductions import MeanToSum, ProdByTree, ReduceKeepdims, VarStdTwoPass
from .rounding import CeilByFloorOrTrunc, FloorByTrunc
from .trig import ArctanRangeReduction, CosViaSin, SinRangeReduction

PATTERN_CLASSES = (
    ReduceKeepdims, MeanToSum, VarStdTwoPass, ProdByTree, DivToMulReciprocal, IntegerPowToMul,
    FloorDivideMod, FloorByTrunc, CeilByFloorOrTrunc, CosViaSin, SinRangeReduction,
    ArctanRangeReduction, ExpandComposite,
)


def patterns(caps: Capabilities) -> list:
    """Every decomposition pattern, bound to the capabilities ``caps``."""
    return [cls(caps) for cls in PATTERN_CLASSES]


__all__ = ["PATTERN_CLASSES", "patterns"]
