"""Fusion groups: partition a tensor graph into loop nests whose intermediates stay in SBUF.

Compute ops (elementwise, where, cast, keepdims reductions, iota) join the group of a producer
when their iteration domains are broadcast-compatible and the merge creates no cycle through
an op outside the group. Every other op (matmul, view ops, constants) is lowered by its own
family; values crossing a group boundary live in HBM.

Formation is incremental (one pass in program order): a group keeps what its legality checks
need — its first op's position, its reduction axes, its barrier members and its external
producers sorted by position — so an op joining a group costs work proportional to the ops it
touches, not to the size of the group (see ``GroupStats``).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from ...ir.graph import Graph, ReturnOp, stable_topological_order
from ...ir.op import Op
from ...ir.value import Value
from ...tensor import ops as T
from .operand_cast import is_operand_cast

FUSIBLE = (T.UnaryOp, T.BinaryOp, T.WhereOp, T.CastOp, T.ReduceOp, T.IotaOp)


def is_fusible(op: Op) -> bool:
    """True for ops a fusion group can compute on tiles."""
    if isinstance(op, T.ReduceOp) and not op.attrs["keepdims"]:
        return False
    return isinstance(op, FUSIBLE) and not is_operand_cast(op)  # operand casts: operand_cast.py


def op_domain(op: Op) -> tuple[int, ...]:
    """The iteration space of a fusible op: its operand's shape for reductions, else its result's."""
    if isinstance(op, T.ReduceOp):
        return op.operand(0).type.shape
    return op.result.type.shape


def merge_domains(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """The common domain of two domains that broadcast together (right-aligned), else None."""
    r = max(len(a), len(b))
    a = (1,) * (r - len(a)) + tuple(a)
    b = (1,) * (r - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            return None
    return tuple(out)


def domain_axes(op, rank: int) -> tuple[int, ...]:
    """A reduction's axes as dims of a domain of ``rank`` (operands are right-aligned)."""
    shift = rank - op.operand(0).type.rank
    return tuple(a + shift for a in op.attrs["axes"])


def _aligned_axes(op) -> tuple[int, ...]:
    """A reduction's axes counted from the right (negative): comparable across operand ranks."""
    return domain_axes(op, 0)


@dataclass(eq=False)
class FusionGroup:
    """Ops lowered together as one loop nest over ``domain``."""

    id: int
    domain: tuple[int, ...]
    ops: list[Op] = field(default_factory=list)

    def values(self) -> list[Value]:
        return [op.result for op in self.ops]


@dataclass
class GroupStats:
    """Work done by ``form_groups``, to witness that it is linear in the graph: ``joins``
    legality checks, ``visits`` ops looked at by cycle searches, ``scanned`` external
    producers looked at when two groups merge."""

    joins: int = 0
    visits: int = 0
    scanned: int = 0


@dataclass
class Partition:
    """The graph's ops in lowering order: each item is a FusionGroup or a single non-fused op."""

    items: list[FusionGroup | Op]
    group_of: dict[Op, FusionGroup]
    stats: GroupStats = field(default_factory=GroupStats)

    def escaping(self, group: FusionGroup) -> list[Value]:
        """Values of ``group`` used outside it (or returned): they need an HBM home."""
        members = set(group.ops)
        outs = []
        for op in group.ops:
            r = op.result
            if any(u.op not in members for u in r.uses):
                outs.append(r)
        return outs


class _Forming:
    """A group while the partition is formed: a union-find node plus the facts the legality
    checks need."""

    __slots__ = ("group", "parent", "first", "axes", "ext", "ext_keys", "seq")

    def __init__(self, group: FusionGroup, first: int, seq: int):
        self.group = group
        self.parent: _Forming | None = None
        self.first = first  # position of the earliest member
        self.axes: set[tuple[int, ...]] = set()  # right-aligned reduction axes of members
        self.ext: list[Op] = []  # producers of member operands outside the group, by position
        self.ext_keys: list[int] = []  # their positions (sorted; parallel to ext)
        self.seq = seq  # creation order (deterministic tie-breaks)


class _Former:
    """Incremental fusion-group formation over straight-line ``ops`` (see ``form_groups``)."""

    def __init__(self, ops: list[Op], is_barrier, reads_barrier, alone=frozenset()):
        self.ops = ops
        self.order = {op: i for i, op in enumerate(ops)}
        self.is_barrier = is_barrier
        self.reads_barrier = reads_barrier
        self.alone = alone  # ops lowered in a group of their own (limits.py)
        self.node: dict[Op, _Forming] = {}
        self.nodes: list[_Forming] = []
        self.stats = GroupStats()

    # ---- union-find --------------------------------------------------------------------------
    def find(self, n: _Forming) -> _Forming:
        root = n
        while root.parent is not None:
            root = root.parent
        while n.parent is not None and n.parent is not root:
            n.parent, n = root, n.parent
        return root

    def group_node(self, op: Op | None) -> _Forming | None:
        n = self.node.get(op) if op is not None else None
        return self.find(n) if n is not None else None

    # ---- legality ----------------------------------------------------------------------------
    def _cycle_from(self, roots, members, lo: int) -> bool:
        """True if some root (an op outside ``members``) depends on a member: a backward search
        over ops at positions >= ``lo`` (no member sits earlier)."""
        seen: set[Op] = set()
        stack = [r for r in roots if self.order[r] >= lo]
        order = self.order
        while stack:
            d = stack.pop()
            if d in seen:
                continue
            seen.add(d)
            self.stats.visits += 1
            for v in d.operands:
                p = v.owner
                if not isinstance(p, Op) or p not in order or order[p] < lo:
                    continue
                if self.group_node(p) in members:
                    return True
                stack.append(p)
        return False

    def _scan_ext(self, a: _Forming, b: _Forming, members, roots: list) -> bool:
        """Collect ``b``'s external producers that may sit on a path from ``a`` (positions >= the
        first of ``a``) into ``roots``; False if one of them is a barrier member of ``a``."""
        i = bisect.bisect_left(b.ext_keys, a.first)
        for d in b.ext[i:]:
            self.stats.scanned += 1
            n = self.group_node(d)
            if n is a:
                if self.is_barrier(d) or d in self.alone:
                    return False
            elif n not in members:
                roots.append(d)
        return True

    def can_fuse(self, a: _Forming, b: _Forming | None, op: Op | None) -> bool:
        """Whether ``a`` (+ ``b``) (+ ``op``, the latest op so far) form a legal group: no path
        between members through an outside op, no member reading a barrier member, one set of
        reduction axes."""
        self.stats.joins += 1
        axes = set(a.axes)
        if b is not None:
            axes |= b.axes
        if op is not None and isinstance(op, T.ReduceOp):
            axes.add(_aligned_axes(op))
        if len(axes) > 1:
            return False
        members = {a} if b is None else {a, b}
        roots: list[Op] = []
        if op is not None:
            for v in op.operands:
                d = v.defining_op
                if d is None or d not in self.order:
                    continue
                if self.group_node(d) in members:
                    if d in self.alone or (self.is_barrier(d) and not self.reads_barrier(d, op)):
                        return False
                else:
                    roots.append(d)
        if b is not None:
            if not self._scan_ext(a, b, members, roots) or not self._scan_ext(b, a, members, roots):
                return False
        lo = a.first if b is None else min(a.first, b.first)
        return not self._cycle_from(roots, members, lo)

    # ---- mutation ----------------------------------------------------------------------------
    def _add_ext(self, n: _Forming, d: Op) -> None:
        k = self.order[d]
        i = bisect.bisect_right(n.ext_keys, k)
        n.ext_keys.insert(i, k)
        n.ext.insert(i, d)

    def merge(self, a: _Forming, b: _Forming) -> None:
        """Fold ``b`` into ``a`` (``a`` keeps its identity; the smaller list is re-inserted)."""
        a.group.ops.extend(b.group.ops)
        a.group.domain = merge_domains(a.group.domain, b.group.domain)
        a.axes |= b.axes
        a.first = min(a.first, b.first)
        if len(b.ext) > len(a.ext):
            a.ext, b.ext = b.ext, a.ext
            a.ext_keys, b.ext_keys = b.ext_keys, a.ext_keys
        for d in b.ext:
            self._add_ext(a, d)
        b.parent = a
        b.ext, b.ext_keys = [], []

    def add(self, n: _Forming, op: Op) -> None:
        n.group.ops.append(op)
        self.node[op] = n
        if isinstance(op, T.ReduceOp):
            n.axes.add(_aligned_axes(op))
        for v in op.operands:
            d = v.defining_op
            if d is not None and d in self.order and self.group_node(d) is not n:
                self._add_ext(n, d)

    def new(self, op: Op) -> _Forming:
        n = _Forming(FusionGroup(len(self.nodes), op_domain(op)), self.order[op], len(self.nodes))
        self.nodes.append(n)
        return n

    # ---- the two phases ----------------------------------------------------------------------
    def grow(self) -> None:
        """Each fusible op joins the first producer group it can, merging the others it can."""
        for op in self.ops:
            if not is_fusible(op):
                continue
            dom = op_domain(op)
            candidates: list[_Forming] = []
            for v in () if op in self.alone else op.operands:
                g = self.group_node(v.defining_op)
                if g is not None and g not in candidates:
                    candidates.append(g)
            target = None
            for g in candidates:
                merged = merge_domains(g.group.domain, dom)
                if merged is None:
                    continue
                if target is None:
                    if self.can_fuse(g, None, op):
                        target, dom = g, merged
                else:
                    both = merge_domains(target.group.domain, g.group.domain)
                    if both is None:
                        continue
                    if self.can_fuse(target, g, op):
                        self.merge(target, g)
                        target.group.domain = merge_domains(target.group.domain, dom)
            if target is None:
                target = self.new(op)
            else:
                target.group.domain = merge_domains(target.group.domain, dom)
            self.add(target, op)

    def merge_siblings(self) -> None:
        """Horizontal fusion: merge groups over the same domain that read a common input, so the
        input is loaded once (e.g. the two halves of RoPE). Groups sharing (domain, input) are
        found through an index, never by comparing all pairs."""
        readers: dict[tuple, list[_Forming]] = {}
        live = [n for n in self.nodes if n.parent is None]
        inputs: dict[_Forming, list[Value]] = {}
        for n in live:
            inputs[n] = self._external_inputs(n)
            for v in inputs[n]:
                readers.setdefault((n.group.domain, v), []).append(n)
        for a in live:
            if a.parent is not None:
                continue
            i = 0
            while i < len(inputs[a]):
                v = inputs[a][i]
                i += 1
                for b in readers.get((a.group.domain, v), ()):
                    if b.parent is not None or b is a or b.seq < a.seq or self._has_alone(a, b):
                        continue
                    if b.group.domain != a.group.domain or not self.can_fuse(a, b, None):
                        continue
                    self.merge(a, b)
                    have = set(inputs[a])
                    for w in inputs.pop(b):
                        if w not in have:
                            have.add(w)
                            inputs[a].append(w)
                            readers.setdefault((a.group.domain, w), []).append(a)

    def _has_alone(self, a: _Forming, b: _Forming) -> bool:
        return bool(self.alone) and any(op in self.alone for op in a.group.ops + b.group.ops)

    def _external_inputs(self, n: _Forming) -> list[Value]:
        seen: dict[Value, None] = {}
        for op in n.group.ops:
            for v in op.operands:
                if self.group_node(v.defining_op) is not n:
                    seen[v] = None
        return list(seen)

    def groups(self) -> dict[Op, FusionGroup]:
        """Final membership; every group's ops in program order."""
        group_of: dict[Op, FusionGroup] = {}
        for n in self.nodes:
            if n.parent is None:
                n.group.ops.sort(key=self.order.__getitem__)
        for op, n in self.node.items():
            group_of[op] = self.find(n).group
        return group_of


def form_groups(
    graph: Graph, is_barrier=lambda _op: False, reads_barrier=lambda _d, _op: False, alone=frozenset()
) -> Partition:
    """Partition the (top-level, straight-line) tensor graph into fusion groups and other ops.

    ``is_barrier(op)`` marks ops whose result is only complete after the whole loop nest (a
    reduction accumulated across loops or partitions): no op reading it may join its group,
    unless ``reads_barrier(barrier, op)`` says ``op`` reads its running value (online.py).
    Ops in ``alone`` form groups of their own (limits.py).
    """
    ops = [op for op in graph.body if not isinstance(op, ReturnOp)]
    former = _Former(ops, is_barrier, reads_barrier, alone)
    former.grow()
    former.merge_siblings()
    group_of = former.groups()
    items = _condensed_toposort(ops, group_of, former.order)
    for i, g in enumerate(x for x in items if isinstance(x, FusionGroup)):
        g.id = i
    return Partition(items, group_of, former.stats)


def _condensed_toposort(ops, group_of, order) -> list[FusionGroup | Op]:
    """Groups and lone ops in a dependency order (ties broken by first op position)."""
    items: dict[int, FusionGroup | Op] = {}
    first: dict[int, int] = {}
    for op in ops:
        it = group_of.get(op, op)
        if id(it) not in items:
            items[id(it)] = it
            first[id(it)] = order[op]
    deps: dict[int, set[int]] = {k: set() for k in items}
    for op in ops:
        me = id(group_of.get(op, op))
        for v in op.operands:
            d = v.defining_op
            if d is not None and d in order and id(group_of.get(d, d)) != me:
                deps[me].add(id(group_of.get(d, d)))
    keys = list(items)
    result = stable_topological_order(keys, deps, first.__getitem__)
    if result is None:
        raise AssertionError("fusion groups form a cycle")
    return [items[k] for k in result]


def item_results(it) -> list:
    """The values a lowering item (a FusionGroup or a single op) defines."""
    return it.results if not isinstance(it, FusionGroup) else [op.result for op in it.ops]


def item_operands(it) -> list:
    """The values a lowering item reads from outside itself."""
    if not isinstance(it, FusionGroup):
        return list(it.operands)
    inside = {op.result for op in it.ops}
    return [v for op in it.ops for v in op.operands if v not in inside]


def defined_by(items: list) -> dict:
    """value -> index of the lowering item defining it."""
    return {v: i for i, it in enumerate(items) for v in item_results(it)}
