"""Rewriter (insert / replace / erase / RAUW with change notification), rewrite patterns, and
the one greedy worklist driver every pattern-based pass uses."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from .errors import BuildError
from .graph import Block, Graph
from .op import Op
from .value import Value


class Rewriter:
    """Creates and edits ops at an insertion point and reports each change to a listener."""

    def __init__(self, listener: Any = None):
        self.listener = listener
        self._block: Block | None = None
        self._before: Op | None = None
        self.loc: str | None = None  # source location given to inserted ops that have none

    # ---- insertion point -------------------------------------------------------------------
    def set_insertion_point_before(self, op: Op) -> None:
        self._block, self._before = op.parent, op

    def set_insertion_point_after(self, op: Op) -> None:
        self._block, self._before = op.parent, op.next_op

    def set_insertion_point_to_end(self, block: Block) -> None:
        self._block, self._before = block, None

    def insert(self, op: Op) -> Op:
        if self._block is None:
            raise BuildError("rewriter has no insertion point")
        if self._before is None:
            self._block.append(op)
        else:
            self._block.insert_before(self._before, op)
        if self.loc is not None and op.loc is None:
            op.loc = self.loc
        if self.listener is not None:
            self.listener.on_insert(op)
        return op

    def create(
        self,
        cls: type[Op],
        operands: Sequence[Value] = (),
        attrs: Mapping[str, Any] | None = None,
        result_types: Sequence[Any] | None = None,
        regions=None,
        name_hint: str | None = None,
    ) -> Op:
        """Build an op and insert it at the insertion point."""
        op = self.insert(cls(operands, attrs, result_types, regions))
        if name_hint:
            for r in op.results:
                r.name_hint = name_hint
        return op

    # ---- edits --------------------------------------------------------------------------------
    def replace_all_uses(self, old: Value, new: Value) -> None:
        users = old.users
        old.replace_all_uses_with(new)
        if self.listener is not None:
            for u in users:
                self.listener.on_change(u)

    def replace_op(self, op: Op, new_values: Sequence[Value]) -> None:
        """Replace every result of ``op`` by ``new_values`` and erase ``op``."""
        if len(new_values) != len(op.results):
            raise BuildError(
                f"replace_op: {op.name} has {len(op.results)} results, got {len(new_values)} values"
            )
        for r, v in zip(op.results, new_values):
            if r.type != v.type:
                raise BuildError(f"replace_op: type {v.type} does not match {r.type} of {op.name}")
            self.replace_all_uses(r, v)
        self.erase_op(op)

    def erase_op(self, op: Op) -> None:
        operand_defs = [v.defining_op for v in op.operands]
        op.erase()
        if self.listener is not None:
            self.listener.on_erase(op, [d for d in operand_defs if d is not None])


class RewritePattern:
    """A local rewrite: ``match_and_rewrite`` edits the IR through the rewriter and returns
    True, or returns False and leaves the IR untouched. ``root`` limits the op classes it
    is tried on (None: every op)."""

    root: ClassVar[type[Op] | tuple[type[Op], ...] | None] = None
    benefit: ClassVar[int] = 1

    def match_and_rewrite(self, op: Op, rewriter: Rewriter) -> bool:
        raise NotImplementedError

    @property
    def label(self) -> str:
        return type(self).__name__


class _Worklist:
    """Deterministic FIFO worklist of ops with O(1) membership; also the rewrite listener."""

    def __init__(self):
        self.queue: deque[Op] = deque()
        self.members: set[Op] = set()

    def push(self, op: Op | None) -> None:
        if op is not None and op not in self.members and op.parent is not None:
            self.members.add(op)
            self.queue.append(op)

    def pop(self) -> Op:
        op = self.queue.popleft()
        self.members.discard(op)
        return op

    def on_insert(self, op: Op) -> None:
        for inner in op.walk():
            self.push(inner)

    def on_change(self, op: Op) -> None:
        self.push(op)
        for r in op.results:
            for u in r.users:
                self.push(u)

    def on_erase(self, _op: Op, operand_defs: Iterable[Op]) -> None:
        for d in operand_defs:
            self.push(d)


def apply_patterns(
    graph: Graph, patterns: Sequence[RewritePattern], max_rewrites: int | None = None
) -> dict[str, int]:
    """Apply ``patterns`` greedily until none matches; also erases dead pure ops.

    Returns how often each pattern fired. Raises BuildError if the rewrites do not converge
    within ``max_rewrites`` (default: 20 per op + 1000).
    """
    by_root: dict[type, list[RewritePattern]] = {}
    ordered = sorted(patterns, key=lambda p: -p.benefit)

    def patterns_for(cls: type) -> list[RewritePattern]:
        if cls not in by_root:
            by_root[cls] = [p for p in ordered if p.root is None or issubclass(cls, p.root)]
        return by_root[cls]

    wl = _Worklist()
    for op in graph.walk():
        wl.push(op)
    rw = Rewriter(listener=wl)
    limit = max_rewrites if max_rewrites is not None else 20 * len(wl.queue) + 1000
    fired: dict[str, int] = {}
    total = 0
    while wl.queue:
        op = wl.pop()
        if op.parent is None:
            continue
        if op.is_pure and not op.is_terminator and not any(r.has_uses for r in op.results):
            rw.erase_op(op)
            continue
        for pat in patterns_for(type(op)):
            rw.set_insertion_point_before(op)
            rw.loc = op.loc  # ops a rewrite creates keep the source location of the op it rewrites
            if pat.match_and_rewrite(op, rw):
                fired[pat.label] = fired.get(pat.label, 0) + 1
                total += 1
                if op.parent is not None:
                    wl.push(op)
                break
        if total > limit:
            raise BuildError(f"rewrite patterns did not converge after {limit} rewrites: {fired}")
    return fired
