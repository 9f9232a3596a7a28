"""The default pass pipeline, defined once: ``DEFAULT_STAGES`` is what ``nk.compile`` runs;
``DEFAULT_TENSOR_PASSES`` is its tensor-to-tensor part (``nkigen-lite opt``'s default)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..ir.passes import Pipeline, get_pass
from . import canonicalize as _canonicalize  # noqa: F401  (registers the passes)
from . import decompose as _decompose  # noqa: F401
from . import layout as _layout  # noqa: F401

DEFAULT_STAGES: tuple[tuple[str, str], ...] = (
    ("canonicalize", "canonicalize"),
    ("decompose", "decompose"),
    ("cleanup", "canonicalize"),  # folds what the decompositions created
    ("layout", "layout"),
    ("lower", "lower"),
    ("deallocs", "deallocs"),
)
"""The compile pipeline as (stage name, registered pass name), in order."""

DEFAULT_TENSOR_PASSES: tuple[str, ...] = tuple(
    p for _, p in DEFAULT_STAGES[: [s for s, _ in DEFAULT_STAGES].index("lower")]
)
"""The passes of ``DEFAULT_STAGES`` before lowering (tensor IR in, tensor IR out)."""


def tensor_pipeline(
    names: Iterable[str] = DEFAULT_TENSOR_PASSES,
    *,
    print_after: Iterable[str] | str = (),
    print_fn: Callable[[str, str], None] | None = None,
) -> Pipeline:
    """A pipeline of the named registered passes, verifying the graph after each."""
    return Pipeline(
        [get_pass(n) for n in names], verify_each=True, print_after=print_after, print_fn=print_fn
    )


def default_tensor_pipeline(**kw) -> Pipeline:
    """The tensor part of the default pipeline (the LayoutAnalysis is recorded in the context)."""
    return tensor_pipeline(DEFAULT_TENSOR_PASSES, **kw)
