"""Exception classes shared by every layer of nkigen_lite."""

from __future__ import annotations


class NkError(Exception):
    """Base class of every error nkigen_lite raises on purpose."""


class BuildError(NkError, ValueError):
    """An op could not be built: its operands or attributes break a shape, dtype or range rule."""


class VerifyError(NkError):
    """The IR breaks an invariant; the message names the op (printed) and the rule. ``op`` is the
    offending op when known (the CLI maps it back to its line in the input text)."""

    def __init__(self, message: str, op=None):
        self.op = op
        super().__init__(message)


class ParseError(NkError):
    """IR text could not be parsed; carries the 1-based line and column."""

    def __init__(self, message: str, line: int = 0, col: int = 0):
        self.line, self.col, self.reason = line, col, message
        super().__init__(f"{line}:{col}: {message}" if line else message)


class InterpretError(NkError):
    """An interpreter could not run the graph: bad inputs or an illegal access at run time."""


class IndexOutOfRange(InterpretError, IndexError):
    """A run-time index outside its axis (NumPy's IndexError): the message names the op, the
    index value, its position in the index array, the axis and its size."""


class NkWarning(UserWarning):
    """Something nkigen_lite did that may surprise: a float64 array traced as float32, a number
    argument that became a compile-time constant, ... (issued through ``warnings``)."""
