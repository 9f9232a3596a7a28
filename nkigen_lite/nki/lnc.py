"""Split a kernel over the physical cores of a logical NeuronCore (LNC=2): ``split_cores``.

The kernel's main top-level loop (the one with the most iterations that ``lnc`` divides) is cut
into ``lnc`` equal parts: core ``p`` runs iterations ``p·T/lnc .. (p+1)·T/lnc - 1``. The loop's
trip count becomes ``T/lnc`` and every access offset using its index ``i`` uses
``i + p·(T/lnc)·step`` instead, ``p`` being ``%pid = nki.program_id {lnc}`` (NKI:
``nl.program_id(0)``, launched as ``kernel[2]``). Everything else runs on both cores.

The split is refused (one BuildError naming the reason) unless it is race-free by construction:
only that loop writes HBM; its HBM writes move with ``i`` by at least their extent (so
iterations write disjoint windows); it writes no HBM scratch tensor (each core's private HBM
would hold half of it) and no tile allocated outside it (state carried between iterations).
"""

from __future__ import annotations

from types import MappingProxyType

from ..ir.clone import clone_graph
from ..ir.edits import edited
from ..ir.errors import BuildError
from ..ir.graph import Graph
from .access import AccessSpec, AffineSpec, pack
from .ops import AllocOp, ForiLoopOp, NkiOp, ProgramIdOp
from .types import Access, Affine, DimSlice, HbmType, TileType


def _root(v):
    op = v.defining_op
    return op.operand(0) if op is not None and op.name == "nki.hbm_view" else v


def _writes(op: NkiOp):
    for name in op.writes:
        a = op.access(name) if isinstance(op.attrs.get(name), AccessSpec) else None
        if a is not None:
            yield name, a


def _pick_loop(graph: Graph, lnc: int) -> ForiLoopOp:
    loops = [op for op in graph.body if isinstance(op, ForiLoopOp) and op.trip_count % lnc == 0]
    if not loops:
        trips = [op.trip_count for op in graph.body if isinstance(op, ForiLoopOp)]
        raise BuildError(
            f"split_cores: kernel @{graph.name} has no top-level loop whose trip count divides by "
            f"lnc {lnc} (top-level trip counts: {trips})"
        )
    return max(loops, key=lambda op: op.trip_count)


def _check(graph: Graph, loop: ForiLoopOp) -> None:
    outputs = {id(v) for v in graph.outputs.values()}
    for op in graph.body:
        if op is loop or not isinstance(op, (NkiOp, ForiLoopOp)):
            continue
        for inner in op.walk():
            if isinstance(inner, NkiOp):
                for name, a in _writes(inner):
                    if isinstance(a.tensor.type, HbmType):
                        raise BuildError(
                            f"split_cores: {inner.name} writes HBM ({name}) outside the loop being "
                            "split; both cores would write it"
                        )
    inside = {id(op) for op in loop.walk()}
    for op in loop.walk():
        if not isinstance(op, NkiOp):
            continue
        for name, a in _writes(op):
            t = a.tensor
            if isinstance(t.type, TileType) and id(t.defining_op) not in inside:
                raise BuildError(
                    f"split_cores: {op.name} writes tile {name} allocated outside the loop: the loop "
                    "carries state between iterations, which the cores cannot share"
                )
            if not isinstance(t.type, HbmType):
                continue
            root = _root(t)
            if isinstance(root.defining_op, AllocOp) and id(root) not in outputs:
                raise BuildError(
                    f"split_cores: {op.name} writes HBM scratch tensor; scratch HBM is private to a core"
                )
            step = loop.attrs["step"]
            if not any(
                abs(c * step) >= (d.size - 1) * d.stride + 1
                for d in a.dims
                for v, c in d.offset.terms
                if v is loop.index
            ):
                raise BuildError(
                    f"split_cores: {op.name} {name} does not move past its window each iteration "
                    "(iterations may write the same HBM elements)"
                )


def _shifted(a: Affine, index, pid, shift: int) -> Affine:
    c = sum(k for v, k in a.terms if v is index)
    return a + Affine(0, ((pid, c * shift),)) if c else a


def _rebuild(op: NkiOp, index, pid, shift: int) -> None:
    items = []
    for spec in op.attr_spec:
        val = op.attrs[spec.name]
        if isinstance(val, AccessSpec):
            acc = op.access(spec.name)
            dims = tuple(DimSlice(_shifted(d.offset, index, pid, shift), d.size, d.stride) for d in acc.dims)
            val = Access(acc.tensor, dims)
        elif isinstance(val, AffineSpec):
            val = _shifted(op.affine(spec.name), index, pid, shift)
        items.append((spec.name, val))
    operands, attrs = pack(items)
    new = type(op)(operands, attrs, [], [])
    new.loc = op.loc
    op.parent.insert_before(op, new)
    op.erase()


def split_cores(graph: Graph, lnc: int = 2) -> Graph:
    """A copy of the NKI kernel ``graph`` launched on ``lnc`` physical cores (see the module
    docstring); ``lnc = 1`` returns an unchanged copy."""
    if isinstance(lnc, bool) or not isinstance(lnc, int) or lnc < 1:
        raise BuildError(f"split_cores: lnc must be a positive int, got {lnc!r}")
    if any(isinstance(op, ProgramIdOp) for op in graph.body):
        raise BuildError(f"split_cores: kernel @{graph.name} is already split (it has an nki.program_id)")
    g = clone_graph(graph)
    if lnc == 1:
        return g
    loop = _pick_loop(g, lnc)
    _check(g, loop)
    per_core = loop.trip_count // lnc
    pid_op = ProgramIdOp([], {"lnc": lnc}, None, [])
    pid_op.loc = f"program id of {lnc} cores"
    g.body.prepend(pid_op)
    pid = pid_op.results[0]
    pid.name_hint = "pid"
    lo, step = loop.attrs["lower"], loop.attrs["step"]
    loop.attrs = MappingProxyType({**loop.attrs, "upper": lo + per_core * step})
    edited()
    users = [op for op in loop.walk() if isinstance(op, NkiOp) and any(v is loop.index for v in op.operands)]
    for op in users:
        _rebuild(op, loop.index, pid, per_core * step)
    g.verify()
    return g
