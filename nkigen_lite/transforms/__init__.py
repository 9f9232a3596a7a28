"""Tensor-level passes: canonicalize, decompose, layout (importing this registers them)."""

from .canonicalize import Canonicalize, CanonicalizeCounts, canonicalize
from .decompose import Decompose, DecomposeCounts, decompose
from .layout import Layout, LayoutAnalysis, LayoutConvertOp, solve_layout

__all__ = [
    "Canonicalize",
    "CanonicalizeCounts",
    "canonicalize",
    "Decompose",
    "DecomposeCounts",
    "decompose",
    "Layout",
    "LayoutAnalysis",
    "LayoutConvertOp",
    "solve_layout",
]
