"""Python identifiers for emitted code: sanitised, unique, never a keyword, builtin or module name.

Any string (a graph name, an input name, an IR value name) becomes a valid identifier made of
its letters, digits and underscores only, so no name can inject code into an emitted module.
Free-text comments (op locations) are flattened to one printable line for the same reason.
"""

from __future__ import annotations

import builtins
import keyword
import re

# Names the emitted module itself uses at top level.
MODULE_NAMES = frozenset(
    {
        "nki",
        "nl",
        "nisa",
        "np",
        "ml_dtypes",
        "INPUT_NAMES",
        "OUTPUT_NAMES",
        "INPUT_SPECS",
        "CONSTANTS",
        "math",
        "range",
    }
)
RESERVED = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | frozenset(dir(builtins)) | MODULE_NAMES

_BAD = re.compile(r"[^A-Za-z0-9_]+")


def identifier(text: str, fallback: str = "v") -> str:
    """``text`` reduced to ``[A-Za-z_][A-Za-z0-9_]*`` (not checked against reserved names)."""
    s = _BAD.sub("_", str(text)).strip("_")
    if not s:
        return fallback
    if s[0].isdigit():
        s = f"{fallback}{s}"
    return s


class Namer:
    """Hands out unique identifiers in request order, avoiding reserved and already-taken names."""

    def __init__(self, reserved=RESERVED):
        self._taken: set[str] = set(reserved)

    def take(self, text: str, fallback: str = "v") -> str:
        """A fresh identifier derived from ``text`` (``name``, ``name_1``, ``name_2``, ...)."""
        base = identifier(text, fallback)
        cand, k = base, 0
        while cand in self._taken:
            k += 1
            cand = f"{base}_{k}"
        self._taken.add(cand)
        return cand


def comment(text: str, limit: int = 96) -> str:
    """One printable line of ``text`` for a ``#`` comment (control characters become spaces)."""
    s = "".join(ch if ch.isprintable() else " " for ch in str(text))
    s = " ".join(s.split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


def kernel_names(graph) -> tuple[str, dict]:
    """The kernel function name and an identifier for every value of an NKI graph, derived
    from the names the IR text shows (inputs first, then values in definition order)."""
    from ..ir.printer import Printer

    namer = Namer()
    func = namer.take(graph.name, "kernel")
    return func, {v: namer.take(text) for v, text in Printer(graph).names.items()}
