"""Software pipelining of a row loop in two stages: the row statistics of tile t+1 are issued
before the normalisation of tile t.

Every engine runs its instructions in program order. A row-normalising loop (layernorm,
rmsnorm, softmax) is per tile a chain across engines — load, row statistics into per-partition
columns (sum, mean, variance, max), then full-tile passes that read them (normalise, scale,
shift) and the store — and in program order each engine's instructions of tile t+1 sit behind
its instructions of tile t, so the engines take turns waiting on each other. Here the body is
cut after its last instruction that writes a per-partition column (a (P, 1) tile): stage 1 is
the load and the statistics, stage 2 the rest. The loop then runs

    S1(0); for t: S1(t+1), S2(t)

so every engine meets tile t+1's statistics before tile t's normalisation (a modulo schedule
with a stage offset of one). The tiles stage 1 writes and stage 2 reads (the loaded tile, the
statistics columns) cross from one iteration to the next; they get ``U = 3`` buffers allocated
before the loop, tile t in buffer ``t mod U``, and the loop body holds ``U`` consecutive
iterations so every buffer is named statically (modulo variable expansion); the trips that do
not fill a whole body run after it, straight. Tiles local to one stage stay in the body (rotation
may give them more buffers later).

When both stages run TensorE work (stage 1 a matmul, whose K segments may be nested loops;
stage 2 transposes: the O projection, rmsnorm and xᵀ of a decoder layer's MLP prologue), the
order within a step is refined per engine: stage 1's instructions before its first matmul (tile
t+1's operand staging), then stage 2's up to its first TensorE instruction (tile t's element-wise
work, ready at once), then the rest of stage 1, then the rest of stage 2 — so VectorE finishes
tile t before it meets tile t+1's PSUM evacuations, which wait for the matmuls. Emitted
straight (``_straight_ahead``), tile t+2's stage 1 up to its first matmul goes one step further
ahead, before tile t+1's matmuls.

A loop qualifies when its body holds only allocations, deallocations, NKI instructions and
nested loops (those only in stage 1), its iterations are independent (interleave.py's
conditions), it runs at least two trips, the cut leaves a full-tile instruction (or two stores) in stage 2,
and the kernel's SBUF and PSUM still fit with the ``U`` buffers (counted as the verifier
counts them). Results are unchanged bit for bit: the same instructions run on the same data,
only their order across independent iterations changes. Runs after ``interleave_loops``
(whose loops it does not touch) and before rotating buffers are chosen.
"""

from __future__ import annotations

from ...ir.graph import Block, Graph, Region
from ...nki.ops import AllocOp, DeallocOp, DmaCopyOp, ForiLoopOp, MatmulOp, NkiOp, TransposeOp
from ...nki.target import Target
from ...nki.types import Affine, IndexType, MemorySpace, TileType
from .interleave import _candidates_of, _clone_op, _independent, _Unsupported, replace_loop_if_fits

SLOTS = 3  # buffers of a tile crossing the stages (tile t in buffer t mod SLOTS)


NARROW = 2  # free size of a per-partition statistics tile: bn_aggr's (mean, variance)


def _is_column(op) -> bool:
    """The instruction writes per-partition columns (an SBUF tile access of free size at most
    ``NARROW``: a row sum, max, or bn_aggr's mean and variance)."""
    for name in op.writes:
        acc = op.access(name)
        if acc is not None and acc.tensor.type.space is not MemorySpace.HBM and acc.free_size <= NARROW:
            if acc.tensor.type.space is MemorySpace.SBUF:
                return True
    return False


def _full_tile(op) -> bool:
    return not isinstance(op, DmaCopyOp) and any(
        op.access(name).free_size > 1 for name in op.writes if op.access(name) is not None
    )


def _cut(body: list) -> int | None:
    """Index of the first op of stage 2: after the last instruction writing a column, when a
    load comes before it and after it a full-tile instruction or at least two stores (a row
    loop storing several statistics, ``x.mean(-1), x.var(-1)``: with three DMAs a trip, the
    round-robin HW-DGE queues put the next tile's load behind a store waiting for this tile's
    statistics, so without the stage offset the loads never run ahead)."""
    last = None
    for k, op in enumerate(body):
        if isinstance(op, NkiOp) and not isinstance(op, DmaCopyOp) and _is_column(op):
            last = k
    if last is None:
        return None
    if not any(isinstance(op, DmaCopyOp) for op in body[:last]):
        return None
    rest = body[last + 1 :]
    stores = sum(isinstance(op, DmaCopyOp) for op in rest)
    if stores < 2 and not any(isinstance(op, NkiOp) and _full_tile(op) for op in rest):
        return None
    return last + 1


class _Plan:
    """The stages of one loop body and the allocations crossing them."""

    def __init__(self, loop: ForiLoopOp, cut: int):
        ops = list(loop.body)
        self.loop = loop
        self.s1, self.s2 = ops[:cut], ops[cut:]
        allocs1 = {op.result: op for op in self.s1 if isinstance(op, AllocOp)}
        used2 = set()
        for op in self.s2:
            if isinstance(op, DeallocOp):
                continue
            for name, _ in op.access_attrs() if isinstance(op, NkiOp) else ():
                used2.add(op.access(name).tensor)
        self.crossing = [op for v, op in allocs1.items() if v in used2]
        # a stage-1 tile stage 2 only deallocates is freed at the end of stage 1
        local = {v for v in allocs1 if v not in used2}
        moved = [op for op in self.s2 if isinstance(op, DeallocOp) and op.operand(0) in local]
        self.s1 += moved
        self.s2 = [op for op in self.s2 if op not in moved]


def _stage(ops: list, t: Affine, slot: dict, idx, skip_deallocs: set) -> list:
    """Clones of ``ops`` with the loop index replaced by ``t`` and the crossing tiles by their
    buffers ``slot``; allocations and deallocations of crossing tiles dropped."""
    vmap = dict(slot)
    out = []
    for op in ops:
        if isinstance(op, AllocOp) and op.result in slot:
            continue
        if isinstance(op, DeallocOp) and op.operand(0) in skip_deallocs:
            continue
        out.append(_clone_op(op, vmap, {id(idx): t}))
    return out


def _is_tensor(op) -> bool:
    return isinstance(op, (MatmulOp, TransposeOp)) and op.engine == "tensor"


def _accs(op) -> list:
    return [op.access(n) for n, _ in op.access_attrs() if op.access(n) is not None]


def _first_matmul(ops: list) -> int:
    """Index of the first matmul (or loop holding one) of ``ops``."""
    for k, op in enumerate(ops):
        if isinstance(op, MatmulOp) or (
            isinstance(op, ForiLoopOp) and any(isinstance(o, MatmulOp) for o in op.body.walk())
        ):
            return k
    return len(ops)


def _first_tensor(ops: list) -> int:
    """Index of the first TensorE instruction of ``ops`` (len(ops) when none)."""
    return next((k for k, op in enumerate(ops) if _is_tensor(op)), len(ops))


def _step(a: list, b: list) -> list:
    """S1(t+1) = ``a``, S2(t) = ``b``, in the per-engine order of the module docstring when
    both stages run TensorE work."""
    lead, head = _first_matmul(a), _first_tensor(b)
    if lead == len(a) or head == len(b):
        return a + b
    # allocations the head's instructions do not touch stay with the tail
    used = {acc.tensor for op in b[:head] if isinstance(op, NkiOp) for acc in _accs(op)}
    first = [op for op in b[:head] if not isinstance(op, AllocOp) or op.result in used]
    taken = set(map(id, first))
    rest = [op for op in b[:head] if id(op) not in taken]
    return a[:lead] + first + a[lead:] + rest + b[head:]


def _pipelined(plan: _Plan, slots: int = SLOTS) -> list:
    """The ops replacing the loop (module docstring), crossing tiles in ``slots`` buffers."""
    loop = plan.loop
    lo, step, n = loop.attrs["lower"], loop.attrs["step"], loop.trip_count
    SLOTS = slots  # noqa: N806  (the buffers of this pipeline)
    idx = loop.index
    crossing = {op.result for op in plan.crossing}
    out: list = []
    bufs = []
    for _ in range(SLOTS):
        m = {}
        for a in plan.crossing:
            new = AllocOp([], dict(a.attrs), [a.result.type])
            new.result.name_hint = a.result.name_hint
            new.loc = a.loc
            out.append(new)
            m[a.result] = new.result
        bufs.append(m)

    def s1(t: Affine, k: int) -> list:
        return _stage(plan.s1, t, bufs[k % SLOTS], idx, crossing)

    def s2(t: Affine, k: int) -> list:
        return _stage(plan.s2, t, bufs[k % SLOTS], idx, crossing)

    def stage_pair(t1: Affine, k1: int, t2: Affine, k2: int) -> list:
        return _step(s1(t1, k1), s2(t2, k2))

    out += s1(Affine.of(lo), 0)
    blocks = (n - 1) // SLOTS  # whole bodies: t = SLOTS*j + k, every S1(t+1) within the trips
    if blocks == 1:
        for k in range(SLOTS):
            out += stage_pair(Affine.of(lo + (k + 1) * step), k + 1, Affine.of(lo + k * step), k)
    elif blocks > 1:
        block = Block([IndexType()], [idx.name_hint])
        j = Affine.of(block.args[0])
        for k in range(SLOTS):
            for o in stage_pair(
                j * (SLOTS * step) + (lo + (k + 1) * step), k + 1, j * (SLOTS * step) + (lo + k * step), k
            ):
                block.append(o)
        new = ForiLoopOp([], {"lower": 0, "upper": blocks, "step": 1}, [], [Region([block])])
        new.loc = loop.loc
        out.append(new)
    rest = list(range(blocks * SLOTS, n))
    if blocks == 0 and n > 2 and _both_tensor(plan):
        s1s = [s1(Affine.of(lo + t * step), t) for t in rest[1:]]
        out += _straight_ahead(s1s, lambda t: s2(Affine.of(lo + t * step), t), n)
    else:
        out += _straight_steps(rest, n, lambda t: Affine.of(lo + t * step), stage_pair, s2)
    for m in bufs:
        for v in m.values():
            out.append(DeallocOp([v]))
    return out


def _straight_steps(ts: list, n: int, at, stage_pair, s2) -> list:
    """The steps of trips ``ts`` after the loop: S1(t+1), S2(t), and S2 of the last trip
    (``at(t)``: trip t's index)."""
    out = []
    for t in ts:
        out += stage_pair(at(t + 1), t + 1, at(t), t) if t + 1 < n else s2(at(t), t)
    return out


def _both_tensor(plan: _Plan) -> bool:
    """Stage 1 runs a matmul and stage 2 TensorE work (the MLP prologue's O projection and xᵀ)."""
    return _first_matmul(plan.s1) < len(plan.s1) and _first_tensor(plan.s2) < len(plan.s2)


def _straight_ahead(s1s: list, s2, n: int) -> list:
    """The straight steps after S1(0) when both stages run TensorE work: tile t+2's stage 1 up
    to its first matmul (its A operand's staging: Oᵀ transposes and their PSUM copies) goes
    one step further ahead, before tile t+1's matmuls and the copies after them, so VectorE
    meets tile t+2's Oᵀ copies before tile t+1's PSUM evacuation, which waits for the matmuls
    (``s1s``: stage 1 of tiles 1..n-1, ``s2(t)``: stage 2 of tile t)."""
    heads = [ops[: _first_matmul(ops)] for ops in s1s]
    tails = [ops[_first_matmul(ops) :] for ops in s1s]
    out = list(heads[0])
    for t in range(n - 1):
        b = s2(t)
        head = _first_tensor(b)
        used = {acc.tensor for op in b[:head] if isinstance(op, NkiOp) for acc in _accs(op)}
        first = [op for op in b[:head] if not isinstance(op, AllocOp) or op.result in used]
        taken = set(map(id, first))
        out += (heads[t + 1] if t + 1 < len(heads) else []) + first + tails[t]
        out += [op for op in b[:head] if id(op) not in taken] + b[head:]
    return out + s2(n - 1)


def slot_tries(n: int) -> list:
    """Buffers of the crossing tiles tried, in order, for a loop of ``n`` trips: straight code
    (at most 2 * SLOTS trips: every trip in its own buffers) first when that differs."""
    return [n, SLOTS] if n <= 2 * SLOTS and n != SLOTS else [SLOTS]


def pipeline_stages(graph: Graph, target: Target) -> int:
    """Pipeline the qualifying loops (module docstring); returns how many were transformed."""
    found: list = []
    _candidates_of(graph.body, (0, 0), found, _qualifies)
    done = 0
    for loop, sbuf, banks in found:
        cut = _cut(list(loop.body))
        plan = _Plan(loop, cut)
        for slots in slot_tries(loop.trip_count):
            try:
                ops = _pipelined(plan, slots)
            except _Unsupported:
                break
            if replace_loop_if_fits(loop, ops, sbuf, banks, target):
                done += 1
                break
    return done


def prefers_stages(loop: ForiLoopOp) -> bool:
    """``loop`` (as lowered) is left to this pipeline rather than interleaved (interleave.py):
    it qualifies, its trips are emitted straight (at most ``2 * SLOTS``) and both stages run
    TensorE work (a decoder layer's MLP prologue: the O projection, rmsnorm and xᵀ per row
    tile). Interleaving all its trips instruction by instruction issues every tile's O
    projection before tile 0's rmsnorm and xᵀ, so the MLP's first up projections wait for the
    last tile's whole chain; here tile t's stage 2 follows tile t+1's stage 1."""
    if loop.trip_count > 2 * SLOTS or not _qualifies(loop):
        return False
    return _both_tensor(_Plan(loop, _cut(list(loop.body))))


def _qualifies(loop: ForiLoopOp) -> bool:
    body = list(loop.body)
    if loop.trip_count < 2:
        return False
    if any(not isinstance(op, (AllocOp, DeallocOp, NkiOp, ForiLoopOp)) for op in body):
        return False
    if any(isinstance(op, AllocOp) and not isinstance(op.result.type, TileType) for op in body):
        return False
    cut = _cut(body)
    if cut is None or any(isinstance(op, ForiLoopOp) for op in body[cut:]):
        return False  # nested loops (a matmul's K segments) only in stage 1
    return _independent(loop)
