"""PSUM planning by liveness: the 8 banks of a partition shared by matmul accumulators, TensorE
transposes and broadcasts, and their rotating buffers.

Every PSUM tile is at most one 2 KiB bank and takes a whole bank while it lives (``bufs = k``
takes ``k`` banks), so a matmul's accumulation group never crosses a bank. What is live is the
same program-order liveness the ``deallocs`` pass and the verifier use (a tile lives from its
``alloc`` to its ``dealloc``), so the plan has two parts:

- **Before emission** (``matmul_block_banks``): a matmul N block accumulates in one bank per
  512 fp32 columns. It takes as many banks as leave room for every PSUM tile that may be live
  beside it, each double-buffered: the block's accumulators (so the matmuls of block i+1
  overlap the evacuation of block i), the transpose tile staging an operand through PSUM, and
  the banks the enclosing code already holds.
- **After deallocs** (``deepen_psum_rotation``, run by the rotation planner): loop-body PSUM
  tiles get a third and fourth rotating buffer while the loop nest's peak of live banks, computed
  as the verifier computes it, stays within the target's banks — deeper where banks are free.
"""

from __future__ import annotations

from ...ir.graph import Block
from ...nki.ops import AllocOp, DeallocOp, ForiLoopOp
from ...nki.target import Target
from ...nki.types import MemorySpace, TileType

PSUM_DEPTH = 2  # buffers planned for each PSUM tile of a matmul loop nest (double buffering)
PSUM_MAX_DEPTH = 4  # the deepest PSUM rotation tried where banks are free


def matmul_block_banks(target: Target, n: int, *, transposes: bool, reserved: int = 0) -> int:
    """Banks of one matmul N block (one per ``psum_bank_fmax`` columns): at most the banks N
    needs, and at most what leaves room, at ``PSUM_DEPTH`` buffers each, for a transpose tile
    (when an operand is transposed on chip) and ``reserved`` banks held by enclosing code.
    At least one bank (a kernel whose other PSUM tiles leave none fails the verifier, which
    names the peak)."""
    need = -(-n // target.psum_bank_fmax)
    room = target.psum_num_banks - reserved - (PSUM_DEPTH if transposes else 0)
    return max(1, min(need, room // PSUM_DEPTH))


def psum_peak_banks(block: Block, depth: dict | None = None, live: int = 0) -> int:
    """Peak PSUM banks live at once over ``block`` (nested loops included) in program order,
    starting from ``live`` banks, with ``depth[alloc]`` buffers for the allocations given (their
    own ``bufs`` otherwise): the verifier's accounting."""
    depth = depth or {}
    peak = live
    owned: dict = {}
    for op in block:
        if isinstance(op, AllocOp) and _is_psum(op):
            k = depth.get(op, op.bufs)
            owned[op.result] = k
            live += k
            peak = max(peak, live)
        elif isinstance(op, DeallocOp) and op.operand(0) in owned:
            live -= owned.pop(op.operand(0))
        elif isinstance(op, ForiLoopOp):
            peak = max(peak, psum_peak_banks(op.body, depth, live))
    return peak


def _is_psum(op: AllocOp) -> bool:
    t = op.result.type
    return isinstance(t, TileType) and t.space is MemorySpace.PSUM


def _rotating_psum(loop: ForiLoopOp) -> list[AllocOp]:
    """PSUM tiles allocated directly in the body of ``loop`` or of a nested loop of >= 2 trips
    (the tiles that may rotate), in program order."""
    out = [op for op in loop.body if isinstance(op, AllocOp) and _is_psum(op)]
    for op in loop.body:
        if isinstance(op, ForiLoopOp) and op.trip_count >= 2:
            out.extend(_rotating_psum(op))
    return out


def deepen_psum_rotation(loop: ForiLoopOp, depth: dict, live: int, cap: int) -> dict:
    """``depth`` (alloc -> buffers, the rotation planned so far) with the PSUM tiles of ``loop``
    rotating deeper, up to ``PSUM_MAX_DEPTH``, while the nest's peak of live banks (from ``live``
    banks held outside it) stays within ``cap``. Tiles are deepened one role at a time — the
    tiles one source op allocates under one name (the accumulators of a matmul's N block, its
    transposes, a broadcast) deepen together — one buffer per round."""
    roles: dict[tuple, list[AllocOp]] = {}
    for op in _rotating_psum(loop):
        if depth.get(op, op.bufs) >= PSUM_DEPTH:  # only tiles already double-buffered deepen
            roles.setdefault((op.loc, op.result.name_hint or ""), []).append(op)
    out = dict(depth)
    for k in range(PSUM_DEPTH + 1, PSUM_MAX_DEPTH + 1):
        for ops in roles.values():
            trial = dict(out)
            for op in ops:
                trial[op] = k
            if psum_peak_banks(loop.body, trial, live) <= cap:
                out = trial
    return out
