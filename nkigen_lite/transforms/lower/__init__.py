"""Lowering from the tensor dialect to NKI IR (fusion groups, tiling, per-family rules)."""

from . import for_loop as _for_loop  # noqa: F401  (registers the tensor.for_loop rule)
from .deallocs import InsertDeallocs, insert_deallocs
from .driver import lower_to_nki
from .passes import LowerToNki

__all__ = ["InsertDeallocs", "LowerToNki", "insert_deallocs", "lower_to_nki"]
