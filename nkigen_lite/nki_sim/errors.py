"""The one exception class the NKI simulator raises for an illegal or unsupported kernel."""

from __future__ import annotations

from ..ir.errors import IndexOutOfRange, InterpretError


class NkiSimError(InterpretError):
    """A simulated kernel broke an NKI rule (message names the API call, the value and the rule)."""


class NkiSimIndexError(NkiSimError, IndexOutOfRange):
    """An indirect DMA's index outside its rows (the DMA's run-time bounds check raises)."""
