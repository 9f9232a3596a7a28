"""Block, Region and Graph: op containers with O(1) insert/erase, walk, toposort and DCE."""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterator, Sequence

from .attrs import STR, Attr, TupleOf
from .edits import EDITS
from .errors import BuildError
from .op import Op
from .traits import Pure, Terminator
from .value import Value

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class Block:
    """A straight-line list of ops with block arguments (e.g. a loop's induction variable)."""

    __slots__ = ("args", "_head", "_tail", "_len", "parent")

    def __init__(self, arg_types: Sequence = (), arg_names: Sequence[str | None] = ()):
        names = list(arg_names) + [None] * (len(arg_types) - len(arg_names))
        self.args: list[Value] = [Value(t, self, i, n) for i, (t, n) in enumerate(zip(arg_types, names))]
        self._head: Op | None = None
        self._tail: Op | None = None
        self._len = 0
        self.parent: Region | None = None

    def add_arg(self, type, name: str | None = None) -> Value:
        EDITS.n += 1
        v = Value(type, self, len(self.args), name)
        self.args.append(v)
        return v

    def __iter__(self) -> Iterator[Op]:
        op = self._head
        while op is not None:
            nxt = op._next  # safe against erasing the current op
            yield op
            op = nxt

    def __reversed__(self) -> Iterator[Op]:
        op = self._tail
        while op is not None:
            prv = op._prev
            yield op
            op = prv

    def __len__(self) -> int:
        return self._len

    @property
    def ops(self) -> list[Op]:
        return list(self)

    @property
    def first(self) -> Op | None:
        return self._head

    @property
    def last(self) -> Op | None:
        return self._tail

    def _link(self, op: Op, prev: Op | None, nxt: Op | None) -> Op:
        if op.parent is not None:
            raise BuildError(f"{op.name} is already in a block")
        EDITS.n += 1
        op.parent, op._prev, op._next = self, prev, nxt
        if prev is None:
            self._head = op
        else:
            prev._next = op
        if nxt is None:
            self._tail = op
        else:
            nxt._prev = op
        self._len += 1
        return op

    def append(self, op: Op) -> Op:
        return self._link(op, self._tail, None)

    def prepend(self, op: Op) -> Op:
        return self._link(op, None, self._head)

    def insert_before(self, anchor: Op, op: Op) -> Op:
        if anchor.parent is not self:
            raise BuildError("insertion anchor is not in this block")
        return self._link(op, anchor._prev, anchor)

    def insert_after(self, anchor: Op, op: Op) -> Op:
        if anchor.parent is not self:
            raise BuildError("insertion anchor is not in this block")
        return self._link(op, anchor, anchor._next)

    def remove(self, op: Op) -> None:
        """Unlink ``op`` (uses are untouched; see ``Op.erase``)."""
        if op.parent is not self:
            raise BuildError(f"{op.name} is not in this block")
        EDITS.n += 1
        if op._prev is None:
            self._head = op._next
        else:
            op._prev._next = op._next
        if op._next is None:
            self._tail = op._prev
        else:
            op._next._prev = op._prev
        op.parent = op._prev = op._next = None
        self._len -= 1

    def walk(self) -> Iterator[Op]:
        for op in self:
            yield from op.walk()


class Region:
    """A list of blocks owned by an op (or by a Graph); nkigen_lite uses one block per region."""

    __slots__ = ("blocks", "parent")

    def __init__(self, blocks: Sequence[Block] | None = None):
        self.blocks: list[Block] = list(blocks) if blocks is not None else [Block()]
        for b in self.blocks:
            b.parent = self
        self.parent = None

    @property
    def block(self) -> Block:
        return self.blocks[0]


class ReturnOp(Op):
    """Terminator of a graph: names the graph outputs (``return y = %5, z = %6``). An output
    may alias an input (``return cache_out = %c (aliases cache)``): the kernel writes that
    input's buffer in place; ``aliases`` holds, per output, the input name or ``""``."""

    name = "return"
    traits = frozenset({Terminator})
    attr_spec = (Attr("names", TupleOf(STR)), Attr("aliases", TupleOf(STR), ()))

    @classmethod
    def infer(cls, operand_types, attrs):
        if len(attrs["names"]) != len(operand_types):
            raise BuildError("return: number of names and values differ")
        return []

    def verify(self) -> None:
        if self.results:
            raise BuildError("return: must not have results")
        names = self.attrs["names"]
        if len(names) != self.num_operands:
            raise BuildError("return: number of names and values differ")
        if len(set(names)) != len(names):
            raise BuildError(f"return: duplicate output names {list(names)}")
        for n in names:
            if not _IDENT.match(n):
                raise BuildError(f"return: output name {n!r} is not an identifier")
        aliases = self.attrs["aliases"]
        if aliases and len(aliases) != len(names):
            raise BuildError("return: number of aliases and outputs differ")

    @property
    def alias_map(self) -> dict[str, str]:
        """Output name -> the input name it aliases (only aliased outputs)."""
        return {n: a for n, a in zip(self.attrs["names"], self.attrs.get("aliases", ())) if a}

    def format_body(self, p) -> str:
        aliases = self.attrs["aliases"] or ("",) * self.num_operands
        return ", ".join(
            f"{n} = {p.name(v)}" + (f" (aliases {a})" if a else "")
            for n, v, a in zip(self.attrs["names"], self.operands, aliases)
        )

    @classmethod
    def parse_body(cls, ps):
        operands, names, aliases = [], [], []
        if not ps.at_line_end():
            while True:
                names.append(ps.expect_ident())
                ps.expect("=")
                operands.append(ps.parse_value_ref())
                if ps.accept("("):
                    if ps.expect_ident() != "aliases":
                        raise ps.error("expected 'aliases <input name>' after '('")
                    aliases.append(ps.expect_ident())
                    ps.expect(")")
                else:
                    aliases.append("")
                if not ps.accept(","):
                    break
        attrs = {"names": tuple(names)}
        if any(aliases):
            attrs["aliases"] = tuple(aliases)
        return operands, attrs


class Graph:
    """A named program: inputs are the arguments of its top block, outputs its return op."""

    def __init__(self, name: str = "main"):
        if not _IDENT.match(name):
            raise BuildError(f"graph name {name!r} is not an identifier ([A-Za-z_][A-Za-z0-9_]*)")
        self.name = name
        self.region = Region()
        self.region.parent = self
        self.input_names: list[str] = []

    @property
    def body(self) -> Block:
        return self.region.block

    # ---- signature ------------------------------------------------------------------------
    def add_input(self, name: str, type) -> Value:
        if not isinstance(name, str) or not _IDENT.match(name):
            raise BuildError(f"input name {name!r} is not an identifier ([A-Za-z_][A-Za-z0-9_]*)")
        if name in self.input_names:
            raise BuildError(f"duplicate input name {name!r}")
        self.input_names.append(name)
        return self.body.add_arg(type, name)

    @property
    def inputs(self) -> list[Value]:
        return list(self.body.args)

    def input(self, name: str) -> Value:
        return self.body.args[self.input_names.index(name)]

    @property
    def return_op(self) -> ReturnOp | None:
        last = self.body.last
        return last if isinstance(last, ReturnOp) else None

    @property
    def outputs(self) -> dict[str, Value]:
        ret = self.return_op
        if ret is None:
            return {}
        return dict(zip(ret.attrs["names"], ret.operands))

    @property
    def aliases(self) -> dict[str, str]:
        """Output name -> the input name whose buffer it updates in place (IO aliasing)."""
        ret = self.return_op
        return ret.alias_map if ret is not None else {}

    def set_outputs(self, outputs: dict[str, Value], aliases: dict[str, str] | None = None) -> None:
        """Replace the graph's outputs (creates or rewrites the return op). ``aliases`` maps
        output names to the input names they update in place; None keeps the current aliases
        of the outputs that keep their names."""
        for name, v in outputs.items():
            if not isinstance(name, str) or not _IDENT.match(name):
                raise BuildError(f"output name {name!r} is not an identifier")
            if not isinstance(v, Value):
                raise BuildError(f"output {name!r} is not an IR Value: {v!r}")
        if aliases is None:
            aliases = {n: a for n, a in self.aliases.items() if n in outputs}
        from .aliases import check_alias_names

        check_alias_names(self, outputs, aliases)
        old = self.return_op
        if old is not None:
            old.erase()
        attrs = {"names": tuple(outputs)}
        if aliases:
            attrs["aliases"] = tuple(aliases.get(n, "") for n in outputs)
        self.body.append(ReturnOp(list(outputs.values()), attrs))

    # ---- traversal ---------------------------------------------------------------------------
    def __iter__(self) -> Iterator[Op]:
        return iter(self.body)

    @property
    def ops(self) -> list[Op]:
        return self.body.ops

    def walk(self) -> Iterator[Op]:
        """Every op of the graph, nested ones included, in pre-order."""
        return self.body.walk()

    def toposort(self) -> None:
        """Reorder every block so definitions precede uses, keeping side-effecting ops (and
        the terminator) in their original relative order; otherwise stable."""
        _toposort_block(self.body)

    def dce(self) -> int:
        """Erase pure ops whose results are unused (nested blocks too); returns the count."""
        return dead_code_elimination(self.body)

    def verify(self) -> None:
        from .verifier import verify_graph

        verify_graph(self)

    def __str__(self) -> str:
        """The text that ``nk.parse`` reads back (dense constants in full)."""
        from .printer import print_graph

        return print_graph(self)

    def format(self, elide_constants: bool = True) -> str:
        """The text for reading: dense constants over ``printer.ELIDE_DENSE_BYTES`` bytes show
        only their shape and dtype (``dense<1024x1024xf32, __elided__>``); ``str(graph)`` or
        ``format(elide_constants=False)`` is the form that parses."""
        from .printer import ELIDE_DENSE_BYTES, print_graph

        return print_graph(self, ELIDE_DENSE_BYTES if elide_constants else None)

    def clone(self) -> Graph:
        """A structural copy equal to ``parse(str(self))`` (see ``ir/clone.py``)."""
        from .clone import clone_graph

        return clone_graph(self)

    def __repr__(self) -> str:
        return f"<Graph @{self.name}: {len(self.body)} ops>"


def stable_topological_order(nodes, deps, priority):
    """``nodes`` (hashable, distinct) ordered so each comes after its ``deps[node]``; among ready
    nodes the one with the smallest ``priority(node)`` goes first. None on a cycle."""
    users = {n: [] for n in nodes}
    for n in nodes:
        for d in deps[n]:
            users[d].append(n)
    pending = {n: len(deps[n]) for n in nodes}
    ready = [(priority(n), i, n) for i, n in enumerate(nodes) if pending[n] == 0]
    heapq.heapify(ready)
    order = []
    tie = len(nodes)
    while ready:
        _, _, n = heapq.heappop(ready)
        order.append(n)
        for u in users[n]:
            pending[u] -= 1
            if pending[u] == 0:
                tie += 1
                heapq.heappush(ready, (priority(u), tie, u))
    return order if len(order) == len(nodes) else None


def _enclosing_op_in(op: Op, block: Block) -> Op | None:
    """The ancestor of ``op`` (or op itself) that sits directly in ``block``."""
    while op is not None and op.parent is not block:
        op = op.parent_op
    return op


def _toposort_block(block: Block) -> None:
    ops = block.ops
    index = {op: i for i, op in enumerate(ops)}
    deps: dict[Op, set[Op]] = {op: set() for op in ops}
    last_effect = None
    for op in ops:
        for inner in op.walk():
            for v in inner.operands:
                d = v.defining_op
                if d is not None:
                    top = _enclosing_op_in(d, block)
                    if top is not None and top is not op:
                        deps[op].add(top)
        if not op.is_pure:
            if last_effect is not None:
                deps[op].add(last_effect)
            last_effect = op
        for r in op.regions:
            for b in r.blocks:
                _toposort_block(b)
    order = stable_topological_order(ops, deps, index.__getitem__)
    if order is None:
        raise BuildError("toposort: the block has a dependency cycle")
    term = [op for op in order if op.has_trait(Terminator)]
    order = [op for op in order if not op.has_trait(Terminator)] + term
    for op in ops:
        block.remove(op)
    for op in order:
        block.append(op)


def dead_code_elimination(block: Block) -> int:
    """Erase unused pure ops in ``block`` and its nested blocks; returns the number erased."""
    erased = 0
    worklist = list(block.walk())
    seen = set()
    while worklist:
        op = worklist.pop()
        if op in seen or op.parent is None:
            continue
        if op.is_pure and not op.is_terminator and not any(r.has_uses for r in op.results):
            seen.add(op)
            operands = [v.defining_op for v in op.operands]
            op.erase()
            erased += 1
            worklist.extend(d for d in operands if d is not None and d not in seen)
    return erased


__all__ = ["Block", "Region", "Graph", "ReturnOp", "Pure"]
