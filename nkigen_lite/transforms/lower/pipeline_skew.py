"""A row pipeline's row tiles emitted in two skewed stages: the projections of tile t+1 are
issued before the per-head work of tile t.

Every engine runs its instructions in program order. The front of a decoder layer is, per row
tile, a chain across engines — load h, rmsnorm and xᵀ (ScalarE, VectorE, GpSimd), the q / k / v
projections (TensorE), then the per-head norms and RoPE of q and k (VectorE, GpSimd) and the
stores. In one loop body each engine's instructions of tile t+1 sit behind its instructions of
tile t, so TensorE idles while tile t's norms run and VectorE idles while tile t+1's matmuls
wait for it. Here the pipeline's participants are cut after its last matmul: stage 1 is the
members up to it, stage 2 the members after it (fusion groups and concat stores), and the row
tiles are emitted straight, without a loop:

    S1(0); S1(1), S2(0); S1(2), S2(1); ...; S2(T-1)

(a modulo schedule with a stage offset of one). Within a step, tile t+1's xᵀ is staged before
stage 2 of tile t and its projections are emitted after it: VectorE then runs tile t's norms
while TensorE runs tile t+1's matmuls, and evacuates their PSUM banks afterwards (both tiles'
accumulators at once would not fit the 8 banks). Those evacuations run on ScalarE, which the
norms leave mostly idle, so VectorE reaches tile t's norms sooner. The members before the first
matmul (the rmsnorm of h) run one tile further ahead: tile t+2's are emitted right after tile
t+1's xᵀ, before tile t's norms (``_hoist_heads``). Emitted at the start of their own step,
behind the previous step's evacuations on ScalarE and its norms on GpSimd and the SBUF bus,
they made TensorE wait for every tile's xᵀ (Qwen3-0.6B layer at seq 2048: ~10 µs of each
25 µs row tile). Each tile's values are
separate allocations, so stage 2 of tile t reads its own tile's projections while tile t+1's
are computed; the pipeline's tile table is saved after each S1 and restored for the matching
S2. Resident weights are loaded inside tile 0, right before their first matmul, so tile 0's h
load and rmsnorm are not queued behind 8 MiB of weights; per step, loads of kernel inputs go
first and the previous step's stores right after them (``_reorder_dmas``).

Used for pipelines that read values through on-chip views (pipeline_views.py: the layer's
front), over one partition-chunk loop of 2 to ``MAX_TILES`` row tiles (seq ≤ 2048); the static
instruction count grows with the number of row tiles, which that bound keeps small. The same
instructions run on the same data as in the loop (results are unchanged bit for bit).
"""

from __future__ import annotations

from ...nki.ops import AllocOp, DeallocOp, DmaCopyOp
from ...nki.types import HbmType
from .group_emit import GroupEmitter
from .matmul import MatmulEmitter

MAX_TILES = 16  # row tiles emitted straight at most
C_COPY_ENGINE = "scalar"  # evacuates the projections' PSUM banks


def skew_applies(loops: list, participants: list) -> bool:
    """One partition-chunk loop of 2..MAX_TILES row tiles, a matmul, and a fusion group after
    the last matmul."""
    if len(loops) != 1 or loops[0].kind != "P":
        return False
    lp = loops[0]
    tiles = lp.n_full + (1 if lp.rem else 0)
    if not 2 <= tiles <= MAX_TILES:
        return False
    last = max((i for i, p in enumerate(participants) if isinstance(p, MatmulEmitter)), default=None)
    if last is None:
        return False
    return any(isinstance(p, GroupEmitter) for p in participants[last + 1 :])


def read_order(participants: list, root) -> list:
    """``participants`` with stage 1's projections (its matmuls, when all read the same staged
    Aᵀ) reordered, in the slots they hold, by the first stage-2 participant reading their result
    (through ``root``: a value's root through views); a result stage 2 never reads goes last,
    ties keep their order. Tile 0's resident weights load in this order, right before each
    projection's first matmul, so the weight stage 2 reads first arrives first (the q / k / v of
    a decoder layer's front are lowered k, v, q: item_order.py moves k and v next to their A)."""
    last = max(i for i, p in enumerate(participants) if isinstance(p, MatmulEmitter))
    slots = [i for i, p in enumerate(participants[: last + 1]) if isinstance(p, MatmulEmitter)]
    mms = [participants[i] for i in slots]
    a_values = {m.a_value for m in mms}
    if len(mms) < 2 or len(a_values) != 1 or None in a_values:
        return participants
    first_read: dict = {}
    for k, p in enumerate(participants[last + 1 :]):
        for v in getattr(p, "provided", ()):
            first_read.setdefault(root(v), k)
    end = len(participants)

    def key(m):
        return end if m.c_value is None else first_read.get(root(m.c_value), end)

    out = list(participants)
    for i, m in zip(slots, sorted(mms, key=key)):
        out[i] = m
    return out


def run_skewed(b, loops: list, participants: list, tiles: dict) -> None:
    """Emit the participants' row tiles as the module docstring says; ``tiles`` is the pipeline's
    shared tile table (participants read and publish row tiles there)."""
    lp = loops[0]
    last = max(i for i, p in enumerate(participants) if isinstance(p, MatmulEmitter))
    stage1, stage2 = participants[: last + 1], participants[last + 1 :]
    deferred = [p for p in stage1 if isinstance(p, MatmulEmitter) and p.resident and p.resident_level() == 0]
    for p in deferred:
        p.defer_resident = True
    for p in stage1:
        if isinstance(p, MatmulEmitter):
            p.c_copy_engine = C_COPY_ENGINE
    for p in participants:
        p.prepare()
    tops = [p.top_instance() for p in participants]
    for p, inst in zip(participants, tops):
        p.before(0, inst)
    rows = [(c * lp.chunk, lp.chunk) for c in range(lp.n_full)]
    if lp.rem:
        rows.append((lp.n_full * lp.chunk, lp.rem))
    block = b._blocks[-1]
    marks = []  # the op before each step (S1(t), S2(t-1))
    first = next(i for i, p in enumerate(stage1) if isinstance(p, MatmulEmitter))
    pending = None
    heads, staged = [], []  # per step: the op ending its stage-1 head, and its xᵀ staging
    for t, (offset, extent) in enumerate(rows):
        marks.append(block.last)
        insts = [p.enter(inst, 0, offset, extent) for p, inst in zip(participants, tops)]
        for p, inst in zip(stage1[:first], insts):
            p.before(1, inst)
        heads.append(block.last)
        mm, inst = stage1[first], insts[first]
        if mm.a_value is not None:  # xᵀ of tile t+1 staged before stage 2 of tile t
            mm.stage_a_early(inst)
        staged.append(block.last)
        if pending is not None:
            snapshot = dict(tiles)
            _stage2(stage2, pending, tiles)
            tiles.clear()
            tiles.update(snapshot)
        for p, inst in zip(stage1[first:], insts[first:]):
            if t == 0 and p in deferred:
                p.load_deferred_resident()
            p.before(1, inst)
        for p, inst in zip(stage1, insts):
            p.after(1, inst)
        pending = (dict(tiles), insts[last + 1 :])
    marks.append(block.last)
    _stage2(stage2, pending, tiles)
    marks.append(block.last)
    _hoist_heads(block, marks, heads, staged)
    _reorder_dmas(block, marks)
    for p, inst in zip(participants, tops):
        p.after(0, inst)


def _stage2(stage2: list, pending: tuple, tiles: dict) -> None:
    """Stage 2 of one row tile, reading the tile table as its stage 1 left it."""
    snapshot, insts = pending
    tiles.clear()
    tiles.update(snapshot)
    for p, inst in zip(stage2, insts):
        p.before(1, inst)
    for p, inst in zip(stage2, insts):
        p.after(1, inst)


def _hoist_heads(block, marks: list, heads: list, staged: list) -> None:
    """Move each step's head (``marks[t]`` up to ``heads[t]``: the members before the first
    matmul of tile t, t >= 1) to right after the xᵀ staging of the step before (``staged[t-1]``),
    when it touches no value the ops it passes write or the ops it passes touch no value it
    writes (``_conflict``); ``marks`` stay valid (a moved head leaves its step's first op)."""
    for t in range(1, len(heads)):
        if heads[t] is marks[t]:
            continue
        head = _region(block, marks[t], heads[t])
        passed = _region(block, staged[t - 1], marks[t])
        if _conflict(head, passed):
            continue
        anchor = staged[t - 1]
        for op in head:
            block.remove(op)
            block.insert_after(anchor, op)
            anchor = op


def _touched(ops: list) -> tuple[set, set]:
    """(values read, values written) by ``ops`` and the ops nested in them: HBM views as their
    root tensor; an op writes the values it defines (an allocation its tile), a deallocation
    the tile it ends."""
    reads, writes = set(), set()
    for top in ops:
        for op in top.walk():
            writes.update(op.results)
            if isinstance(op, DeallocOp):
                writes.add(op.operand(0))
                continue
            names = getattr(op, "writes", ()) if hasattr(op, "access_attrs") else ()
            written = {_hbm_root(op.access(n).tensor) for n in names if op.access(n) is not None}
            writes |= written
            reads |= {_hbm_root(v) for v in op.operands} - written
    return reads, writes


def _conflict(moved: list, passed: list) -> bool:
    """Whether ``moved`` may not be emitted before ``passed``: a value one writes that the
    other touches."""
    mr, mw = _touched(moved)
    pr, pw = _touched(passed)
    return bool(mw & (pr | pw)) or bool(mr & pw)


def _hbm_root(v):
    while v.defining_op is not None and v.defining_op.name == "nki.hbm_view":
        v = v.defining_op.operand(0)
    return v


def _region(block, before, last) -> list:
    """The ops after ``before`` (None: from the block's start) up to and including ``last``."""
    ops, op = [], (before.next_op if before is not None else block.first)
    while op is not None:
        ops.append(op)
        if op is last:
            break
        op = op.next_op
    return ops


def _reorder_dmas(block, marks: list) -> None:
    """Reorder the straight row tiles: per step (``marks``: the op before each step, then the
    last op), its loads of kernel inputs (with their tiles' allocations) go first, and the
    stores of the step before go right after them. Each DMA queue serves its transfers in
    issue order, so a store waiting for a step's compute would hold back the loads behind it
    (the next tile's h, cos and sin). Legal: a moved load reads an input no DMA of the region
    writes, into a tile nothing touched before it; a moved store is read by no op of the region
    (its values reach later items only)."""
    steps = [_region(block, a, z) for a, z in zip(marks, marks[1:])]
    everything = [op for st in steps for op in st]
    inside = set(everything)
    written = {
        _hbm_root(op.access("dst").tensor)
        for op in everything
        if isinstance(op, DmaCopyOp) and isinstance(op.access("dst").tensor.type, HbmType)
    }
    read = {
        _hbm_root(op.access("src").tensor)
        for op in everything
        if isinstance(op, DmaCopyOp) and isinstance(op.access("src").tensor.type, HbmType)
    }
    inputs = set(block.args)
    plan = []
    for ops in steps:
        loads, stores, moved = [], [], set()
        for k, op in enumerate(ops):
            if not isinstance(op, DmaCopyOp):
                continue
            src, dst = op.access("src"), op.access("dst")
            src_hbm, dst_hbm = isinstance(src.tensor.type, HbmType), isinstance(dst.tensor.type, HbmType)
            if src_hbm and not dst_hbm:
                alloc = dst.tensor.defining_op
                root = _hbm_root(src.tensor)
                if (
                    root not in inputs
                    or root in written
                    or not isinstance(alloc, AllocOp)
                    or alloc not in ops
                ):
                    continue
                j = ops.index(alloc)
                if any(dst.tensor in o.operands for o in ops[j + 1 : k]):
                    continue
                if any(u.defining_op in inside and u is not dst.tensor for u in op.operands):
                    continue
                loads += [alloc, op]
                moved |= {alloc, op}
            elif dst_hbm and not src_hbm and _hbm_root(dst.tensor) not in read:
                stores.append(op)
                moved.add(op)
        plan.append((loads, [op for op in ops if op not in moved], stores))
    order, carried = [], []
    for loads, rest, stores in plan:
        order += loads + carried + rest
        carried = stores
    order += carried
    if order == everything:
        return
    before = marks[0]
    for op in everything:
        block.remove(op)
    for op in order:
        if before is None:
            block.prepend(op)
        else:
            block.insert_after(before, op)
        before = op
