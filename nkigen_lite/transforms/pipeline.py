"""The default tensor pipeline: canonicalize → decompose → layout, verifying after each."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..ir.passes import Pipeline, get_pass
from . import canonicalize as _canonicalize  # noqa: F401  (registers the passes)
from . import decompose as _decompose  # noqa: F401
from . import layout as _layout  # noqa: F401

DEFAULT_TENSOR_PASSES = ("canonicalize", "decompose", "layout")


def tensor_pipeline(names: Iterable[str] = DEFAULT_TENSOR_PASSES, *,
                    print_after: Iterable[str] | str = (),
                    print_fn: Callable[[str, str], None] | None = None) -> Pipeline:
    """A pipeline of the named registered passes, verifying the graph after each."""
    return Pipeline([get_pass(n) for n in names], verify_each=True, print_after=print_after,
                    print_fn=print_fn)


def default_tensor_pipeline(**kw) -> Pipeline:
    """canonicalize → decompose → layout (the analysis lands in ``ctx.analyses["layout"]``)."""
    return tensor_pipeline(DEFAULT_TENSOR_PASSES, **kw)
