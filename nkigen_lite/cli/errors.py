"""CLI diagnostics: one line ``nkigen-lite: error: FILE:LINE:COL: message`` per error.

``CliError`` is an error the command line itself raises (bad arguments, unreadable files). Every
other error is turned into one line by ``describe``, which finds a location when the error has
one: a ParseError's line and column, the op a VerifyError names (mapped back to its line in the
input text), or the innermost frame of the user's Python file for errors raised while tracing.
"""

from __future__ import annotations

import os
import traceback

from ..ir.errors import NkError, ParseError, VerifyError


class CliError(NkError):
    """A command-line mistake: the message is complete; ``where`` is ``FILE`` or ``FILE:L:C``."""

    def __init__(self, message: str, where: str | None = None):
        self.where = where
        super().__init__(message)


def first_line(text: str) -> str:
    """The message's first line, with the printed op (``at: ...``) folded onto it."""
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    if not lines:
        return ""
    head, rest = lines[0], lines[1:]
    at = next((ln[4:] for ln in rest if ln.startswith("at: ")), None)
    return f"{head} (at: {at})" if at else head


def error_location(
    exc: BaseException, source: str | None, positions: dict | None, user_file: str | None = None
) -> str | None:
    """``FILE:LINE:COL`` for ``exc`` when it has a location, else ``FILE`` / None."""
    if isinstance(exc, CliError):
        return exc.where
    if isinstance(exc, ParseError) and exc.line:
        return f"{source}:{exc.line}:{exc.col}"
    if isinstance(exc, VerifyError) and positions and exc.op is not None and exc.op in positions:
        line, col = positions[exc.op]
        return f"{source}:{line}:{col}"
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{exc.filename}:{exc.lineno}:{exc.offset or 1}"
    if user_file is not None:
        target = os.path.abspath(user_file)
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if os.path.abspath(f.filename) == target]
        if frames:
            f = frames[-1]
            col = getattr(f, "colno", None)
            return f"{user_file}:{f.lineno}:{(col or 0) + 1}"
        return user_file
    return source


def describe(
    exc: BaseException, source: str | None = None, positions: dict | None = None, user_file: str | None = None
) -> str:
    """The one-line error text (without the ``nkigen-lite: error:`` prefix)."""
    msg = first_line(exc if isinstance(exc, NkError) else f"{type(exc).__name__}: {exc}")
    if isinstance(exc, ParseError) and exc.line:
        msg = exc.reason
    where = error_location(exc, source, positions, user_file)
    if where and where != "-":
        return f"{where}: {msg}"
    return msg
