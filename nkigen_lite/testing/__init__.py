"""Test utilities shared by the test suites: dtype-aware comparison against float64
references (``tolerance``) and hypothesis strategies for random graphs (``strategies``,
which needs the dev dependency hypothesis and is therefore imported explicitly)."""

from .tolerance import ORACLE, assert_close, assert_outputs_close, tolerance_for

__all__ = ["ORACLE", "assert_close", "assert_outputs_close", "tolerance_for"]
