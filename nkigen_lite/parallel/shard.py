"""Megatron-style sharding: ``shard(graph, world, plan)`` -> one graph per rank.

Every value of the graph gets a distribution on each rank: replicated (``None``: the whole
value), sharded along an axis (an int: rank r holds block r of ``world`` equal blocks) or
partial (``PARTIAL``: the value is the sum over ranks). Inputs are distributed as the plan says;
each op's rule (``_RULES``) picks its result's distribution from its operands' and inserts the
collectives it needs; an op without a rule that fits gathers its operands (all_gather /
all_reduce) and runs replicated. Outputs are made replicated, so every rank returns the whole
result, unless the plan names an output with an axis: then it stays sharded on that axis.
Column-parallel weights give sharded activations, a row-parallel matmul on them gives a
partial sum, which is all-reduced where a non-linear op or a replicated operand meets it.

When the operands of an elementwise op or a batched matmul are sharded on different axes, the
largest sharded operand keeps its axis and the others are redistributed to it (``conform``):
a replicated operand is cut to the rank's block, a partial one reduce-scattered, one sharded on
another axis exchanged by all_to_all, and one that broadcasts along the axis gathered whole.
A sum over the sharded axis gives a partial sum. This is what expert parallelism needs (experts
sharded, tokens sharded: parallel/moe_ep.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..ir.errors import BuildError
from ..ir.graph import Graph, ReturnOp
from ..ir.traits import ExplicitResultTypes
from ..tensor import ops as T
from ..tensor.builder import Builder
from .collective_ops import CollectiveOp

PARTIAL = "partial"
SPECS = ("replicated", "column", "row")


def _spec_axis(name: str, spec, rank: int):
    """The sharded axis a plan entry means for an input of ``rank`` (None: replicated)."""
    if spec == "replicated":
        return None
    if spec == "column":
        return rank - 1
    if spec == "row":
        if rank < 2:
            raise BuildError(f"shard: input {name!r} has rank {rank}; row-parallel needs rank >= 2")
        return rank - 2
    if isinstance(spec, int) and not isinstance(spec, bool) and -rank <= spec < rank:
        return spec % rank
    raise BuildError(
        f"shard: plan entry {name!r}: {spec!r} is not one of {SPECS} or an axis of its rank-{rank} input"
    )


@dataclass
class ShardedGraph:
    """The result of ``shard``: ``graphs[r]`` is rank r's graph; ``specs`` maps each input name
    to its sharded axis (None: replicated); ``params`` are the plan's input names;
    ``out_specs`` maps each output name to the axis it stays sharded on (None: replicated)."""

    graphs: list[Graph]
    world: int
    specs: dict[str, int | None]
    params: tuple[str, ...]
    out_specs: dict[str, int | None] = field(default_factory=dict)

    def gather_outputs(self, outs_per_rank: Sequence[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
        """The whole graph's outputs from the ranks' (``run_ranks`` results): sharded outputs
        concatenated along their axis in rank order, replicated ones taken from rank 0."""
        if len(outs_per_rank) != self.world:
            raise BuildError(
                f"gather_outputs: expected {self.world} ranks' outputs, got {len(outs_per_rank)}"
            )
        out = {}
        for name in outs_per_rank[0]:
            axis = self.out_specs.get(name)
            parts = [np.asarray(o[name]) for o in outs_per_rank]
            out[name] = parts[0] if axis is None else np.concatenate(parts, axis)
        return out

    def split_inputs(self, inputs: Mapping[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
        """The whole graph's inputs cut into each rank's inputs."""
        out = []
        for r in range(self.world):
            d = {}
            for name, a in inputs.items():
                axis = self.specs.get(name)
                d[name] = a if axis is None else np.split(np.asarray(a), self.world, axis)[r]
            out.append(d)
        return out

    def comm_bytes(self, rank: int = 0) -> int:
        """Bytes rank ``rank`` sends in its collectives (ring algorithms)."""
        return sum(op.comm_bytes() for op in self.graphs[rank].walk() if isinstance(op, CollectiveOp))

    def collectives(self, rank: int = 0) -> list[str]:
        """The collectives of rank ``rank``'s graph with their operand types, in order."""
        return [
            f"{op.name} {op.operands[0].type}"
            for op in self.graphs[rank].walk()
            if isinstance(op, CollectiveOp)
        ]

    def param_bytes(self, rank: int = 0) -> int:
        """Bytes of the plan's inputs (the parameters) rank ``rank`` holds."""
        g = self.graphs[rank]
        return sum(g.input(n).type.nbytes for n in self.params)


class _Sharder:
    """Builds rank ``rank``'s graph."""

    def __init__(self, graph: Graph, world: int, rank: int, specs: dict, out_specs: dict):
        self.g, self.world, self.rank, self.specs = graph, world, rank, specs
        self.out_specs = out_specs
        self.b = Builder(f"{graph.name}_rank{rank}")
        self.env: dict = {}  # old value -> (new value, distribution)
        self.rep_cache: dict = {}
        self.conform_cache: dict = {}
        self.want = _wanted_axes(graph, out_specs)

    # ---- helpers -------------------------------------------------------------------------------
    def local_shape(self, shape, axis):
        s = list(shape)
        if axis is not None:
            s[axis] //= self.world
        return tuple(s)

    def replicated(self, old):
        """The whole value of ``old`` on this rank (gathered or all-reduced once, then reused)."""
        v, d = self.env[old]
        if d is None:
            return v
        if old not in self.rep_cache:
            if d == PARTIAL:
                self.rep_cache[old] = self.b.all_reduce(v, world=self.world)
            else:
                self.rep_cache[old] = self.b.all_gather(v, d, world=self.world)
        return self.rep_cache[old]

    def block(self, v, axis):
        """This rank's block of the replicated value ``v`` along ``axis``."""
        n = v.shape[axis] // self.world
        starts = [0] * v.ndim
        stops = list(v.shape)
        starts[axis], stops[axis] = self.rank * n, (self.rank + 1) * n
        return self.b.emit(
            T.SliceOp, [v], {"starts": tuple(starts), "stops": tuple(stops), "strides": (1,) * v.ndim}
        )

    def conform(self, old, pos):
        """``old``'s value on this rank sharded along its axis ``pos`` (None, or an axis it
        broadcasts along (size 1): the whole value). Redistributes once, then reuses."""
        v, d = self.env[old]
        if pos is None or old.type.shape[pos] == 1:
            return self.replicated(old)
        if d == pos:
            return v
        if old.type.shape[pos] % self.world:
            return None
        if d is None:
            return self.block(v, pos)
        key = (old, pos)
        if key not in self.conform_cache:
            if d == PARTIAL:
                self.conform_cache[key] = self.b.reduce_scatter(v, pos, world=self.world)
            else:
                self.conform_cache[key] = self.b.all_to_all(v, pos, d, world=self.world)
        return self.conform_cache[key]

    def conformed(self, op, axis, out_rank, positions=None):
        """Every operand of ``op`` conformed to ``axis`` of its rank-``out_rank`` result
        (broadcast-aligned unless ``positions`` gives each operand's axis); None when one cannot
        be (the axis does not divide)."""
        out = []
        for i, old in enumerate(op.operands):
            pos = axis - (out_rank - old.type.rank) if positions is None else positions[i]
            v = self.conform(old, pos if pos is not None and pos >= 0 else None)
            if v is None:
                return None
            out.append(v)
        return out

    def anchor(self, op, out_rank, allowed=None):
        """The result axis of the largest operand sharded on an axis (ties: the first such
        operand), or None; ``allowed`` limits the result axes considered."""
        best = None
        for old in op.operands:
            d = self.env[old][1]
            if not isinstance(d, int):
                continue
            axis = out_rank - old.type.rank + d
            if (allowed is None or axis in allowed) and (best is None or old.type.nbytes > best[0]):
                best = (old.type.nbytes, axis)
        return None if best is None else best[1]

    def emit(self, op, operands, attrs=None):
        types = [op.results[0].type] if ExplicitResultTypes in type(op).traits else None
        return self.b.emit(
            type(op),
            operands,
            dict(op.attrs) if attrs is None else attrs,
            types,
            hint=op.results[0].name_hint,
        )

    def fallback(self, op):
        return self.emit(op, [self.replicated(v) for v in op.operands]), None

    def aligned(self, op, axis, out_rank):
        """Operands brought to ``axis`` of a rank-``out_rank`` result (broadcast-aligned):
        sharded ones as they are, replicated ones cut to this rank's block where they span the
        axis; None when an operand is sharded elsewhere or partial."""
        out = []
        for old in op.operands:
            v, d = self.env[old]
            pos = axis - (out_rank - old.type.rank)
            if d == PARTIAL or (d is not None and d != pos):
                return None
            if d is None and pos >= 0 and old.type.shape[pos] != 1:
                v = self.block(v, pos)
            out.append(v)
        return out

    # ---- rules ---------------------------------------------------------------------------------
    def elementwise(self, op):
        dists = [self.env[v][1] for v in op.operands]
        if isinstance(op, (T.AddOp, T.SubOp)) and all(d == PARTIAL for d in dists):
            return self.emit(op, [self.env[v][0] for v in op.operands]), PARTIAL
        if isinstance(op, T.MulOp) and len(dists) == 2 and PARTIAL in dists and None in dists:
            return self.emit(op, [self.env[v][0] for v in op.operands]), PARTIAL  # linear
        if isinstance(op, T.CastOp) and dists == [PARTIAL] and _widening(op):
            return self.emit(op, [self.env[op.operands[0]][0]]), PARTIAL  # exact
        k = op.results[0].type.rank
        axes = {k - v.type.rank + d for v, d in zip(op.operands, dists) if isinstance(d, int)}
        if len(axes) == 1 and PARTIAL not in dists:
            (axis,) = axes
            ops_ = self.aligned(op, axis, k)
            if ops_ is not None:
                return self.emit(op, ops_), axis
        # operands disagree (or a partial meets a non-linear op): the output's wanted axis, else
        # the largest sharded operand's, and every operand redistributed to it
        axis = self.want.get(op.results[0], self.anchor(op, k))
        if axis is not None and op.results[0].type.shape[axis] % self.world == 0:
            ops_ = self.conformed(op, axis, k)
            if ops_ is not None:
                return self.emit(op, ops_), axis
        return self.fallback(op)

    def matmul(self, op):
        (a, da), (b, db) = (self.env[v] for v in op.operands)
        ra, rb = (v.type.rank for v in op.operands)
        k = op.results[0].type.rank
        if ra < 2 or rb < 2 or PARTIAL in (da, db):
            return self.fallback(op)
        if da is None and db is None:
            return self.emit(op, [a, b]), None
        if da == ra - 1 or db == rb - 2:  # contraction dim: partial sums
            a = a if da == ra - 1 else (self.block(a, ra - 1) if da is None else None)
            b = b if db == rb - 2 else (self.block(b, rb - 2) if db is None else None)
            if a is None or b is None:
                return self.fallback(op)
            return self.emit(op, [a, b]), PARTIAL
        if da is None and db == rb - 1:
            return self.emit(op, [a, b]), k - 1
        if da == ra - 2 and db is None:
            return self.emit(op, [a, b]), k - 2
        axis = k - ra + da if da is not None else k - rb + db  # a batch dim
        ops_ = self.aligned(op, axis, k) if axis < k - 2 else None
        if ops_ is None:
            # operands sharded on different axes: the largest one sharded on a batch axis keeps
            # it, the other is redistributed (gathered whole where it broadcasts along it)
            axis = self.anchor(op, k, allowed=range(k - 2))
            if axis is not None:
                ops_ = self.conformed(op, axis, k)
        if ops_ is None:
            return self.fallback(op)
        return self.emit(op, ops_), axis

    def reshape(self, op):
        v, d = self.env[op.operands[0]]
        shape = op.attrs["shape"]
        if d is None or d == PARTIAL:
            return self.emit(op, [v]), d
        prefix = int(np.prod(op.operands[0].type.shape[:d]))
        for j in range(len(shape)):
            if int(np.prod(shape[:j])) == prefix and shape[j] % self.world == 0 and shape[j] > 1:
                return self.emit(op, [v], {"shape": self.local_shape(shape, j)}), j
        return self.fallback(op)

    def transpose(self, op):
        v, d = self.env[op.operands[0]]
        perm = op.attrs["perm"]
        return self.emit(op, [v]), (d if d is None or d == PARTIAL else perm.index(d))

    def reduce(self, op):
        v, d = self.env[op.operands[0]]
        axes = op.attrs["axes"]
        if d == PARTIAL and op.attrs["kind"] == "sum":
            return self.emit(op, [v]), PARTIAL  # a sum of partial sums
        if isinstance(d, int) and d in axes and op.attrs["kind"] == "sum":
            return self.emit(op, [v]), PARTIAL  # each rank sums its block: a partial sum
        if not isinstance(d, int) or d in axes:
            return self.fallback(op)
        return self.emit(op, [v]), (d if op.attrs["keepdims"] else d - sum(a < d for a in axes))

    def slice(self, op):
        v, d = self.env[op.operands[0]]
        a = op.attrs
        if d is None or d == PARTIAL:
            return self.emit(op, [v]), d
        n = op.operands[0].type.shape[d]
        if (a["starts"][d], a["stops"][d], a["strides"][d]) != (0, n, 1):
            return self.fallback(op)
        stops = list(a["stops"])
        stops[d] = n // self.world
        return self.emit(op, [v], {**a, "stops": tuple(stops)}), d

    def broadcast_to(self, op):
        v, d = self.env[op.operands[0]]
        if d is None or d == PARTIAL:
            return self.emit(op, [v]), d
        k = op.results[0].type.rank
        axis = k - op.operands[0].type.rank + d
        return self.emit(op, [v], {"shape": self.local_shape(op.attrs["shape"], axis)}), axis

    def concat(self, op):
        dists = [self.env[v][1] for v in op.operands]
        axes = {d for d in dists if isinstance(d, int)}
        if len(axes) == 1 and PARTIAL not in dists and op.attrs["axis"] not in axes:
            (axis,) = axes
            ops_ = self.aligned(op, axis, op.results[0].type.rank)
            if ops_ is not None:
                return self.emit(op, ops_), axis
        return self.fallback(op)

    def gather_rows(self, op):
        """Rows of a table sharded along a row axis (d >= 1) picked by replicated ids: each rank
        gathers its block of every selected row; the result is sharded on that axis."""
        (t, dt), (ids, di) = (self.env[v] for v in op.operands)
        if isinstance(dt, int) and dt >= 1 and di is None:
            return self.emit(op, [t, ids]), op.operands[1].type.rank + dt - 1
        return self.fallback(op)

    def one_hot(self, op):
        """One-hot rows of sharded ids are sharded the same way (the new axis is last)."""
        v, d = self.env[op.operands[0]]
        if isinstance(d, int):
            return self.emit(op, [v]), d
        return self.fallback(op)

    def multi(self, op) -> None:
        """An op with several results (topk): run on whole operands, results replicated; a topk
        of an operand sharded on another axis than its own runs on the block, results sharded."""
        types = [r.type for r in op.results] if ExplicitResultTypes in type(op).traits else None
        v, d = self.env[op.operands[0]]
        if isinstance(op, T.TopkOp) and isinstance(d, int) and d != op.attrs["axis"]:
            new = T.TopkOp([v], dict(op.attrs))
            self.b.graph.body.append(new)
            for old, r in zip(op.results, new.results):
                r.name_hint, r._builder = old.name_hint, self.b
                self.env[old] = (r, d)
            return
        new = type(op)([self.replicated(v) for v in op.operands], dict(op.attrs), types)
        self.b.graph.body.append(new)
        for old, r in zip(op.results, new.results):
            r.name_hint, r._builder = old.name_hint, self.b
            self.env[old] = (r, None)

    def run(self) -> Graph:
        for name, old in zip(self.g.input_names, self.g.inputs):
            axis = self.specs.get(name)
            t = old.type
            self.env[old] = (self.b.add_input(name, self.local_shape(t.shape, axis), t.dtype), axis)
        for op in self.g.body:
            if isinstance(op, ReturnOp):
                continue
            if isinstance(op, CollectiveOp):
                raise BuildError(f"shard: graph @{self.g.name} already contains {op.name}")
            if len(op.results) > 1:
                self.multi(op)
                continue
            rule = next((r for cls, r in _RULES if isinstance(op, cls)), _Sharder.fallback)
            self.env[op.results[0]] = rule(self, op)
        self.b.set_outputs({n: self.conform(v, self.out_specs.get(n)) for n, v in self.g.outputs.items()})
        return self.b.graph


_RULES = (
    ((T.UnaryOp, T.BinaryOp, T.WhereOp, T.CastOp), _Sharder.elementwise),
    (T.MatmulOp, _Sharder.matmul),
    (T.ReshapeOp, _Sharder.reshape),
    (T.TransposeOp, _Sharder.transpose),
    (T.ReduceOp, _Sharder.reduce),
    (T.SliceOp, _Sharder.slice),
    (T.BroadcastToOp, _Sharder.broadcast_to),
    (T.ConcatOp, _Sharder.concat),
    (T.GatherRowsOp, _Sharder.gather_rows),
    (T.OneHotOp, _Sharder.one_hot),
)


def _wanted_axes(graph: Graph, out_specs: dict) -> dict:
    """Values whose only use is (through casts and unary ops) an output the plan keeps sharded:
    value -> that axis, so a partial sum there is reduce-scattered, not all-reduced."""
    uses: dict = {}
    for op in graph.body:
        for v in op.operands:
            uses[v] = uses.get(v, 0) + 1
    want = {}
    for name, v in graph.outputs.items():
        if out_specs.get(name) is not None:
            want[v] = out_specs[name]
    for op in reversed(graph.body):
        if isinstance(op, (T.UnaryOp, T.CastOp)) and op.results[0] in want:
            (x,) = op.operands
            if uses.get(x) == 1 and x.type.shape == op.results[0].type.shape:
                want[x] = want[op.results[0]]
    return want


def _widening(op) -> bool:
    """A float cast that represents every value of its operand exactly (bf16 -> f32, f32 -> f32)."""
    src, dst = op.operands[0].type.dtype, op.results[0].type.dtype
    return src.is_float and dst.is_float and (src == dst or (dst.name == "f32" and src.itemsize <= 2))


def shard(graph: Graph, world: int, plan: Mapping[str, object]) -> ShardedGraph:
    """Split ``graph`` into ``world`` rank graphs following ``plan``: ``{input name: spec}``
    with spec ``"column"`` (shard the last axis: column-parallel weight), ``"row"`` (shard the
    second-to-last axis: row-parallel weight), ``"replicated"`` or an axis. Inputs not in the
    plan are replicated activations; the plan's inputs count as parameters. The plan may also
    name an output with a spec: that output stays sharded on the rank (``gather_outputs``
    reassembles it); outputs not in the plan are replicated."""
    if isinstance(world, bool) or not isinstance(world, int) or world < 1:
        raise BuildError(f"shard: world must be a positive int, got {world!r}")
    names = graph.input_names
    outputs = tuple(graph.outputs)
    unknown = [n for n in plan if n not in names and n not in outputs]
    if unknown:
        raise BuildError(
            f"shard: plan names {unknown}, which are not inputs of @{graph.name} (inputs: {names})"
            f" nor outputs (outputs: {list(outputs)})"
        )
    both = [n for n in plan if n in names and n in outputs]
    if both:
        raise BuildError(f"shard: plan names {both}, both an input and an output of @{graph.name}")
    specs, out_specs = {}, {}
    for kind, pool, types, dest in (
        ("input", names, lambda n: graph.input(n).type, specs),
        ("output", outputs, lambda n: graph.outputs[n].type, out_specs),
    ):
        for n in pool:
            t = types(n)
            axis = _spec_axis(n, plan.get(n, "replicated"), t.rank)
            if axis is not None and t.shape[axis] % world:
                raise BuildError(
                    f"shard: {kind} {n!r} {t}: axis {axis} of size {t.shape[axis]} is not "
                    f"divisible by world {world}"
                )
            dest[n] = axis
    graphs = [_Sharder(graph, world, r, specs, out_specs).run() for r in range(world)]
    params = tuple(n for n in plan if n in names)
    return ShardedGraph(graphs, world, specs, params, out_specs)
