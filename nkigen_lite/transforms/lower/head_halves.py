"""Per-head element-wise chains of a straight-line front split into two halves of the heads.

A decoder layer's front at one row tile (Qwen3 at seq 128) ends in a chain of whole-tile
instructions over ``[rows, heads, D]`` tiles — the per-head RMS norms of q and k (square, sum,
rsqrt, two multiplies) and RoPE (four multiplies, a subtract and an add per tensor) — each
instruction waiting for the one before it on another engine, so one engine works at a time
while the attention waits for the whole chain. Here every such instruction at top level is
replaced by two, each on half of the heads (dim 1 of every access), the halves adjacent in
program order: while one engine runs the second half of an instruction, the next engine
already runs the first half of the next one (a two-stage software pipeline through the chain).
The second half of a ``tensor_tensor`` may run on the other of VectorE / GpSimd, so the two
halves of the norms' and RoPE's multiplies run at the same time.

A tile is split into two tiles of half the heads when every instruction touching it is split
and reads or writes all of it: the scheduler (perf/schedule.py) tracks dependencies per
allocation, so a half reading one tile waits only for that half's writer. Tiles read by
anything else (the projections' results, q and k as stored or kept) stay whole and are written
or read by the halves in place. Only instructions whose accesses all have rank >= 3 and span
the same number of heads H (even) in dim 1 — at unit stride or broadcast (stride 0), per-row
columns ``[P, 1]`` passed whole — and that reduce over no heads are split; the same
instructions run on the same elements, so results are bit for bit those of the unsplit kernel.

Only in kernels with matmuls (a decoder layer's stages; an element-wise kernel such as RoPE
alone is list-scheduled with its engines chosen by straight_order.py instead), of any size:
the pass schedules the kernel three times (as it is, and once per try below), work linear in
it. Kept only when the scheduled time drops (tried with the second halves on their instructions'
engines and with the ``tensor_tensor`` ones swapped to the other engine, the shorter kept).
Once limited to ``engine_balance.MAX_STAGED_INSTRUCTIONS``, which left the layer at seq 2048
(16 straight row tiles) unsplit; with the halves' per-head runs interleaved (head_columns.py)
it gains there too (Qwen3-0.6B layer 1,542.2 -> 1,525.1 µs).
"""

from __future__ import annotations

from ...ir.graph import Graph
from ...nki.access import pack
from ...nki.ops import (
    ActivationOp,
    AllocOp,
    DeallocOp,
    NkiOp,
    TensorReduceOp,
    TensorScalarOp,
    TensorTensorOp,
)
from ...nki.target import Target
from ...nki.types import Access, DimSlice, TileType
from .engine_balance import ScheduleOracle, candidates, elementwise_kernel

SPLIT = (ActivationOp, TensorTensorOp, TensorScalarOp, TensorReduceOp)
HALVES = 2
_OTHER = {"vector": "gpsimd", "gpsimd": "vector"}


def _column(acc: Access) -> bool:
    """A per-row column ``[P, 1]`` (a bias, scale or scalar operand), passed whole."""
    return len(acc.dims) == 2 and acc.dims[1].size == 1


def heads_of(op) -> int | None:
    """The heads H an instruction spans in dim 1 of every (non-column) access, when it may be
    split in halves there (module docstring); else None."""
    if not isinstance(op, SPLIT) or op.parent is None:
        return None
    if isinstance(op, ActivationOp) and op.attrs["reduce_res"] is not None:
        return None
    if isinstance(op, TensorReduceOp) and 1 in op.attrs["axis"]:
        return None
    heads = set()
    for name, _ in op.access_attrs():
        acc = op.access(name)
        if acc is None:
            continue
        if _column(acc) and name not in op.writes:
            continue
        if len(acc.dims) < 3 or not isinstance(acc.tensor.type, TileType):
            return None
        d = acc.dims[1]
        if d.offset.terms or d.stride not in (0, 1):
            return None
        heads.add(d.size)
    if len(heads) != 1:
        return None
    h = heads.pop()
    return h if h >= HALVES and h % HALVES == 0 else None


def _whole_dim1(acc: Access) -> bool:
    d = acc.dims[1]
    return d.stride == 1 and not d.offset.terms and d.offset.const == 0 and d.size == acc.tensor.type.shape[1]


def _split_tiles(block, ops: set) -> list:
    """Top-level tiles every instruction touching which is in ``ops`` and reads or writes all
    of its heads (their deallocations aside), in program order."""
    out = []
    for op in block:
        if not isinstance(op, AllocOp) or not isinstance(op.result.type, TileType):
            continue
        t = op.result
        if len(t.type.shape) < 3 or t.type.shape[1] % HALVES:
            continue
        users = [u.op for u in t.uses if not isinstance(u.op, DeallocOp)]
        if not users or any(u not in ops for u in users):
            continue
        if all(_whole_dim1(u.access(n)) for u in users for n, _ in u.access_attrs() if _touches(u, n, t)):
            out.append(t)
    return out


def _touches(op, name: str, t) -> bool:
    acc = op.access(name)
    return acc is not None and acc.tensor is t


def _half_access(acc: Access, k: int, heads: int, halves: dict) -> Access:
    if _column(acc) and acc.tensor not in halves:
        return acc
    d = acc.dims[1]
    n = heads // HALVES
    if acc.tensor in halves:
        return Access(halves[acc.tensor][k], (acc.dims[0], DimSlice(0, n, 1)) + acc.dims[2:])
    return Access(
        acc.tensor, (acc.dims[0], DimSlice(d.offset + k * n * d.stride, n, d.stride)) + acc.dims[2:]
    )


def _rebuild(op, accesses: dict, engine: str):
    items = []
    for a in op.attr_spec:
        if a.name == "engine":
            items.append((a.name, engine))
        elif a.name in accesses:
            items.append((a.name, accesses[a.name]))
        else:
            items.append((a.name, op.access(a.name) if op.access(a.name) is not None else op.attrs[a.name]))
    operands, attrs = pack(items)
    new = type(op)(operands, attrs)
    new.loc = op.loc
    return new


def _apply(block, ops: list, target: Target, swap: bool) -> tuple[list, list]:
    """Split ``ops`` (and the tiles only they touch) in place; returns (new ops, removed ops)."""
    chosen = set(ops)
    tiles = _split_tiles(block, chosen)
    new, removed = [], []
    halves: dict = {}
    for t in tiles:
        al = t.defining_op
        shape = t.type.shape
        halves[t] = []
        for k in range(HALVES):
            a = AllocOp(
                [],
                dict(al.attrs),
                [TileType((shape[0], shape[1] // HALVES) + shape[2:], t.type.dtype, t.type.space)],
            )
            a.result.name_hint = f"{t.name_hint or 't'}_h{k}"
            a.loc = al.loc
            block.insert_before(al, a)
            new.append(a)
            halves[t].append(a.result)
    for op in list(block):
        if isinstance(op, DeallocOp) and op.operand(0) in halves:
            for h in halves[op.operand(0)]:
                d = DeallocOp([h])
                d.loc = op.loc
                block.insert_before(op, d)
                new.append(d)
            block.remove(op)
            removed.append(op)
        elif op in chosen:
            heads = heads_of(op)
            for k in range(HALVES):
                accs = {
                    n: _half_access(op.access(n), k, heads, halves)
                    for n, _ in op.access_attrs()
                    if op.access(n) is not None
                }
                engine = op.engine
                if (
                    swap
                    and k
                    and isinstance(op, TensorTensorOp)
                    and _OTHER.get(engine) in candidates(op, target)
                ):
                    engine = _OTHER[engine]
                h = _rebuild(op, accs, engine)
                block.insert_before(op, h)
                new.append(h)
            block.remove(op)
            removed.append(op)
    for t in tiles:
        block.remove(t.defining_op)
        removed.append(t.defining_op)
    return new, removed


def _undo(block, before: list, new: list) -> None:
    """Erase the ``new`` ops of ``_apply`` and put back the program ``before`` listed."""
    for op in reversed(new):
        if not isinstance(op, AllocOp):
            op.erase()
    for op in new:
        if isinstance(op, AllocOp):
            op.erase()
    for op in list(block):
        block.remove(op)
    for op in before:
        block.append(op)


def _commit(removed: list) -> None:
    """Drop the uses of the ops ``_apply`` took out of the program (they are gone for good)."""
    for op in removed:
        op.drop_operand_uses()


def split_head_chains(graph: Graph, target: Target) -> bool:
    """Split the top-level per-head instructions of ``graph`` in halves of the heads (module
    docstring) when that shortens its scheduled time; True when it did."""
    block = graph.body
    instrs = [op for op in graph.body.walk() if isinstance(op, NkiOp)]
    if elementwise_kernel(instrs):
        return False
    ops = [op for op in block if heads_of(op) is not None]
    if not ops:
        return False
    before = list(block)
    best = ScheduleOracle(graph, target).makespan()
    choice = None
    for swap in (False, True):
        new, removed = _apply(block, ops, target, swap)
        t = ScheduleOracle(graph, target).makespan()
        _undo(block, before, new)
        if t < best:
            best, choice = t, swap
    if choice is None:
        return False
    _, removed = _apply(block, ops, target, choice)
    _commit(removed)
    return True
