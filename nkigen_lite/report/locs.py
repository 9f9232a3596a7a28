"""What an op's ``loc`` names: the tensor op an NKI op came from and the user's Python line.

Tracing stamps tensor ops with ``file.py:LINE``; lowering stamps NKI ops with a label such as
``tensor.square %square at model.py:14``, ``load %x`` or ``store %y`` (transforms/lower/context.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PY = re.compile(r"(?:^|\bat )(?P<file>[\w.\-]+\.py):(?P<line>\d+)$")
_VALUE = re.compile(r"%[\w.$-]+")
_TENSOR_OP = re.compile(r"^(?P<op>tensor\.\w+) ")


@dataclass(frozen=True)
class Loc:
    """A parsed location: the label as written, the tensor value it names (``%square``), the
    tensor op name (``tensor.square``) and the Python ``(file, line)``, each None when absent."""

    label: str
    value: str | None
    tensor_op: str | None
    python: tuple[str, int] | None


def parse_loc(loc: str | None) -> Loc | None:
    if not loc:
        return None
    py = _PY.search(loc)
    val = _VALUE.search(loc)
    op = _TENSOR_OP.match(loc)
    return Loc(
        label=loc,
        value=val.group(0) if val else None,
        tensor_op=op.group("op") if op else None,
        python=(py.group("file"), int(py.group("line"))) if py else None,
    )


def python_anchor(file: str, line: int) -> str:
    return "py-" + re.sub(r"[^\w]", "_", file) + f"-{line}"


def ir_anchor(stage: str, line: int) -> str:
    return f"ir-{stage}-{line}"
