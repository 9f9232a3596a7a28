"""The layout solver: gives every dim of every value a role, I, P or F.

Each (value, dim) is a variable; variables that must share a role form a class (union-find),
and a class may carry a required role. Ops are visited in program order: an op's
requirements on its results are applied first, then the links and requirements it puts on
its operands (``constraints.py``). If they contradict what earlier ops fixed for an operand's
value, the op reads that operand through ``tensor.layout_convert`` instead: an earlier
conversion of the same value when one fits, else a new one whose dims start free. The solver
tries the operand assignments with the fewest new conversions (then the fewest conversions)
first. A new conversion's dims that the op leaves free get their defaults at once (see
below). So every disagreement between two users becomes an explicit conversion the lowering
sees, and users that agree share it.

Soft requirements (``OpConstraints.soft``: a matmul's A, whose K-on-partitions layout is a
transpose of how A is stored, and B, which may be a transposed view) are not imposed on an
elementwise producer (or a transpose, reshape, slice or concat of one) whose dims are still
all free: the op reads it through a conversion (an existing one, else a new one), and the
producer keeps the layout its own inputs and users give it (by default rows on the
partitions, its contiguous dim free), loading and storing whole rows; the lowering transposes
the tile on the Tensor engine. Otherwise ``(a * 2.0) @ b`` would load ``a`` and store the
product with element-wise (one element per descriptor) transposing DMAs. A soft conversion
whose source ends with the same roles as its result is a no-op and is removed once roles are
known.

Knobs ``{"<value name>": {"partition_dim": d, "tile_size": t}}`` seed the solver: the named
value's dim d is P and its other free dims take their defaults (applied where the value is
defined, before its users), and its partition tiles have t rows. Names are graph input names,
output names, or the value's printed name.

Split/merge groups of reshapes are solved once one side is known: a P dim splits into P
inner dims (as many as fit the partitions, plus one outer, chunked) and I outer dims, F into
F dims, I into I dims; merges map back the same way. Any other combination makes the reshape
a boundary. Classes left free get positional defaults, value by value in program order,
walking its free dims from the last: the first one is F unless the value has an F dim already;
unless it has a P dim already, the next ones are P while their extents multiply to at most the
partitions (plus one more dim that the lowering chunks, when a chunk of at least 2 fits); the
rest are I. So an unconstrained matrix is [P, F], and a batch of them [I, P, F].
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from ...ir.errors import BuildError
from ...ir.graph import Graph, ReturnOp
from ...ir.op import Op
from ...ir.printer import Printer
from ...ir.value import Value
from .analysis import LayoutAnalysis
from .classes import RoleClasses
from .constraints import elementwise_through_views, op_constraints
from .ops import LayoutConvertOp
from .policy import DefaultRoles, tile_rows

KNOB_KEYS = ("partition_dim", "tile_size")
# NKIPy knobs nkigen_lite does not honour, rejected with the reason (never silently ignored)
UNSUPPORTED_KNOBS = {
    "mem_space": "nkigen_lite places every value itself (HBM homes for values crossing fusion "
    "groups, SBUF/PSUM tiles inside them); there is no per-value memory-space override",
    "reduction_tile": "reductions are tiled by the lowering (row-local in one tile, or accumulated "
    "over loops and partition chunks); there is no per-value reduction tile",
}
MAX_SEARCH_OPERANDS = 4  # ops with more operands do not search operand/conversion combinations


def split_roles(role: str, extents: list[int], partitions: int) -> list[str]:
    """Roles of the dims a dim of ``role`` splits into (outer to inner)."""
    if role != "P":
        return [role] * len(extents)
    out = ["I"] * len(extents)
    rows = 1
    for k in range(len(extents) - 1, -1, -1):
        out[k] = "P"
        rows *= extents[k]
        if rows > partitions:
            break
    return out


def merge_roles(roles: list[str]) -> str | None:
    """Role of the dim several dims merge into, or None when they cannot merge."""
    rest = roles
    while rest and rest[0] == "I":
        rest = rest[1:]
    if not rest:
        return "I"
    if all(r == rest[0] for r in rest):
        return rest[0]
    return None


class LayoutSolver:
    """One run of the solver over a graph (mutates it by inserting conversions)."""

    def __init__(self, graph: Graph, partitions: int, knobs: Mapping | None = None):
        self.graph = graph
        self.partitions = partitions
        self.cls = RoleClasses()
        self.vars: dict[int, list[int]] = {}
        self.values: list[Value] = []
        self.converted: dict[int, list[Value]] = {}
        self.soft_conversions: list[Op] = []  # made for soft requirements (maybe no-ops)
        self.pending: list[tuple[Op, tuple[int, ...], tuple[int, ...]]] = []
        self.analysis = LayoutAnalysis(graph, partitions)
        self.knobs = self._parse_knobs(knobs or {})
        self.tile_knobs: list[tuple[int, int]] = []  # (P dim variable, tile rows)
        self._printer: Printer | None = None  # names conversions after their source value

    # ---- variables and knobs --------------------------------------------------------------
    def register(self, v: Value) -> None:
        self.vars[id(v)] = [self.cls.new() for _ in range(v.ndim)]
        self.values.append(v)

    def var(self, v: Value, d: int) -> int:
        return self.vars[id(v)][d]

    def _parse_knobs(self, knobs: Mapping) -> dict[int, tuple[int, int | None]]:
        names = dict(Printer(self.graph).names.items())
        by_name = {n: v for v, n in names.items()}
        by_name.update(self.graph.outputs)
        out = {}
        for name, spec in knobs.items():
            v = by_name.get(name)
            if v is None:
                raise BuildError(
                    f"layout knob {name!r}: no value of @{self.graph.name} has this name "
                    f"(inputs: {', '.join(self.graph.input_names)})"
                )
            if not isinstance(spec, Mapping):
                raise BuildError(f"layout knob {name!r}: expected a dict with keys {KNOB_KEYS}, got {spec!r}")
            for key in spec:
                if key in UNSUPPORTED_KNOBS:
                    raise BuildError(
                        f"layout knob {name!r}: {key!r} is not supported: {UNSUPPORTED_KNOBS[key]}"
                    )
                if key not in KNOB_KEYS:
                    raise BuildError(
                        f"layout knob {name!r}: unknown knob {key!r} (known: {', '.join(KNOB_KEYS)})"
                    )
            if v.ndim == 0:
                raise BuildError(f"layout knob {name!r}: a rank-0 value has no dims to place")
            d = spec.get("partition_dim", v.ndim - 2 if v.ndim >= 2 else 0)
            if isinstance(d, bool) or not isinstance(d, int) or not -v.ndim <= d < v.ndim:
                raise BuildError(f"layout knob {name!r}: partition_dim {d!r} is not a dim of {v.type}")
            t = spec.get("tile_size")
            if t is not None and (
                isinstance(t, bool) or not isinstance(t, int) or not 1 <= t <= self.partitions
            ):
                raise BuildError(f"layout knob {name!r}: tile_size {t!r} is not in [1, {self.partitions}]")
            out[id(v)] = (d % v.ndim, t, name)
        return out

    def _seed(self, v: Value) -> bool:
        """Apply v's knob (if any); False if it contradicts what is already fixed."""
        knob = self.knobs.get(id(v))
        if knob is None:
            return True
        d, t, name = knob
        if not self.cls.require(self.var(v, d), "P"):
            return False
        self._default(v)  # the knob settles the whole layout of v
        if t is not None:
            self.tile_knobs.append((self.var(v, d), t, name))
        return True

    # ---- constraints and conversions ------------------------------------------------------
    def _apply(self, op: Op, c, chosen: list, which) -> bool:
        """Apply op's constraints on the operands in ``which``, operand i's dims being the
        variables ``chosen[i]``."""
        cls = self.cls
        for i in which:
            for item in c.operands[i]:
                kind, d = item[0], item[1]
                if kind == "res":
                    ok = cls.union(chosen[i][d], self.var(op.results[0], item[2]))
                elif kind == "opd":
                    ok = cls.union(chosen[i][d], chosen[item[2]][item[3]])
                else:
                    ok = cls.require(chosen[i][d], item[2])
                if not ok:
                    return False
        return True

    def _try(self, op: Op, c, chosen: list, which) -> bool:
        self.cls.begin()
        if self._apply(op, c, chosen, which):
            self.cls.commit()
            return True
        self.cls.rollback()
        return False

    def _candidates(self, v: Value, soft: bool = False) -> list[int]:
        """0 = the value itself, k = its k-th existing conversion, -1 = a new conversion; not 0
        when ``soft`` and v is an elementwise result whose dims have no role yet (see the
        module docstring; a view of such a result counts as one)."""
        out = list(range(1 + len(self.converted.get(id(v), [])))) + [-1]
        if soft and elementwise_through_views(v) and all(r is None for r in self._roles(v, range(v.ndim))):
            return out[1:]
        return out

    def _vars_for(self, v: Value, k: int) -> list[int]:
        if k == -1:
            return [self.cls.new() for _ in range(v.ndim)]
        return self.vars[id(v if k == 0 else self.converted[id(v)][k - 1])]

    def _convert(
        self, v: Value, vars_: list[int], before: Op | None = None, after: Op | None = None
    ) -> Value:
        conv = LayoutConvertOp([v])
        if self._printer is None:  # one naming of the graph for every conversion (linear)
            self._printer = Printer(self.graph)
        if v not in self._printer.names:
            self._printer._assign(v)
        conv.result.name_hint = self._printer.name(v)[1:] + "_conv"
        if before is not None:
            self.graph.body.insert_before(before, conv)
        else:
            self.graph.body.insert_after(after, conv)
        self.vars[id(conv.result)] = vars_
        self.values.append(conv.result)
        self.converted.setdefault(id(v), []).append(conv.result)
        self.analysis.conversions.append(conv)
        return conv.result

    def _operands(self, op: Op, c) -> None:
        """Choose, per operand, the value itself or a conversion of it. Up to
        MAX_SEARCH_OPERANDS operands, every combination is tried, fewest new conversions
        first, then fewest conversions, then in order; beyond, operand by operand."""
        operands = op.operands
        n = len(operands)
        choice: tuple[int, ...] | None = None
        chosen: list = [None] * n
        candidates = [self._candidates(v, i in c.soft) for i, v in enumerate(operands)]
        if n <= MAX_SEARCH_OPERANDS:
            combos = itertools.product(*candidates)
            for t in sorted(combos, key=lambda t: (t.count(-1), sum(k != 0 for k in t), t)):
                chosen = [self._vars_for(v, k) for v, k in zip(operands, t)]
                if self._try(op, c, chosen, range(n)):
                    choice = t
                    break
        else:
            picks = []
            for i, v in enumerate(operands):
                for k in candidates[i]:
                    chosen[i] = self._vars_for(v, k)
                    if self._try(op, c, chosen, [i]):
                        picks.append(k)
                        break
                else:
                    break
            choice = tuple(picks) if len(picks) == n else None
        if choice is None:
            raise BuildError(f"layout: the constraints of {op.name} contradict each other:\n  {op!r}")
        for i, (v, k) in enumerate(zip(operands, choice)):
            if k == -1:  # settle the new layout now, so later users cannot collapse it
                cv = self._convert(v, chosen[i], before=op)
                self._default(cv)
                if i in c.soft:
                    self.soft_conversions.append(cv.defining_op)
                op.set_operand(i, cv)
            elif k > 0:
                op.set_operand(i, self.converted[id(v)][k - 1])

    def _visit(self, op: Op) -> None:
        for r in op.results:
            self.register(r)
        c = op_constraints(op)
        for d, role in c.results:
            self.cls.require(self.var(op.results[0], d), role)
        self._operands(op, c)
        self.pending += [(op, gi, gj) for gi, gj in c.reshape_groups]
        for r in op.results:
            self.cls.begin()
            if self._seed(r):
                self.cls.commit()
                continue
            self.cls.rollback()
            users = [(u.op, u.index) for u in r.uses]
            cv = self._convert(r, [self.cls.new() for _ in range(r.ndim)], after=op)
            for user, idx in users:
                user.set_operand(idx, cv)
            self.knobs[id(cv)] = self.knobs[id(r)]
            self._seed(cv)

    # ---- reshape groups and defaults ------------------------------------------------------
    def _roles(self, v: Value, dims) -> list[str | None]:
        return [self.cls.role_of(self.var(v, d)) for d in dims]

    def _reshape_step(self, op: Op, gi, gj) -> bool | None:
        """Try to settle one split/merge group: True settled, None still open."""
        src, dst = op.operand(0), op.result
        if len(gi) != 1 and len(gj) != 1:
            return False
        one, d1, many, dims = (src, gi[0], dst, gj) if len(gi) == 1 else (dst, gj[0], src, gi)
        r1 = self.cls.role_of(self.var(one, d1))
        rm = self._roles(many, dims)
        if r1 is None:
            if any(r is None for r in rm):
                return None
            merged = merge_roles(rm)
            return merged is not None and self.cls.require(self.var(one, d1), merged)
        want = split_roles(r1, [many.shape[d] for d in dims], self.partitions)
        if any(r is not None and r != w for r, w in zip(rm, want)):
            return merge_roles(rm) == r1 if None not in rm else False
        self.cls.begin()  # dims of ``many`` may share a class: all of them fit, or none
        if all(self.cls.require(self.var(many, d), w) for d, w in zip(dims, want)):
            self.cls.commit()
            return True
        self.cls.rollback()
        return False

    def _propagate_reshapes(self) -> None:
        changed = True
        while changed:
            changed = False
            still = []
            for op, gi, gj in self.pending:
                done = self._reshape_step(op, gi, gj)
                if done is None:
                    still.append((op, gi, gj))
                    continue
                changed = True
                if not done and op not in self.analysis.boundaries:
                    self.analysis.boundaries.append(op)
            self.pending = still

    def _default(self, v: Value) -> None:
        """Give v's dims left free their default roles (policy.py, shared with the lowering)."""
        roles = self._roles(v, range(v.ndim))
        free = [v.shape[d] for d in range(v.ndim) if self.cls.role_of(self.var(v, d)) is None]
        policy = DefaultRoles(self.partitions, "F" in roles, "P" in roles, free)
        for d in range(v.ndim - 1, -1, -1):
            if self.cls.role_of(self.var(v, d)) is None:
                self.cls.require(self.var(v, d), policy.next(v.shape[d]))

    def _tile(self, v: Value, roles: tuple[str, ...], knobs: dict[int, int]) -> int:
        p = [d for d, r in enumerate(roles) if r == "P"]
        if not p:
            return 1
        rows = tile_rows([v.shape[d] for d in p], self.partitions)
        knob = knobs.get(self.cls.find(self.var(v, p[0])))
        return min(knob, rows) if knob is not None else rows

    # ---- driver -----------------------------------------------------------------------------
    def solve(self) -> LayoutAnalysis:
        for v in self.graph.inputs:
            self.register(v)
            self._seed(v)
        for op in list(self.graph.body):
            if not isinstance(op, ReturnOp):
                self._visit(op)
        for v in self.values:
            self._propagate_reshapes()
            if any(r is None for r in self._roles(v, range(v.ndim))):
                self._default(v)
        self._propagate_reshapes()
        # roots move as classes merge
        named = {self.cls.find(var): (name, t) for var, t, name in self.tile_knobs}
        knobs = {root: t for root, (_, t) in named.items()}
        for v in self.values:
            roles = tuple(self._roles(v, range(v.ndim)))
            self.analysis.roles[v] = roles
            self.analysis.partition_tile[v] = self._tile(v, roles, knobs)
            p = [d for d, r in enumerate(roles) if r == "P"]
            if p and self.cls.find(self.var(v, p[0])) in named:
                self.analysis.tile_knobs[v] = named[self.cls.find(self.var(v, p[0]))]
        self._drop_noop_conversions()
        return self.analysis

    def _drop_noop_conversions(self) -> None:
        """Remove soft conversions whose source has the same roles and tile as their result."""
        a = self.analysis
        for conv in self.soft_conversions:
            src, dst = conv.operand(0), conv.result
            if a.roles[src] != a.roles[dst] or a.partition_tile[src] != a.partition_tile[dst]:
                continue
            if dst in a.tile_knobs:
                continue
            dst.replace_all_uses_with(src)
            conv.erase()
            a.conversions.remove(conv)
            del a.roles[dst], a.partition_tile[dst]


def solve_layout(graph: Graph, partitions: int, knobs: Mapping | None = None) -> LayoutAnalysis:
    """Solve the layout of ``graph`` (inserting conversions where users disagree)."""
    return LayoutSolver(graph, partitions, knobs).solve()
