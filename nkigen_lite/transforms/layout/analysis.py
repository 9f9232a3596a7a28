"""LayoutAnalysis: the I/P/F role of every dim of every value, as the lowering consumes it."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...ir.graph import Graph
from ...ir.op import Op
from ...ir.printer import Printer
from ...ir.value import Value


@dataclass
class LayoutAnalysis:
    """Result of the layout solver for one graph.

    ``roles[v]`` has one of "I" (iterated by loops), "P" (on the partitions) or "F" (free, inside
    a tile) per dim of v; ``partition_tile[v]`` is the number of partition rows of one tile of v
    (<= the target's partitions; 1 when v has no P dim); ``conversions`` are the
    ``tensor.layout_convert`` ops the solver inserted; ``boundaries`` are reshapes whose operand
    and result roles cannot be mapped onto each other (the lowering goes through memory there).
    The analysis describes the graph as the layout pass left it.
    """

    graph: Graph
    partitions: int
    roles: dict[Value, tuple[str, ...]] = field(default_factory=dict)
    partition_tile: dict[Value, int] = field(default_factory=dict)
    # values whose partition dim carries a ``tile_size`` knob: value -> (knob name, rows)
    tile_knobs: dict[Value, tuple[str, int]] = field(default_factory=dict)
    conversions: list[Op] = field(default_factory=list)
    boundaries: list[Op] = field(default_factory=list)

    def roles_of(self, v: Value) -> tuple[str, ...]:
        """The roles of ``v``'s dims; KeyError if v is not a value of the analysed graph."""
        try:
            return self.roles[v]
        except KeyError:
            raise KeyError(f"layout: no roles for {v!r} (not a value of @{self.graph.name})") from None

    def p_dims(self, v: Value) -> tuple[int, ...]:
        """The dims of ``v`` on the partitions."""
        return tuple(d for d, r in enumerate(self.roles_of(v)) if r == "P")

    def values(self) -> list[Value]:
        """Every analysed value in program order (inputs first)."""
        out = list(self.graph.inputs)
        for op in self.graph.walk():
            out.extend(op.results)
        return [v for v in out if v in self.roles]

    def __str__(self) -> str:
        p = Printer(self.graph)
        rows = []
        for v in self.values():
            shape = "x".join(map(str, v.shape)) or "scalar"
            roles = "[" + ", ".join(self.roles[v]) + "]"
            rows.append((p.name(v), shape, roles, str(self.partition_tile.get(v, 1))))
        w = [max([len(r[k]) for r in rows] + [4]) for k in range(3)]
        lines = [f"layout @{self.graph.name} (partitions = {self.partitions})"]
        lines.append(f"  {'value':<{w[0]}}  {'shape':<{w[1]}}  {'roles':<{w[2]}}  tile")
        for name, shape, roles, tile in rows:
            lines.append(f"  {name:<{w[0]}}  {shape:<{w[1]}}  {roles:<{w[2]}}  {tile}")
        for op in self.conversions:
            src, dst = op.operand(0), op.result
            lines.append(
                f"  conversion {p.name(dst)} = layout_convert {p.name(src)}: "
                f"[{', '.join(self.roles[src])}] -> [{', '.join(self.roles[dst])}]"
            )
        for op in self.boundaries:
            lines.append(f"  boundary {p.name(op.result)} = reshape {p.name(op.operand(0))}")
        return "\n".join(lines) + "\n"
