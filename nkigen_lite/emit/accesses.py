"""NKI source text for accesses: slices and ``nl.ds`` windows, HBM views, ``.ap`` access patterns.

An access with unit or positive strides becomes Python indexing (``t[0:128, nl.ds(i * 512, 512)]``,
the bare name for the whole tensor). A window through an ``nki.hbm_view`` that is a plain
reshape of its root tensor indexes the reshaped view; any other view (transpose, broadcast,
strided slice) and any window with a stride-0 (broadcast) dim becomes an access pattern on the
root storage: ``x.ap(pattern=[[step, num], ...], offset=...)`` (NKI ``.ap``, outermost first).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ..ir.types import row_major_strides
from ..nki.ops import HbmViewOp
from ..nki.types import Access, Affine, HbmType

NameOf = Callable[[object], str]


def kernel_shape(t) -> tuple[int, ...]:
    """Shape of a tensor in the emitted kernel: a 0-d HBM tensor is a 1-element 1-D tensor."""
    return tuple(t.shape) or (1,)


def is_reshape_view(op: HbmViewOp) -> bool:
    """True when the view covers its whole root tensor contiguously (a reshape)."""
    out = op.results[0].type
    root = op.operand(0).type
    return (
        op.attrs["offset"] == 0
        and out.size == root.size
        and _same_strides(out.shape, tuple(op.attrs["strides"]))
    )


def _same_strides(shape, strides) -> bool:
    return all(s == c for n, s, c in zip(shape, strides, row_major_strides(shape)) if n != 1)


def format_affine(a: Affine, name_of: NameOf) -> str:
    """``i * 128 + j - 4``: loop-index terms in order, then the constant."""
    text = ""
    for v, c in a.terms:
        term = name_of(v) if abs(c) == 1 else f"{name_of(v)} * {abs(c)}"
        if not text:
            text = term if c > 0 else f"-{term}"
        else:
            text += (" + " if c > 0 else " - ") + term
    if not text:
        return str(a.const)
    if a.const:
        text += (" + " if a.const > 0 else " - ") + str(abs(a.const))
    return text


def _dim(d, name_of: NameOf) -> str:
    start = format_affine(d.offset, name_of)
    if d.stride == 1 or d.size == 1:  # one element: any stride (a broadcast's 0) reads the same
        if d.offset.is_const:
            return f"{d.offset.const}:{d.offset.const + d.size}"
        return f"nl.ds({start}, {d.size})"
    last = (d.size - 1) * d.stride + 1
    stop = format_affine(d.offset + last, name_of)
    return f"{start}:{stop}:{d.stride}"


def needs_pattern(acc: Access, views: dict) -> bool:
    """True when ``acc`` needs an ``.ap`` access pattern instead of indexing: it goes through a
    view that is not a reshape, or it broadcasts a dim (stride 0)."""
    view = views.get(acc.tensor)
    if view is not None and not is_reshape_view(view):
        return True
    return any(d.stride == 0 and d.size > 1 for d in acc.dims)


def access_pattern(acc: Access, views: dict) -> tuple[object, list[tuple[int, int]], Affine]:
    """(root tensor, ``[[step, num], ...]``, flat offset) addressing ``acc`` in its root's storage."""
    view = views.get(acc.tensor)
    if view is not None:
        root, strides, offset = view.operand(0), tuple(view.attrs["strides"]), Affine(view.attrs["offset"])
    else:
        root, strides, offset = acc.tensor, row_major_strides(acc.tensor.type.shape), Affine(0)
    pattern = []
    for d, s in zip(acc.dims, strides):
        offset = offset + d.offset * s
        pattern.append((s * d.stride, d.size))
    return root, pattern or [(1, 1)], offset  # a 0-d view: one element


def _covers_contiguously(pattern, offset: Affine, root) -> bool:
    """True when the pattern walks all of HBM tensor ``root`` in storage order (a reshape)."""
    sizes = [n for _, n in pattern]
    return (
        isinstance(root.type, HbmType)
        and offset.is_const
        and offset.const == 0
        and math.prod(sizes) == root.type.size
        and _same_strides(sizes, [s for s, _ in pattern])
    )


class AccessFormatter:
    """Formats the accesses of one kernel, given the variable names and the HBM views in it."""

    def __init__(self, name_of: NameOf, views: dict):
        self.name_of = name_of
        self.views: dict[object, HbmViewOp] = views  # view Value -> its hbm_view op

    def format(self, acc: Access) -> str:
        """Source text of ``acc``."""
        if needs_pattern(acc, self.views):
            root, pattern, offset = access_pattern(acc, self.views)
            if _covers_contiguously(pattern, offset, root):
                return f"{self.name_of(root)}.reshape({kernel_shape(acc)!r})"
            pairs = ", ".join(f"[{s}, {n}]" for s, n in pattern)
            return f"{self.name_of(root)}.ap(pattern=[{pairs}], offset={format_affine(offset, self.name_of)})"
        base = self.name_of(acc.tensor)
        if acc.is_whole():
            return base
        return f"{base}[" + ", ".join(_dim(d, self.name_of) for d in acc.dims) + "]"

    def format_2d(self, acc: Access) -> str:
        """Source text of an on-chip ``acc`` as a 2-D [partitions, elements] operand (nc_matmul
        documents 2-D operands only): itself when it has one free dim, else a 2-D ``.ap``
        pattern over the tile storage (partition step = the tile's elements per partition)."""
        free = acc.free_pattern()
        if len(acc.dims) == 2 or free is None or len(free) > 1:
            return self.format(acc)
        shape = acc.tensor.type.shape
        per_part = math.prod(shape[1:])
        strides = row_major_strides(shape)
        offset = Affine(0)
        for d, st in zip(acc.dims, strides):
            offset = offset + d.offset * st
        pairs = [(per_part, acc.partitions)] + (free or [(1, 1)])
        text = ", ".join(f"[{st}, {n}]" for st, n in pairs)
        return (
            f"{self.name_of(acc.tensor)}.ap(pattern=[{text}], offset={format_affine(offset, self.name_of)})"
        )
