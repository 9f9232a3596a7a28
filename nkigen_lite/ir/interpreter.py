"""Interpreter core: an environment keyed by Value and an ``impl`` rule registry per dialect
interpreter (rules are looked up along the op class's MRO), and the check of run-time inputs
against a graph's signature that every dialect's ``run`` uses."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np

from .dtypes import cast_array
from .errors import InterpretError
from .graph import Block, Graph
from .op import Op
from .registry import table
from .value import Value

Rule = Callable[..., Any]


class Interpreter:
    """Base class: subclasses get their own rule table, filled with ``@Sub.impl(OpClass)``.

    A rule is ``fn(interp, op, args) -> list of result values | None`` where ``args`` are the
    operands' current values.
    """

    rules: ClassVar[dict[type, Rule]] = {}

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        cls.rules = table()

    @classmethod
    def impl(cls, *op_classes: type[Op]):
        def register(fn: Rule) -> Rule:
            for oc in op_classes:
                cls.rules[oc] = fn
            return fn

        return register

    @classmethod
    def rule_for(cls, op_class: type[Op]) -> Rule | None:
        for k in op_class.__mro__:
            if k in cls.rules:
                return cls.rules[k]
        return None

    def __init__(self):
        self.env: dict[Value, Any] = {}

    def read(self, v: Value, op: Op) -> Any:
        try:
            return self.env[v]
        except KeyError:
            raise InterpretError(f"{op.name}: operand has no value yet ({v!r})") from None

    def run_op(self, op: Op) -> None:
        rule = self.rule_for(type(op))
        if rule is None:
            raise InterpretError(f"{type(self).__name__} has no rule for {op.name}")
        args = [self.read(v, op) for v in op.operands]
        try:
            out = rule(self, op, args)
        except MemoryError:
            sizes = ", ".join(str(r.type) for r in op.results) or "its operands"
            raise InterpretError(f"{op.name}: not enough host memory to compute {sizes}") from None
        if op.results:
            if out is None or len(out) != len(op.results):
                raise InterpretError(f"rule for {op.name} returned the wrong number of results")
            for r, val in zip(op.results, out):
                self.env[r] = val

    def run_block(self, block: Block, args: list[Any] = ()) -> None:
        for a, val in zip(block.args, args):
            self.env[a] = val
        for op in block:
            self.run_op(op)


def check_inputs(graph: Graph, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Validate run-time inputs against the graph signature; returns them as arrays."""
    return check_signature(graph.name, graph.input_names, [v.type for v in graph.inputs], inputs)


def check_signature(name: str, names, types, inputs) -> dict[str, np.ndarray]:
    """Validate ``inputs`` against a graph or kernel signature (input names and types).

    The one check behind ``nk.run``, ``nk.nki.run``, ``Kernel.run`` / ``Kernel(...)`` and
    ``nk.simulate``: the same mistake gives the same ``InterpretError`` on every path.
    """
    if not isinstance(inputs, Mapping):
        raise InterpretError(f"inputs must be a dict {{name: array}}, got {type(inputs).__name__}")
    names = list(names)
    missing = [n for n in names if n not in inputs]
    extra = [n for n in inputs if n not in names]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing {missing}")
        if extra:
            parts.append(f"unexpected {extra}")
        raise InterpretError(f"graph @{name} inputs: {'; '.join(parts)} (expects {names})")
    out = {}
    for n, t in zip(names, types):
        a = inputs[n]
        if not isinstance(a, (np.ndarray, np.generic)):
            raise InterpretError(f"input {n!r} must be a NumPy array, got {type(a).__name__}")
        a = np.asarray(a)
        if tuple(a.shape) != tuple(t.shape):
            raise InterpretError(f"input {n!r} has shape {tuple(a.shape)}, expected {t.shape}")
        want = t.dtype.np_dtype
        if a.dtype != want:
            hint = ""
            if a.dtype.itemsize == 8 and a.dtype.kind in "iuf" and a.dtype.kind == np.dtype(want).kind:
                hint = f" (trn2 has no 64-bit types: pass {n}.astype(np.{np.dtype(want).name}))"
            raise InterpretError(f"input {n!r} has dtype {a.dtype}, expected {t.dtype.numpy_name}{hint}")
        out[n] = cast_array(a, t.dtype) if t.dtype.name == "tf32" else a
    return out
