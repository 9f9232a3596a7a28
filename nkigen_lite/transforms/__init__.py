"""Tensor-level passes: canonicalize, decompose, layout (importing this registers them)."""

from .canonicalize import Canonicalize, canonicalize
from .decompose import Decompose, decompose

__all__ = ["Canonicalize", "canonicalize", "Decompose", "decompose"]
