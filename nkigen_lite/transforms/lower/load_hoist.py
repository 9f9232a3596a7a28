"""Loads of kernel inputs into top-level tiles issued earlier, where the scheduled time drops.

The HW-DGE queues issue DMAs in program order, so a weight loaded into a top-level SBUF tile
right before the matmuls that read it (the O projection's resident ``Wo`` after a decoder
layer's attention, the broadcast ``w_post`` row) starts its transfer only when the program
reaches it, although the DMA engines idled long before (while the attention's chain ran on
the compute engines) and nothing stops the load from running then: its source is a kernel input
no instruction writes, and its tile is touched by nothing else until the load.

Here such loads are moved, with their tiles' allocations (and the views naming their
sources), earlier in the kernel's top-level block. A *group* is every tile of one source op
(``loc``) filled that way: allocated at top level, written only by top-level ``dma_copy`` s from
kernel inputs nothing writes, with no other instruction touching it before its last load.
Since the queues issue in program order and the DMA engines serve ready transfers first ready
first, where a group goes is decided by the DMAs before it: one traced schedule (perf/schedule.py)
gives the DMA engines' idle time after every earlier top-level DMA's transfer, up to the
group's own first issue, and the group goes right after the DMA followed by the longest idle
time — among those where SBUF (the peak of every later top-level point up to the group's old
place, loops included, counted as the verifier counts it) still holds its tiles. The move is
kept only when the kernel's scheduled time gets shorter. The last ``MAX_GROUPS`` groups are
placed all together from one traced schedule (kept when one more schedule is shorter and SBUF
holds them all), then
one at a time in program order, each placed from a traced schedule of the kernel as the moves
before it left it and kept only if one more schedule is shorter (placed together, the groups
all take the same idle time, and the later ones, ready first, may push the earlier ones'
transfers back; one at a time, a move that pays only with another is missed). The pass costs
at most two schedules per group and two more.
Results never change: the same instructions read the same data (the input is never written)
into tiles nothing else touches before.
"""

from __future__ import annotations

from ...ir.graph import Graph
from ...nki.ops import AllocOp, DeallocOp, DmaCopyOp, ForiLoopOp, NkiOp
from ...nki.target import Target
from ...nki.types import HbmType, MemorySpace, TileType
from ...perf.instruction_cost import FREE_OPS
from ...perf.schedule import Scheduler
from .rotation import _peaks

MAX_GROUPS = 12  # groups tried: the last ones of the kernel
MIN_SPAN = 8  # top-level ops a group must move over to be worth a schedule


def _root(v):
    op = v.defining_op
    return op.operand(0) if op is not None and op.name == "nki.hbm_view" else v


def _written_hbm(graph: Graph) -> set:
    """HBM roots some instruction writes (outputs, scratch, inputs updated in place)."""
    out = set()
    for op in graph.body.walk():
        if isinstance(op, NkiOp) and op.writes:
            for t in op.tensors(op.writes):
                if isinstance(t.type, HbmType):
                    out.add(_root(t))
    return out


def _touched(op) -> set:
    """On-chip tensors an op (a loop: any op in it) reads or writes."""
    ops = op.body.walk() if isinstance(op, ForiLoopOp) else [op]
    return {t for o in ops if isinstance(o, NkiOp) for t in o.tensors()}


class _Group:
    """The allocations and loads of one source op's weight tiles (module docstring)."""

    def __init__(self, loc: str):
        self.loc = loc
        self.views: list = []  # top-level hbm_view ops naming the loads' sources
        self.allocs: list = []
        self.loads: list = []
        self.bytes = 0

    @property
    def ops(self) -> list:
        return self.views + self.allocs + self.loads


def _groups(graph: Graph) -> list[_Group]:
    """The hoistable groups of the top-level block, in program order of their first load."""
    ops = list(graph.body)
    pos = {id(op): i for i, op in enumerate(ops)}
    written = _written_hbm(graph)
    inputs = set(graph.body.args)
    allocs = {
        op.result: op
        for op in ops
        if isinstance(op, AllocOp)
        and isinstance(op.result.type, TileType)
        and op.result.type.space is MemorySpace.SBUF
    }
    loads: dict = {}
    for op in ops:
        if not isinstance(op, DmaCopyOp):
            continue
        dst, src = op.access("dst").tensor, _root(op.access("src").tensor)
        view = op.access("src").tensor.defining_op
        static = all(v is dst or v is src or v is op.access("src").tensor for v in op.operands) and (
            view is None or all(v in inputs for v in view.operands)
        )  # no runtime index, nothing else the move could pass
        if static and dst in allocs and src in inputs and src not in written:
            loads.setdefault(dst, []).append(op)
    users: dict = {}
    for op in ops:
        if isinstance(op, (AllocOp, DeallocOp)):
            continue
        for t in _touched(op):
            if t in loads:
                users.setdefault(t, []).append(op)
    groups: dict[str, _Group] = {}
    for tile, dmas in loads.items():
        a = allocs[tile]
        last = max(pos[id(d)] for d in dmas)
        mine = set(map(id, dmas))
        if any(id(u) not in mine and pos[id(u)] < last for u in users[tile]):
            continue  # something else touches the tile before its last load
        loc = dmas[0].loc or ""
        g = groups.setdefault(loc, _Group(loc))
        g.allocs.append(a)
        g.loads += dmas
        g.bytes += tile.type.bytes_per_partition * a.bufs
    out = list(groups.values())
    for g in out:
        g.allocs.sort(key=lambda o: pos[id(o)])
        g.loads.sort(key=lambda o: pos[id(o)])
        views = {d.access("src").tensor.defining_op for d in g.loads}
        g.views = sorted((v for v in views if v is not None and id(v) in pos), key=lambda o: pos[id(o)])
    return sorted(out, key=lambda g: pos[id(g.loads[0])])


def _live_profile(ops: list) -> list[int]:
    """SBUF bytes per partition at each top-level op (a loop: its peak), as the verifier
    counts them."""
    live, owner, out = 0, {}, []
    for op in ops:
        if isinstance(op, AllocOp) and isinstance(op.result.type, TileType):
            if op.result.type.space is MemorySpace.SBUF:
                owner[op.result] = op.result.type.bytes_per_partition * op.bufs
                live += owner[op.result]
            out.append(live)
        elif isinstance(op, DeallocOp) and op.operand(0) in owner:
            out.append(live)
            live -= owner.pop(op.operand(0))
        elif isinstance(op, ForiLoopOp):
            out.append(_peaks(op.body, {}, live, 0)[0])
        else:
            out.append(live)
    return out


def _earliest(ops: list, g: _Group, target: Target, prof: list | None = None) -> int:
    """The earliest top-level index ``g``'s ops may go before with SBUF still fitting
    (``prof``: ``_live_profile(ops)`` when already known)."""
    first = min(ops.index(o) for o in g.ops)
    prof = _live_profile(ops) if prof is None else prof
    k = first
    while k > 0 and prof[k - 1] + g.bytes <= target.sbuf_bytes_per_partition:
        k -= 1
    return k


def _reorder(graph: Graph, order: list) -> None:
    """Put the top-level block's ops in ``order``."""
    for op in list(graph.body):
        graph.body.remove(op)
    for op in order:
        graph.body.append(op)


def _top_of(graph: Graph) -> dict:
    """id(op) -> the top-level op holding it (itself, or the loop around it)."""
    out = {}
    for top in graph.body:
        for op in top.walk() if isinstance(top, ForiLoopOp) else [top]:
            out[id(op)] = top
    return out


def _trace(graph: Graph, oracle) -> Scheduler:
    """One traced schedule of ``graph`` with the oracle's cached costs."""
    for op in graph.body.walk():
        if isinstance(op, NkiOp) and not isinstance(op, FREE_OPS):
            oracle.cost(op)
    sched = Scheduler(oracle.target, oracle.costs, trace=True)
    sched.info = oracle.info
    sched.run(graph.body)
    return sched


def _anchor(graph: Graph, sched: Scheduler, g: _Group, lo: int, oracle) -> int | None:
    """The top-level index ``g`` should go before: right after the DMA (at or after index
    ``lo``, before ``g``) whose transfer ends where the DMA engines then idle longest before
    ``g``'s first load is issued, in the traced schedule ``sched``; None without such an idle
    time."""
    ops = list(graph.body)
    pos = {id(op): i for i, op in enumerate(ops)}
    first = min(pos[id(o)] for o in g.ops)
    top = _top_of(graph)
    members = set(map(id, g.ops))
    transfers = []  # (start, end, top-level index) of every DMA transfer
    g_issue = None
    for op, start, end in sched.trace:
        if not isinstance(op, DmaCopyOp):
            continue
        if id(op) in members:
            g_issue = start if g_issue is None else min(g_issue, start)
            continue
        transfers.append((end - oracle.cost(op).ns, end, pos[id(top[id(op)])]))
    if g_issue is None:
        return None
    transfers.sort()
    best, gap = None, 0.0
    busy_until = 0.0
    for k, (_s0, e0, i) in enumerate(transfers):
        busy_until = max(busy_until, e0)
        if not lo <= i < first:
            continue
        nxt = next((t[0] for t in transfers[k + 1 :] if t[0] >= busy_until), g_issue)
        idle = min(nxt, g_issue) - busy_until
        if idle > gap:
            best, gap = i + 1, idle
    return best


class _Memo:
    """Facts of the top-level block in its current order (its groups, SBUF profile, traced
    schedule): the pass only reorders top-level ops, and a trial order that is not kept is put
    back, so each fact is computed again only when the order changed."""

    def __init__(self, graph: Graph, oracle):
        self.graph, self.oracle = graph, oracle
        self.key: tuple | None = None
        self.facts: dict = {}

    def _get(self, name: str, make):
        key = tuple(map(id, self.graph.body))
        if key != self.key:
            self.key, self.facts = key, {}
        if name not in self.facts:
            self.facts[name] = make()
        return self.facts[name]

    def groups(self) -> list[_Group]:
        return self._get("groups", lambda: _groups(self.graph))

    def profile(self) -> list[int]:
        return self._get("profile", lambda: _live_profile(list(self.graph.body)))

    def trace(self) -> Scheduler:
        return self._get("trace", lambda: _trace(self.graph, self.oracle))


def hoist_loads(graph: Graph, target: Target, oracle) -> int:
    """Move the module docstring's groups earlier where the scheduled time drops: all together
    from one traced schedule (kept when shorter and SBUF still holds them all: each was placed
    against the profile without the others), then one at a time from there (``_one_by_one``);
    returns how many group moves were kept. ``oracle``: a ScheduleOracle of
    ``graph`` (engine_balance.py)."""
    ops = list(graph.body)
    pos = {id(op): i for i, op in enumerate(ops)}
    moves = []
    sched = None
    memo = _Memo(graph, oracle)
    for g in memo.groups()[-MAX_GROUPS:]:
        first = min(pos[id(o)] for o in g.ops)
        lo = _earliest(ops, g, target, memo.profile())
        if first - lo < MIN_SPAN:
            continue
        sched = sched or memo.trace()
        k = _anchor(graph, sched, g, lo, oracle)
        if k is not None and k < first:
            moves.append((g, k))
    if not moves:
        return 0
    _reorder(graph, _order(ops, moves))
    # each group was placed against the profile without the others: together they may not fit
    fits = max(_live_profile(list(graph.body)), default=0) <= target.sbuf_bytes_per_partition
    t_joint = oracle.makespan() if fits else float("inf")
    kept = t_joint < sched.makespan
    if not kept:
        _reorder(graph, ops)
    n, _t = _one_by_one(graph, target, oracle, min(t_joint, sched.makespan), memo)
    return n + (len(moves) if kept else 0)


def _one_by_one(graph: Graph, target: Target, oracle, start: float, memo: _Memo) -> tuple[int, float]:
    """Move the last ``MAX_GROUPS`` groups one at a time in program order, each placed from a
    traced schedule of the kernel as the groups before it left it and kept only when the
    schedule gets shorter than ``start`` and the moves before; returns (groups moved, the
    schedule's length)."""
    moved, best = 0, start
    for loc in [g.loc for g in memo.groups()[-MAX_GROUPS:]]:
        ops = list(graph.body)
        g = next((x for x in memo.groups() if x.loc == loc), None)
        if g is None:
            continue
        pos = {id(op): i for i, op in enumerate(ops)}
        first = min(pos[id(o)] for o in g.ops)
        lo = _earliest(ops, g, target, memo.profile())
        if first - lo < MIN_SPAN:
            continue
        k = _anchor(graph, memo.trace(), g, lo, oracle)
        if k is None or k >= first:
            continue
        _reorder(graph, _order(ops, [(g, k)]))
        now = oracle.makespan()
        if now < best:
            best, moved = now, moved + 1
        else:
            _reorder(graph, ops)
    return moved, best


def _order(ops: list, moves: list) -> list:
    """The top-level ops with each move's group (``(group, anchor index)``) placed before the
    op at its anchor (the first op at or after it that stays in place)."""
    members = {id(o) for g, _ in moves for o in g.ops}
    before: dict = {}
    placed: set = set()  # an op two groups share (an HBM view both load from) goes once, first
    for g, k in sorted(moves, key=lambda m: m[1]):
        while id(ops[k]) in members:  # the first op at or after the anchor staying in place
            k += 1
        mine = [o for o in g.ops if id(o) not in placed]
        placed.update(map(id, mine))
        before.setdefault(id(ops[k]), []).extend(mine)
    order = []
    for op in ops:
        if id(op) in members:
            continue
        order += before.get(id(op), []) + [op]
    return order
