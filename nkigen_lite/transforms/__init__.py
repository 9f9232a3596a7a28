"""Tensor-level passes: canonicalize, decompose, layout (importing this registers them)."""

from .canonicalize import Canonicalize, canonicalize
from .decompose import Decompose, decompose
from .layout import Layout, LayoutAnalysis, LayoutConvertOp, solve_layout

__all__ = ["Canonicalize", "canonicalize", "Decompose", "decompose", "Layout", "LayoutAnalysis",
           "LayoutConvertOp", "solve_layout"]
