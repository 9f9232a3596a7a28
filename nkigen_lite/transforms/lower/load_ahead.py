"""Loads of an elementwise loop issued two iterations ahead of the instructions that read them.

The two HW-DGE queues issue DMAs in program order, taking them round robin (docs/costmodel.md).
A loop iteration of ``load x, load y, compute, store`` issues three DMAs, so every other
iteration's second load sits on a queue right behind the previous iteration's store, which
waits for that iteration's compute: tile t+1's load issues only once tile t is computed, and
its 1.9 us of issue and first-byte latency plus its transfer are exposed every iteration (x < y
at 2048x4096 f32: 298 us scheduled for 210 us of transfers). Rotating buffers do not help: the
queue, not the buffer, holds the load back.

Here a loop whose body starts with loads of kernel tensors into tiles it allocates (stage 1)
followed by instructions and stores without TensorE or PSUM work and without row reductions
(no instruction writes a per-partition column: row loops are stage_pipeline.py's) runs

    L(0) L(1); for t: L(t+2), C(t), S(t)

so a load waits at worst behind the store of tile t-1, two tiles before it is read. The loaded
tiles cross iterations: they get ``SLOTS = 3`` buffers allocated before the loop (tile t in
buffer ``t mod 3``; tile t+2's load overwrites the buffer tile t-1 was read from, by instructions
earlier in program order) and the loop body holds three consecutive iterations, so every
buffer is named statically (modulo variable expansion, as in stage_pipeline.py); the trips that
do not fill a whole body run after it, straight. The stage-2 tiles of the three copies are
distinct allocations, each one buffer (they are reused three iterations apart).

A loop qualifies when its iterations are independent (interleave.py's conditions), it runs at
least ``MIN_TRIPS`` trips and the kernel's SBUF still fits (counted as the verifier counts it).
The rewrite is kept only when the kernel's scheduled estimate (perf/schedule.py) gets shorter.
Results are unchanged bit for bit: the same instructions run on the same data, loads only move
earlier past instructions of other iterations, which never write what they read.
"""

from __future__ import annotations

from ...ir.graph import Block, Graph, Region
from ...nki.ops import AllocOp, DeallocOp, DmaCopyOp, ForiLoopOp, MatmulOp, NkiOp, TransposeOp
from ...nki.target import Target
from ...nki.types import Affine, IndexType, MemorySpace, TileType
from .engine_balance import ScheduleOracle
from .interleave import _candidates_of, _independent, drop_ops
from .rotation import _peaks
from .stage_pipeline import _is_column, _Plan, _stage

AHEAD = 2  # iterations a load is issued before its tile is read
SLOTS = AHEAD + 1  # buffers of a loaded tile
MIN_TRIPS = 4


def _is_load(op, local: set) -> bool:
    if not isinstance(op, DmaCopyOp):
        return False
    src, dst = op.access("src"), op.access("dst")
    return src.tensor.type.space is MemorySpace.HBM and dst.tensor in local


def _cut(body: list) -> int | None:
    """Index of the first op of stage 2: right after the leading run of allocations and loads
    (None without a load, or without a store after it)."""
    local = {op.result for op in body if isinstance(op, AllocOp)}
    cut = None
    for k, op in enumerate(body):
        if isinstance(op, AllocOp):
            continue
        if not _is_load(op, local):
            break
        cut = k + 1
    if cut is None:
        return None
    stores = [
        op
        for op in body[cut:]
        if isinstance(op, DmaCopyOp) and op.access("dst").tensor.type.space is MemorySpace.HBM
    ]
    return cut if stores else None


def _qualifies(loop: ForiLoopOp) -> bool:
    body = list(loop.body)
    if loop.trip_count < MIN_TRIPS:
        return False
    for op in body:
        if not isinstance(op, (AllocOp, DeallocOp, NkiOp)) or isinstance(op, (MatmulOp, TransposeOp)):
            return False
        if isinstance(op, AllocOp):
            t = op.result.type
            if not isinstance(t, TileType) or t.space is not MemorySpace.SBUF:
                return False
        elif not isinstance(op, (DeallocOp, DmaCopyOp)) and _is_column(op):
            return False  # a row reduction: row loops are stage_pipeline.py's
    return _cut(body) is not None and _independent(loop)


def _single(ops: list) -> list:
    """``ops`` with every stage-2 allocation one buffer (the body's copies alternate)."""
    out = []
    for op in ops:
        if isinstance(op, AllocOp) and op.bufs != 1:
            new = AllocOp([], {**op.attrs, "bufs": 1}, [op.result.type])
            new.loc = op.loc
            new.result.name_hint = op.result.name_hint
            op.result.replace_all_uses_with(new.result)
            op = new
        out.append(op)
    return out


def _ahead(loop: ForiLoopOp) -> list:
    """The ops replacing ``loop`` (module docstring)."""
    plan = _Plan(loop, _cut(list(loop.body)))
    lo, step, n = loop.attrs["lower"], loop.attrs["step"], loop.trip_count
    idx = loop.index
    crossing = {op.result for op in plan.crossing}
    out: list = []
    bufs = []
    for _ in range(SLOTS):
        m = {}
        for a in plan.crossing:
            new = AllocOp([], {**a.attrs, "bufs": 1}, [a.result.type])
            new.result.name_hint = a.result.name_hint
            new.loc = a.loc
            out.append(new)
            m[a.result] = new.result
        bufs.append(m)

    def s1(t: Affine, k: int) -> list:
        return _stage(plan.s1, t, bufs[k % SLOTS], idx, crossing)

    def s2(t: Affine, k: int) -> list:
        return _single(_stage(plan.s2, t, bufs[k % SLOTS], idx, crossing))

    def at(t: int) -> Affine:
        return Affine.of(lo + t * step)

    for t in range(min(AHEAD, n)):
        out += s1(at(t), t)
    blocks = (n - AHEAD) // SLOTS  # whole bodies: every L(t + AHEAD) within the trips
    if blocks < 2:
        blocks = 0
    if blocks:
        block = Block([IndexType()], [idx.name_hint])
        j = Affine.of(block.args[0])
        for k in range(SLOTS):
            for o in s1(j * (SLOTS * step) + (lo + (k + AHEAD) * step), k + AHEAD) + s2(
                j * (SLOTS * step) + (lo + k * step), k
            ):
                block.append(o)
        new = ForiLoopOp([], {"lower": 0, "upper": blocks, "step": 1}, [], [Region([block])])
        new.loc = loop.loc
        out.append(new)
    for t in range(blocks * SLOTS, n):
        out += (s1(at(t + AHEAD), t + AHEAD) if t + AHEAD < n else []) + s2(at(t), t)
    for m in bufs:
        for v in m.values():
            out.append(DeallocOp([v]))
    return out


def load_ahead(graph: Graph, target: Target) -> int:
    """Issue the loads of the qualifying loops ahead (module docstring) where the kernel's
    scheduled time drops; returns how many loops were rewritten."""
    found: list = []
    _candidates_of(graph.body, (0, 0), found, _qualifies)
    if not found:
        return 0
    oracle = ScheduleOracle(graph, target)
    best = oracle.makespan()
    done = 0
    for loop, sbuf, banks in found:
        ops = _ahead(loop)
        tmp = Block([], [])
        for o in ops:
            tmp.append(o)
        s, b = _peaks(tmp, {}, sbuf, banks)
        if s > target.sbuf_bytes_per_partition or b > target.psum_num_banks:
            drop_ops(tmp)
            continue
        parent = loop.parent
        for o in list(tmp):
            tmp.remove(o)
            parent.insert_before(loop, o)
        parent.remove(loop)
        t = oracle.makespan()
        if t < best:
            best = t
            done += 1
            drop_ops([loop])
            continue
        parent.insert_before(ops[0], loop)
        for o in ops:
            parent.remove(o)
        drop_ops(ops)
    return done
