"""Structural verifier: definitions dominate uses, use-lists are consistent, types check.

Every failure raises ``VerifyError`` whose message states the rule and prints the op.
"""

from __future__ import annotations

from collections.abc import Mapping

from .errors import VerifyError
from .graph import Block, Graph, ReturnOp
from .op import Op
from .printer import ELIDE_DENSE_BYTES, Printer
from .traits import Terminator
from .value import Use, Value


class _Verifier:
    def __init__(self, graph: Graph):
        self.graph = graph
        self._printer: Printer | None = None
        self.attached: set[Op] = set()
        self.defined_values: list[Value] = []

    @property
    def printer(self) -> Printer:
        """Value names for error messages (made only when a rule is broken)."""
        if self._printer is None:
            self._printer = Printer(self.graph, elide_dense=ELIDE_DENSE_BYTES)
        return self._printer

    def fail(self, rule: str, op: Op | None = None) -> VerifyError:
        if op is None:
            return VerifyError(rule)
        try:
            text = "\n".join(self.printer.format_op(op))
        except Exception:  # noqa: BLE001 - the op may be too broken to print
            text = op.name
        return VerifyError(f"{rule}\n  at: {text}", op=op)

    def run(self) -> None:
        g = self.graph
        body = g.body
        if len(g.input_names) != len(body.args):
            raise self.fail("graph input names and block arguments differ in number")
        ret = body.last
        if not isinstance(ret, ReturnOp):
            raise self.fail(f"graph @{g.name} must end with a return op")
        visible: set[Value] = set()
        self.check_args(body, None)
        visible.update(body.args)
        self.block(body, visible, None)
        for v in self.defined_values:
            for use in v.uses:
                self.check_use_entry(v, use)
                if use.op not in self.attached:
                    raise self.fail(
                        f"use-list of {self.printer.name(v)} names a {use.op.name} op that is "
                        "not in the graph"
                    )
        if ret.attrs["aliases"]:
            from .aliases import check_alias_names
            from .errors import BuildError

            try:
                check_alias_names(g, g.outputs, ret.alias_map)
            except BuildError as e:
                raise self.fail(str(e), ret) from None

    def check_use_entry(self, v: Value, use, op: Op | None = None) -> None:
        """A use-list entry must be a Use naming an Op and an integer operand index."""
        if not (isinstance(use, Use) and isinstance(use.op, Op) and isinstance(use.index, int)):
            raise self.fail(f"use-list of {self.printer.name(v)} holds {use!r}, not a use by an op", op)

    def check_args(self, block: Block, owner: Op | None) -> None:
        for i, a in enumerate(block.args):
            if a.owner is not block or a.index != i:
                raise self.fail(f"block argument {i} does not point back to its block", owner)
            self.defined_values.append(a)

    def block(self, block: Block, visible: set[Value], owner: Op | None) -> None:
        count = 0
        for op in block:
            count += 1
            self.placement(op, block, owner)
            self.operands(op, visible)
            self.results(op)
            self.regions(op, visible)
            self.own_rules(op)
            visible.update(op.results)
            self.defined_values.extend(op.results)
        if count != len(block):
            raise self.fail("block op count does not match its linked list")

    def placement(self, op: Op, block: Block, owner: Op | None) -> None:
        """Parent pointer, terminator position, return only at the top level."""
        self.attached.add(op)
        if op.parent is not block:
            raise self.fail("op's parent pointer does not match its block", op)
        if op.has_trait(Terminator) and op is not block.last:
            raise self.fail(f"{op.name} must be the last op of its block", op)
        if isinstance(op, ReturnOp) and owner is not None:
            raise self.fail("return is only allowed at the graph's top level", op)

    def operands(self, op: Op, visible: set[Value]) -> None:
        """Operands are visible Values whose use-lists name this use."""
        for i, v in enumerate(op.operands):
            if not isinstance(v, Value):
                raise self.fail(f"operand {i} is not a Value", op)
            if v not in visible:
                raise self.fail(
                    f"operand {i} ({self.printer.name(v)}) is used before its definition "
                    "or outside its scope",
                    op,
                )
            if Use(op, i) not in v._uses:
                raise self.fail(
                    f"operand {i} ({self.printer.name(v)}) is missing this use in its use-list", op
                )

    def results(self, op: Op) -> None:
        """Results point back to their op; every use-list entry is a real use."""
        for i, r in enumerate(op.results):
            if r.owner is not op or r.index != i:
                raise self.fail(f"result {i} does not point back to its op", op)
            for use in r.uses:
                self.check_use_entry(r, use, op)
                ops = use.op.operands
                if use.index >= len(ops) or ops[use.index] is not r:
                    raise self.fail(
                        f"use-list of result {i} names operand {use.index} of a "
                        f"{use.op.name} op that does not use it",
                        op,
                    )

    def regions(self, op: Op, visible: set[Value]) -> None:
        """Region count and parent pointers; each nested block sees the enclosing values."""
        if len(op.regions) != op.num_regions:
            raise self.fail(f"expected {op.num_regions} regions, found {len(op.regions)}", op)
        for region in op.regions:
            if region.parent is not op:
                raise self.fail("region's parent pointer does not match its op", op)
            for b in region.blocks:
                if b.parent is not region:
                    raise self.fail("block's parent pointer does not match its region", op)
                self.check_args(b, op)
                # the nested block sees ``visible`` plus its own definitions, which are taken
                # out again afterwards (no copy of the enclosing scope: linear in the graph)
                mark = len(self.defined_values)
                visible.update(b.args)
                self.block(b, visible, op)
                visible.difference_update(self.defined_values[mark - len(b.args) :])

    def own_rules(self, op: Op) -> None:
        """The op's own ``verify``; any failure becomes a VerifyError naming the op."""
        try:
            op.verify()
        except VerifyError:
            raise
        except Exception as e:  # noqa: BLE001 - every failure becomes a VerifyError
            kind = "" if type(e).__name__ == "BuildError" else f"{type(e).__name__}: "
            raise self.fail(f"{kind}{e}", op) from None
        self.attributes(op)

    def attributes(self, op: Op) -> None:
        """The op's attributes are exactly its ``attr_spec`` names, each a legal value of its
        kind (an op whose ``infer`` ignores an attribute would not notice it missing)."""
        attrs = op.attrs
        if not isinstance(attrs, Mapping):
            raise self.fail(f"{op.name}: attributes are {type(attrs).__name__}, not a mapping", op)
        spec = {a.name: a for a in op.attr_spec}
        if set(attrs) != set(spec):
            missing = ", ".join(sorted(set(spec) - set(attrs))) or "none"
            unknown = ", ".join(sorted(map(str, set(attrs) - set(spec)))) or "none"
            raise self.fail(f"{op.name}: attributes missing: {missing}; unknown: {unknown}", op)
        for name, a in spec.items():
            try:
                a.kind.convert(attrs[name])
            except Exception as e:  # noqa: BLE001 - every failure becomes a VerifyError
                raise self.fail(f"{op.name}: attribute {name!r}: {e}", op) from None


def verify_graph(graph: Graph) -> None:
    """Raise VerifyError if ``graph`` breaks a structural or per-op rule."""
    _Verifier(graph).run()
