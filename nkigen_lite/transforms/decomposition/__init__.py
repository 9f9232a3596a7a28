"""The decomposition patterns; ``patterns(caps)`` instantiates them for one target.

The built-in patterns are ``PATTERN_CLASSES``; ``@decomposition`` registers one more (an op
added outside this package, see docs/adding_an_op.md). ``all_pattern_classes()`` is both."""

from __future__ import annotations

from ...ir.registry import table
from ..capabilities import Capabilities
from .arith import DivToMulReciprocal, IntegerPowToMul
from .composite import ExpandComposite
from .contraction import DegenerateMatmul
from .division import FloorDivideMod
from .indexed import INDEXED_PATTERNS
from .low_bits_arith import LowBitsArith
from .ordering import ArgmaxToTopk, ExpandTopk
from .reductions import MeanToSum, ProdByTree, ReduceKeepdims, VarStdTwoPass
from .rounding import CeilByFloorOrTrunc, FloorByTrunc
from .trig import ArctanRangeReduction, CosViaSin, SinRangeReduction
from .wide_int_cast import WideIntCast
from .wide_int_collective import WideIntCollectiveSum
from .wide_int_extreme import WideIntExtreme
from .wide_int_matmul import WideIntMatmul
from .wide_int_mean import WideIntMean
from .wide_int_sum import WideIntSum
from .wide_int_var import WideIntVar

PATTERN_CLASSES = (
    ReduceKeepdims,
    WideIntMean,
    MeanToSum,
    WideIntVar,
    VarStdTwoPass,
    ProdByTree,
    WideIntExtreme,
    WideIntSum,
    WideIntCollectiveSum,
    WideIntCast,
    LowBitsArith,
    DivToMulReciprocal,
    IntegerPowToMul,
    FloorDivideMod,
    FloorByTrunc,
    CeilByFloorOrTrunc,
    CosViaSin,
    SinRangeReduction,
    ArctanRangeReduction,
    ArgmaxToTopk,
    ExpandComposite,
    DegenerateMatmul,
    WideIntMatmul,
    ExpandTopk,
    *INDEXED_PATTERNS,
)


REGISTERED: dict[str, type] = table()
"""Decomposition patterns registered with ``@decomposition``, by class name."""


def decomposition(cls: type) -> type:
    """Register the DecompositionPattern subclass ``cls`` (its ``root`` names the op class)."""
    REGISTERED[cls.__qualname__] = cls
    return cls


def all_pattern_classes() -> tuple[type, ...]:
    """The built-in patterns, then the registered ones."""
    return (*PATTERN_CLASSES, *REGISTERED.values())


def patterns(caps: Capabilities) -> list:
    """Every decomposition pattern, bound to the capabilities ``caps``."""
    return [cls(caps) for cls in all_pattern_classes()]


__all__ = ["PATTERN_CLASSES", "all_pattern_classes", "decomposition", "patterns"]
