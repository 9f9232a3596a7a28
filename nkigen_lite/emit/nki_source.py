"""NKI source emitter: an NKI IR graph -> a standalone, readable ``@nki.jit`` Python module.

The module imports ``nki``, ``nki.language as nl`` and ``nki.isa as nisa`` and defines one
kernel whose parameters are the graph's inputs (HBM tensors). Outputs are ``nl.shared_hbm``
allocations returned in ``OUTPUT_NAMES`` order; every instruction is a destination-passing
``nisa.<op>(dst=..., ...)`` call. Module-level data: ``INPUT_NAMES`` (graph name of each
parameter, constants excluded), ``OUTPUT_NAMES``, ``INPUT_SPECS`` (parameter -> (shape, dtype))
and, when the kernel takes dense constants, ``CONSTANTS`` (parameter -> NumPy array).
Per-op rules live in ``source_rules.py``; see docs/emit.md.
"""

from __future__ import annotations

import math
import re

import numpy as np

from ..ir.errors import BuildError
from ..ir.graph import Graph
from ..nki.ops import CollectiveOp, HbmViewOp, lnc_of
from .accesses import AccessFormatter, kernel_shape
from .loops import loop_kinds
from .names import comment, kernel_names

LINE_LIMIT = 100
INDENT = "    "

# DType name -> the nki.language dtype attribute (trn2 NKI dtypes; float8_e3m4 has none).
NL_DTYPES = {
    "float32": "float32",
    "float16": "float16",
    "bfloat16": "bfloat16",
    "tfloat32": "tfloat32",
    "float8_e4m3": "float8_e4m3",
    "float8_e4m3fn": "float8_e4m3fn",
    "float8_e5m2": "float8_e5m2",
    "int8": "int8",
    "int16": "int16",
    "int32": "int32",
    "uint8": "uint8",
    "uint16": "uint16",
    "uint32": "uint32",
    "bool_": "bool_",
}


def nl_dtype(dtype, what: str) -> str:
    """``nl.<dtype>`` for a DType, or a BuildError naming the value when NKI has no such dtype."""
    name = NL_DTYPES.get(dtype.numpy_name)
    if name is None:
        raise BuildError(f"emit: {what} has dtype {dtype.name}, which NKI on trn2 does not offer")
    return f"nl.{name}"


def scalar(v) -> str:
    """A Python literal for an immediate (bool, int, or float as fp32, incl. inf / nan)."""
    if isinstance(v, (bool, np.bool_)):
        return repr(bool(v))
    if isinstance(v, (int, np.integer)):
        return repr(int(v))
    with np.errstate(over="ignore"):
        f = np.float32(v)  # engines read immediates as fp32: the shortest text giving that fp32
    if math.isnan(f):
        return NAN_TEXT
    if math.isinf(f):
        return INF_TEXT if f > 0 else "-" + INF_TEXT
    return str(f)


# Non-finite immediates: `math.inf` / `math.nan`. No NKI 0.6 page documents any spelling of a
# non-finite immediate; the public NKI front end (KLR, KLR/Trace/Python.lean) puts exactly these
# two names in the global environment it traces kernels with (docs/emit.md).
INF_TEXT, NAN_TEXT = "math.inf", "math.nan"


def _python_literal(v) -> str:
    """A Python literal for a module-level constant array value (plain Python, not kernel code)."""
    return scalar(v)


def call(head: str, args: list[tuple[str, str]], indent: str) -> list[str]:
    """``head(k=v, ...)`` on one line, or wrapped with arguments aligned under the parenthesis."""
    parts = [f"{k}={v}" if k else v for k, v in args]
    one = f"{indent}{head}(" + ", ".join(parts) + ")"
    if len(one) <= LINE_LIMIT:
        return [one]
    pad = " " * (len(indent) + len(head) + 1)
    lines, cur = [], f"{indent}{head}("
    for i, p in enumerate(parts):
        piece = p + ("," if i < len(parts) - 1 else ")")
        if cur.endswith("(") or len(cur) + 1 + len(piece) <= LINE_LIMIT:
            cur += ("" if cur.endswith("(") else " ") + piece
        else:
            lines.append(cur)
            cur = pad + piece
    lines.append(cur)
    return lines


class SourceEmitter:
    """Walks an NKI graph once and produces the module text (see the module docstring)."""

    def __init__(self, graph: Graph, constants: dict | None = None, input_names=None):
        from . import source_rules  # noqa: F401  (registers the per-op rules)

        self.graph = graph
        self.constants = dict(constants or {})
        missing = [n for n in self.constants if n not in graph.input_names]
        if missing:
            raise BuildError(f"emit: constants {missing} are not inputs of kernel {graph.name}")
        params = [n for n in graph.input_names if n not in self.constants]
        self.graph_input_names = list(input_names if input_names is not None else params)
        if len(self.graph_input_names) != len(params):
            raise BuildError(
                f"emit: {len(self.graph_input_names)} input names for the {len(params)} "
                f"non-constant inputs of kernel {graph.name}"
            )
        if not graph.outputs:
            raise BuildError(
                f"emit: kernel {graph.name} has no outputs; an NKI kernel returns at least one tensor"
            )
        self.func_name, self.names = kernel_names(graph)
        self.views = {op.result: op for op in graph.walk() if isinstance(op, HbmViewOp)}
        self.accesses = AccessFormatter(self.name, self.views)
        self.loops = loop_kinds(graph)
        self.outputs = {v: n for n, v in graph.outputs.items()}
        self.lines: list[str] = []
        self.depth = 1
        self.loc: str | None = None  # location named by the last comment
        self.pending_loc: str | None = None  # location to name before the next line

    # ---- helpers for the rules -----------------------------------------------------------
    def name(self, v) -> str:
        """The identifier of a value."""
        return self.names[v]

    def access(self, op, attr: str) -> str:
        """Source text of the access in ``op.attrs[attr]``."""
        return self.accesses.format(op.access(attr))

    def operand(self, op, attr: str) -> str:
        """Source text of an access-or-immediate attribute."""
        acc = op.access(attr)
        return self.accesses.format(acc) if acc is not None else scalar(op.attrs[attr])

    @property
    def indent(self) -> str:
        """Indentation of the current block."""
        return INDENT * self.depth

    def line(self, text: str) -> None:
        self._flush_loc()
        self.lines.append(INDENT * self.depth + text)

    def call(self, head: str, args: list[tuple[str, str]]) -> None:
        self._flush_loc()
        self.lines.extend(call(head, args, INDENT * self.depth))

    def mark(self) -> tuple:
        """The output state, to ``rewind`` to when what follows turns out to be empty."""
        return len(self.lines), self.loc, self.pending_loc

    def rewind(self, mark: tuple) -> None:
        n, self.loc, self.pending_loc = mark
        del self.lines[n:]

    def _flush_loc(self) -> None:
        """Write the comment naming the tensor op of the next lines when it changed."""
        if self.pending_loc is None:
            return
        if self.loc is not None and not self.lines[-1].endswith(":"):
            self.lines.append("")
        self.lines.append(INDENT * self.depth + "# " + comment(self.pending_loc))
        self.loc, self.pending_loc = self.pending_loc, None

    def block(self, block) -> None:
        """Emit the ops of a block one level deeper."""
        from .source_rules import SOURCE_RULES

        self.depth += 1
        saved = self.loc
        for op in block:
            if not op.is_terminator:
                self._op(op, SOURCE_RULES)
        self.depth -= 1
        self.loc, self.pending_loc = saved, None

    def _op(self, op, rules) -> None:
        rule = rules.get(type(op))
        if rule is None:
            raise BuildError(f"emit: no NKI source rule for {op.name}")
        if op.loc and op.loc != self.loc:
            self.pending_loc = op.loc
        rule.emit(self, op)

    # ---- module ------------------------------------------------------------------------------
    def emit(self) -> str:
        """The module text."""
        from .source_rules import SOURCE_RULES

        params = [self.name(v) for v in self.graph.inputs]
        body_start = len(self.lines)
        for op in self.graph.body:
            if op is not self.graph.return_op:
                self._op(op, SOURCE_RULES)
        body = self.lines[body_start:]
        outs = [self.name(v) for v in self.graph.outputs.values()]
        ret = "    return " + ", ".join(outs)
        head = self._header(params)
        if re.search(r"\bmath\.(?:inf|nan)\b", "\n".join(body + head)):
            head.insert(head.index("import nki"), "import math")
        sig = call(f"def {self.func_name}", [("", p) for p in params], "")
        sig[-1] += ":"
        return "\n".join(head + ["", "", "@nki.jit"] + sig + body + [ret, ""])

    def _header(self, params: list[str]) -> list[str]:
        g = self.graph
        outs = [self.name(v) for v in g.outputs.values()]
        lines = [
            f'"""NKI kernel {self.func_name} for trn2 (NeuronCore-v3), emitted by nkigen_lite.',
            "",
            f"{self.func_name}({', '.join(params)}) -> {', '.join(outs)}: HBM tensors in, "
            "new shared-HBM tensors out.",
        ]
        aliases = {o: self.name(g.input(i)) for o, i in g.aliases.items()}
        if aliases:
            updated = ", ".join(f"{o} is {p}" for o, p in aliases.items())
            lines += [
                f"In place: {updated} (the kernel writes that argument and returns it; a framework",
                "declares it mutated, e.g. torch's mutates_args).",
            ]
        lines += [
            '"""',
            "",
        ]
        if self.constants:
            lines.append("import numpy as np")
            if any(_ml_dtype(a) for a in self.constants.values()):
                lines.append("import ml_dtypes")
            lines.append("")
        lines += ["import nki", "import nki.isa as nisa", "import nki.language as nl"]
        if any(isinstance(op, CollectiveOp) for op in g.body):
            lines.append("import nki.collectives as ncc")
        lines.append("")
        lnc = lnc_of(g)
        if lnc > 1:  # launched on the physical cores of a logical NeuronCore: kernel[LNC](...)
            lines.append(f"LNC = {lnc}")
        lines.append(f"INPUT_NAMES = {tuple(self.graph_input_names)!r}")
        lines.append(f"OUTPUT_NAMES = {tuple(g.outputs)!r}")
        if aliases:
            lines.append(f"ALIASES = {aliases!r}  # output name -> the kernel argument it updates in place")
        lines.append("INPUT_SPECS = {")
        for v in g.inputs:
            t = v.type
            nl_dtype(t.dtype, f"input {self.name(v)}")
            lines.append(f"    {self.name(v)!r}: ({kernel_shape(t)!r}, {t.dtype.numpy_name!r}),")
        lines.append("}")
        if self.constants:
            lines.append("CONSTANTS = {")
            for n in g.input_names:
                if n in self.constants:
                    values, tail = _array_lines(self.constants[n], INDENT)
                    lines += [f"{INDENT}{self.name(g.input(n))!r}: np.array(["] + values + [INDENT + tail]
            lines.append("}")
        return lines


def _ml_dtype(a: np.ndarray) -> bool:
    return a.dtype.type.__module__.startswith("ml_dtypes")


def _array_lines(a: np.ndarray, indent: str) -> tuple[list[str], str]:
    """The value lines and the closing text of ``np.array([...], dtype=...).reshape(shape)``,
    with the flat values wrapped to the line limit."""
    a = np.asarray(a)
    if _ml_dtype(a):
        dt, values = f"ml_dtypes.{a.dtype.name}", a.astype(np.float64).ravel().tolist()
    else:
        dt, values = ("np.bool_" if a.dtype == np.bool_ else f"np.{a.dtype.name}"), a.ravel().tolist()
    items = [_python_literal(v) for v in values]
    tail = f"], dtype={dt}).reshape({tuple(a.shape)!r}),"
    lines, cur = [], indent + INDENT
    for item in items:
        if len(cur) + len(item) + 2 > LINE_LIMIT and cur.strip():
            lines.append(cur.rstrip())
            cur = indent + INDENT
        cur += item + ", "
    lines.append(cur.rstrip())
    return lines, tail


def emit_nki_source(graph: Graph, constants: dict | None = None, input_names=None) -> str:
    """The NKI module text for an NKI IR graph (``constants``: values of constant inputs)."""
    if not isinstance(graph, Graph):
        raise BuildError(f"emit_nki_source takes an NKI Graph, got {type(graph).__name__}")
    return SourceEmitter(graph, constants, input_names).emit()
