"""Rotating buffers for tiles allocated in loop bodies (software pipelining of loops).

A tile allocated in a loop body with ``bufs = k`` uses buffer ``i mod k`` in iteration i
(``nki.alloc {bufs = k}``, docs/nki_ir.md), so the DMA that fills it for iteration i+1 need not
wait for the readers of iteration i, and the compute writing an output tile need not wait for
the previous iteration's store. Rotation never changes what a kernel computes; it reserves
``k`` times the tile's bytes (PSUM: banks) while the tile lives, so it is chosen only where the
kernel's SBUF and PSUM peaks, computed as the verifier computes them, still fit the target.

Tiles are rotated class by class, in the order that buys most overlap per byte: tiles loaded by
a DMA, tiles stored by a DMA, PSUM accumulators and transposes, other SBUF tiles, each 2 deep,
then loaded tiles 3 deep (a load issued two iterations ahead hides the DMA's fixed issue and
first-byte latency, ~1.9 us, behind compute shorter than it). Each class is tried for one
top-level loop nest at a time and kept only when the nest's peak fits, so the work is linear in
the kernel's size. PSUM tiles then rotate deeper where banks are free (psum_plan.py).
"""

from __future__ import annotations

from ...ir.graph import Block, Graph
from ...nki.ops import AllocOp, DeallocOp, DmaCopyOp, ForiLoopOp, NkiOp
from ...nki.target import Target
from ...nki.types import MemorySpace, TileType
from .psum_plan import deepen_psum_rotation

# (class, depth) in the order tried; a class's depth replaces a smaller one already given
ROTATION_STEPS = (("load", 2), ("store", 2), ("psum", 2), ("sbuf", 2), ("load", 3))


def _classify(loop: ForiLoopOp) -> dict[AllocOp, str]:
    """The rotation class of every tile allocated directly in ``loop``'s body (nested loops
    included, each for its own body)."""
    out: dict[AllocOp, str] = {}
    allocs = {
        op.result: op for op in loop.body if isinstance(op, AllocOp) and isinstance(op.result.type, TileType)
    }
    loaded, stored = set(), set()
    for op in loop.body.walk():
        if isinstance(op, DmaCopyOp):
            loaded.add(op.access("dst").tensor)
            stored.add(op.access("src").tensor)
    for v, op in allocs.items():
        if v.type.space is MemorySpace.PSUM:
            out[op] = "psum"
        elif v in loaded:
            out[op] = "load"
        elif v in stored:
            out[op] = "store"
        else:
            out[op] = "sbuf"
    for op in loop.body:
        if isinstance(op, ForiLoopOp) and op.trip_count >= 2:
            out.update(_classify(op))
    return out


def _peaks(block: Block, depth: dict, sbuf: int, banks: int) -> tuple[int, int]:
    """Peak SBUF bytes per partition and PSUM banks over ``block`` starting from the given
    live amounts, with ``depth[alloc]`` buffers per tile (the verifier's accounting)."""
    peak_s, peak_b = sbuf, banks
    owner: dict = {}
    for op in block:
        if isinstance(op, AllocOp) and isinstance(op.result.type, TileType):
            k = depth.get(op, op.bufs)
            t = op.result.type
            owner[op.result] = (t, k)
            if t.space is MemorySpace.SBUF:
                sbuf += t.bytes_per_partition * k
            else:
                banks += k
            peak_s, peak_b = max(peak_s, sbuf), max(peak_b, banks)
        elif isinstance(op, DeallocOp) and op.operand(0) in owner:
            t, k = owner.pop(op.operand(0))
            if t.space is MemorySpace.SBUF:
                sbuf -= t.bytes_per_partition * k
            else:
                banks -= k
        elif isinstance(op, ForiLoopOp):
            s, b = _peaks(op.body, depth, sbuf, banks)
            peak_s, peak_b = max(peak_s, s), max(peak_b, b)
    return peak_s, peak_b


def plan_rotation(graph: Graph, target: Target) -> int:
    """Give loop-body tiles rotating buffers where they fit (module docstring); returns how
    many allocations rotate. Run after ``insert_deallocs`` (lifetimes decide the peaks)."""
    rotated = 0
    sbuf = banks = 0
    live: dict = {}
    cap_s, cap_b = target.sbuf_bytes_per_partition, target.psum_num_banks
    for op in graph.body:
        if isinstance(op, AllocOp) and isinstance(op.result.type, TileType):
            t = op.result.type
            live[op.result] = t
            if t.space is MemorySpace.SBUF:
                sbuf += t.bytes_per_partition * op.bufs
            else:
                banks += op.bufs
        elif isinstance(op, DeallocOp) and op.operand(0) in live:
            t = live.pop(op.operand(0))
            k = op.operand(0).defining_op.bufs
            if t.space is MemorySpace.SBUF:
                sbuf -= t.bytes_per_partition * k
            else:
                banks -= k
        elif isinstance(op, ForiLoopOp) and op.trip_count >= 2:
            rotated += _rotate_nest(op, sbuf, banks, cap_s, cap_b)
    return rotated


def _rotate_nest(loop: ForiLoopOp, sbuf: int, banks: int, cap_s: int, cap_b: int) -> int:
    classes = _classify(loop)
    depth: dict[AllocOp, int] = {}
    for cls, k in ROTATION_STEPS:
        trial = dict(depth)
        for op, c in classes.items():
            if c == cls and k > trial.get(op, 1) and _worth_rotating(op):
                trial[op] = k
        if trial == depth:
            continue
        s, b = _peaks(loop.body, trial, sbuf, banks)
        if s <= cap_s and b <= cap_b:
            depth = trial
    depth = deepen_psum_rotation(loop, depth, banks, cap_b)
    for op, k in depth.items():
        if k == op.bufs:
            continue
        _set_bufs(op, k)
    return len(depth)


def _set_bufs(op: AllocOp, k: int) -> None:
    """Replace ``op`` by the same allocation with ``k`` rotating buffers."""
    new = AllocOp([], {**op.attrs, "bufs": k}, [op.result.type])
    new.loc = op.loc
    new.result.name_hint = op.result.name_hint
    op.parent.insert_before(op, new)
    op.result.replace_all_uses_with(new.result)
    op.erase()


def _worth_rotating(op: AllocOp) -> bool:
    """A tile some instruction touches (an alloc with no uses needs no second buffer)."""
    return any(isinstance(u, NkiOp) for u in op.result.users)
