"""Passes and pipelines: named passes with options, verify-after-each, print-after, timing."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from .errors import BuildError, VerifyError
from .graph import Graph

PASS_REGISTRY: dict[str, type[Pass]] = {}
R = TypeVar("R")


@dataclass
class PassContext:
    """State shared by the passes of one pipeline run: target, user knobs, and the analysis
    results the passes record, keyed by their type (``ctx.record(r)``, ``ctx.get(Type)``)."""

    target: Any = None
    knobs: dict = field(default_factory=dict)
    analyses: dict[type, Any] = field(default_factory=dict)

    def record(self, result: Any) -> None:
        """Keep ``result`` as the analysis of its type (replacing an earlier one)."""
        self.analyses[type(result)] = result

    def get(self, kind: type[R]) -> R | None:
        """The recorded analysis of type ``kind``, or None."""
        return self.analyses.get(kind)


class RewriteCounts(dict):
    """How often each rewrite rule fired in one pass (rule name -> count); each pass that
    records counts has its own subclass, so they are told apart by type."""


@dataclass(frozen=True)
class Pass:
    """A named transformation. Subclasses set ``name`` and implement ``run``; dataclass fields
    are the pass options. ``run`` edits the graph in place, or returns a new Graph (e.g. when
    lowering to another dialect)."""

    name: ClassVar[str] = ""

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        name = cls.__dict__.get("name")
        if name:
            if name in PASS_REGISTRY and PASS_REGISTRY[name].__qualname__ != cls.__qualname__:
                raise TypeError(f"pass {name!r} registered twice")
            PASS_REGISTRY[name] = cls

    def run(self, graph: Graph, ctx: PassContext) -> Graph | None:
        raise NotImplementedError


def get_pass(name: str, **options) -> Pass:
    """Instantiate a registered pass by name."""
    cls = PASS_REGISTRY.get(name)
    if cls is None:
        known = ", ".join(sorted(PASS_REGISTRY)) or "none registered"
        raise BuildError(f"unknown pass {name!r} (known: {known})")
    return cls(**options)


@dataclass
class PassRecord:
    """What one pass did in a pipeline run."""

    name: str
    seconds: float
    ir: str | None = None


@dataclass
class PipelineResult:
    graph: Graph
    records: list[PassRecord]
    ctx: PassContext

    def timings(self) -> dict[str, float]:
        return {r.name: r.seconds for r in self.records}

    def ir_after(self, name: str) -> str:
        for r in self.records:
            if r.name == name and r.ir is not None:
                return r.ir
        raise KeyError(f"IR after {name!r} was not recorded")


class Pipeline:
    """Runs passes in order; verifies after each (optional); records IR text after the passes
    named in ``print_after`` (or all when it is ``"all"``), passing it to ``print_fn``."""

    def __init__(
        self,
        passes: Sequence[Pass],
        *,
        verify_each: bool = True,
        print_after: Iterable[str] | str = (),
        print_fn: Callable[[str, str], None] | None = None,
    ):
        self.passes = list(passes)
        self.verify_each = verify_each
        self.print_after = print_after if print_after == "all" else set(print_after)
        self.print_fn = print_fn

    def run(self, graph: Graph, ctx: PassContext | None = None) -> PipelineResult:
        ctx = ctx or PassContext()
        records = []
        for p in self.passes:
            t0 = time.perf_counter()
            out = p.run(graph, ctx)
            if out is not None:
                graph = out
            if self.verify_each:
                try:
                    graph.verify()
                except VerifyError as e:
                    raise VerifyError(f"after pass {p.name!r}: {e}", op=e.op) from None
            dt = time.perf_counter() - t0
            text = None
            if self.print_after == "all" or p.name in self.print_after:
                text = str(graph)
                if self.print_fn is not None:
                    self.print_fn(p.name, text)
            records.append(PassRecord(p.name, dt, text))
        return PipelineResult(graph, records, ctx)
