"""Which loops carry a dependency from one iteration to another (``nl.sequential_range``) and
which do not (``nl.affine_range``).

A loop is sequential when an element of a tensor allocated outside it that one iteration
writes may be read or written by a different iteration (matmul K-accumulation into a PSUM
tile, a running value). The test is conservative: per dim of a tensor when both accesses go
through the same value, on the flat storage when they go through different views of it, with
interval bounds for the other loop indices. Writes to disjoint windows (``y[ds(i*128, 128)]``)
keep the loop affine.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..nki.ops import ForiLoopOp, HbmViewOp, NkiOp
from ..nki.types import Access, Affine
from .accesses import access_pattern


@dataclass(frozen=True)
class _Window:
    """One access inside the loop: root tensor, the value it goes through, and whether it writes."""

    root: object
    via: object
    access: Access
    write: bool
    views: dict


def loop_kinds(graph) -> dict[ForiLoopOp, str]:
    """``{loop op: "affine" | "sequential"}`` for every loop of an NKI graph."""
    views = {op.result: op for op in graph.walk() if isinstance(op, HbmViewOp)}
    kinds: dict[ForiLoopOp, str] = {}
    _visit(graph.body, {}, views, kinds)
    return kinds


def _visit(block, ranges: dict, views: dict, kinds: dict) -> None:
    for op in block:
        if isinstance(op, ForiLoopOp):
            inner = {**ranges, op.index: (op.attrs["lower"], op.last)}
            kinds[op] = "sequential" if _carried(op, inner, views) else "affine"
            _visit(op.body, inner, views, kinds)


def _carried(loop: ForiLoopOp, ranges: dict, views: dict) -> bool:
    if loop.trip_count < 2:
        return False
    inside = {r for op in loop.body.walk() for r in op.results}
    nested = [op for op in loop.body.walk() if isinstance(op, ForiLoopOp)]
    ctx = _Loop(
        loop,
        {**ranges, **{op.index: (op.attrs["lower"], op.last) for op in nested}},
        {id(op.index) for op in nested},
    )
    windows = []
    for op in loop.body.walk():
        if not isinstance(op, NkiOp):
            continue
        for name, _ in op.access_attrs():
            acc = op.access(name)
            root = views[acc.tensor].operand(0) if acc.tensor in views else acc.tensor
            if root not in inside:
                windows.append(_Window(root, acc.tensor, acc, name in op.writes, views))
    return any(w.write and x.root is w.root and ctx.may_overlap(w, x) for w in windows for x in windows)


def _flat(win: _Window) -> tuple[Affine, int]:
    """Start (affine) and extent of an access in the flat storage of its root."""
    _, pattern, start = access_pattern(win.access, win.views)
    return start, sum((n - 1) * step for step, n in pattern)


@dataclass(frozen=True)
class _Loop:
    """The loop under test, the value ranges of every index in scope, and its nested indices."""

    op: ForiLoopOp
    ranges: dict
    nested: set

    def interval(self, terms) -> tuple[int, int]:
        lo = hi = 0
        for v, c in terms:
            a, b = self.ranges[v]
            lo += min(c * a, c * b)
            hi += max(c * a, c * b)
        return lo, hi

    def may_overlap(self, w: _Window, x: _Window) -> bool:
        if w.via is x.via:
            return all(
                self.dim_overlap(a.offset, (a.size - 1) * a.stride, b.offset, (b.size - 1) * b.stride)
                for a, b in zip(w.access.dims, x.access.dims)
            )
        (sw, ew), (sx, ex) = _flat(w), _flat(x)
        return self.dim_overlap(sw, ew, sx, ex)

    def dim_overlap(self, aw: Affine, ew: int, ax: Affine, ex: int) -> bool:
        """Can [aw, aw+ew] in iteration i and [ax, ax+ex] in an iteration i' != i intersect?"""
        i = self.op.index
        cw = sum(c for v, c in aw.terms if v is i)
        cx = sum(c for v, c in ax.terms if v is i)
        diff = aw - ax  # enclosing-loop indices take the same value in both iterations
        shared = [(v, c) for v, c in diff.terms if v is not i and id(v) not in self.nested]
        own = [(v, c) for v, c in aw.terms if id(v) in self.nested]
        own += [(v, -c) for v, c in ax.terms if id(v) in self.nested]
        lo, hi = self.interval(shared + own)
        low, high = -ew - hi - diff.const, ex - lo - diff.const  # need cw*i - cx*i' in it
        n, step = self.op.trip_count, self.op.attrs["step"]
        if cw != cx:
            t_lo, t_hi = self.interval([(i, cw)])
            u_lo, u_hi = self.interval([(i, -cx)])
            return t_lo + u_lo <= high and t_hi + u_hi >= low
        g = abs(cw * step)
        if g == 0:
            return low <= 0 <= high
        k_lo, k_hi = max(-(-low // g), 1 - n), min(high // g, n - 1)
        return k_lo <= k_hi and not k_lo == 0 == k_hi
