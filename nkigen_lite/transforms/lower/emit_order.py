"""Instruction order of a straight-line kernel chosen by a list scheduler at emission time.

Each engine runs its instruction stream in order, so the program order of a straight-line
kernel decides which ready work an engine does first. ``list_order`` reorders the instructions
of an NKI block without loops: dependencies through on-chip tiles (read after write, write after
read, write after write, per allocation as perf/schedule.py tracks them) keep their order
(kernel tensors carry none: the lowering writes disjoint windows of them); among the
instructions whose dependencies are placed, the one the cost model (perf/instruction_cost.py,
perf/latency.py: per-engine busy time, cross-engine latency, HW-DGE issue on two queues, DMA
first-byte latency, transfers one at a time) can start earliest goes next, ties in program
order. With ``store_window`` set (a *store-first* order), among the instructions that can start
within ``store_window`` ns of the earliest, the one feeding the earliest output store (in program
order; an instruction feeds every store reachable through its dependents) goes next, so the
first row tile's chain is not passed by later tiles' work that is ready a little earlier. An
instruction that would make a tile live beyond the PSUM banks (or ``SBUF_SHARE`` of
SBUF) waits until earlier tiles end; if nothing else can run, the block keeps its order. Tile
allocations are placed right before their first use; deallocations are left to
``insert_deallocs``. The result is deterministic (a function of the block and the target).
"""

from __future__ import annotations

from ...ir.graph import ReturnOp
from ...nki.ops import AllocOp, DeallocOp, DmaCopyOp, HbmViewOp, MatmulOp
from ...nki.types import HbmType, MemorySpace
from ...perf.instruction_cost import instruction_cost
from ...perf.latency import latency_table

SBUF_SHARE = 0.75  # of SBUF per partition the reordered tiles may hold at once


def _root(v):
    op = v.defining_op
    return op.operand(0) if isinstance(op, HbmViewOp) else v


def _hbm(v) -> bool:
    return isinstance(v.type, HbmType)


def _touches(op) -> tuple[list, list]:
    """(on-chip tiles read, tiles written) by an instruction."""
    attrs, operands = op.attrs, op._operands
    specs = {n: spec for n, spec in op.access_attrs()}  # the attributes holding an access
    writes = [n for n in op.writes if n in specs]
    reads = [n for n in specs if n not in writes]
    if isinstance(op, MatmulOp) and attrs["accumulate"]:
        reads.append("dst")
    r = [x for x in dict.fromkeys(_root(operands[specs[n].tensor]) for n in reads) if not _hbm(x)]
    w = [x for x in dict.fromkeys(_root(operands[specs[n].tensor]) for n in writes) if not _hbm(x)]
    return r, w


def _footprint(v, target) -> tuple[str, int]:
    """(memory, bytes per partition) an on-chip tile holds while live: PSUM tiles whole banks."""
    t = v.type
    n = t.dtype.itemsize
    for s in t.shape[1:]:
        n *= s
    if t.space is MemorySpace.PSUM:
        bank = target.psum_bank_bytes
        return "psum", -(-n // bank) * bank
    return "sbuf", n


class _ListScheduler:
    """The list schedule of ``instrs`` (module docstring): ``run()`` gives their new order."""

    store_window: float | None = None  # ns; None: earliest start first (module docstring)

    def __init__(self, instrs: list, target, cost=instruction_cost):
        self.instrs, self.target = instrs, target
        self.touches = [_touches(op) for op in instrs]
        self.tiles = [list(dict.fromkeys(r + w)) for r, w in self.touches]  # each tile once
        self.dep_ready: dict[int, float] = {}  # instruction -> end of its dependencies (+ latency)
        n = len(instrs)
        self.deps: list[set] = [set() for _ in range(n)]
        self.users: dict = {}
        last_w: dict = {}
        reads_since: dict = {}
        for i, (r, w) in enumerate(self.touches):
            for x in r:
                if x in last_w:
                    self.deps[i].add(last_w[x])
                reads_since.setdefault(x, []).append(i)
            for x in w:
                if x in last_w:
                    self.deps[i].add(last_w[x])
                self.deps[i].update(j for j in reads_since.get(x, []) if j != i)
                last_w[x] = i
                reads_since[x] = []
            for x in dict.fromkeys(r + w):
                self.users.setdefault(x, []).append(i)
        self.costs = [cost(op, target) for op in instrs]
        self.lat = latency_table(target)
        self.end = [0.0] * n
        self.free: dict[str, float] = {}
        self.queue = 0
        self.dma_free = 0.0
        share = int(target.sbuf_bytes_per_partition * SBUF_SHARE)
        self.budget = {"psum": target.psum_bytes_per_partition, "sbuf": share}
        self.foot = {x: _footprint(x, target) for x in self.users}
        self.live: dict = {}  # tile -> its users not yet placed
        self.used = {"psum": 0, "sbuf": 0}

    def fits(self, i: int) -> bool:
        extra = {"psum": 0, "sbuf": 0}
        live, foot = self.live, self.foot
        for x in self.tiles[i]:
            if x not in live:
                mem, nb = foot[x]
                extra[mem] += nb
        used, budget = self.used, self.budget
        return (
            used["psum"] + extra["psum"] <= budget["psum"] and used["sbuf"] + extra["sbuf"] <= budget["sbuf"]
        )

    def start(self, i: int) -> float:
        c = self.costs[i]
        t = self.dep_ready.get(i)
        if t is None:  # asked once every dependency is placed: their ends are final
            lat, end, costs = self.lat, self.end, self.costs
            t = max((end[j] + lat.get((costs[j].engine, c.engine), 0.0) for j in self.deps[i]), default=0.0)
            self.dep_ready[i] = t
        if isinstance(self.instrs[i], DmaCopyOp):
            return max(t, self.free.get(f"q{self.queue}", 0.0))
        return max(t, self.free.get(c.engine, 0.0))

    def place(self, i: int) -> None:
        c, t = self.costs[i], self.target
        s = self.start(i)
        if isinstance(self.instrs[i], DmaCopyOp):
            self.free[f"q{self.queue}"] = s + t.dge_issue_ns
            self.queue = (self.queue + 1) % t.dge_instances
            arrive = s + t.dge_issue_ns + t.dma_first_byte_latency_ns
            self.dma_free = max(self.dma_free, arrive) + c.ns
            self.end[i] = self.dma_free
        else:
            self.end[i] = self.free[c.engine] = s + c.ns
        for x in self.tiles[i]:
            if x not in self.live:
                self.live[x] = len(self.users[x])
                self.used[self.foot[x][0]] += self.foot[x][1]
            self.live[x] -= 1
            if self.live[x] == 0:
                self.used[self.foot[x][0]] -= self.foot[x][1]

    def run(self) -> list[int] | None:
        n = len(self.instrs)
        waiting = [len(d) for d in self.deps]
        succ: list[list[int]] = [[] for _ in range(n)]
        for i, d in enumerate(self.deps):
            for j in sorted(d):
                succ[j].append(i)
        feeds = self._feeds(succ)
        ready = [i for i in range(n) if waiting[i] == 0]
        order = []
        while ready:
            candidates = [i for i in ready if self.fits(i)]
            if not candidates:
                return None  # the memory budgets cannot be kept this way
            if feeds is None:
                best = min(candidates, key=lambda i: (self.start(i), i))
            else:
                first = min(self.start(i) for i in candidates) + self.store_window
                near = [i for i in candidates if self.start(i) <= first]
                best = min(near, key=lambda i: (feeds[i], self.start(i), i))
            ready.remove(best)
            self.place(best)
            order.append(best)
            for k in succ[best]:
                waiting[k] -= 1
                if waiting[k] == 0:
                    ready.append(k)
        return order if len(order) == n else None

    def _feeds(self, succ: list) -> list | None:
        """Per instruction, the program-order number of the earliest output store it feeds
        (``len(instrs)`` when none); None without a ``store_window``."""
        if self.store_window is None:
            return None
        n = len(self.instrs)
        feeds = [n] * n
        stores = 0
        for i, op in enumerate(self.instrs):
            if isinstance(op, DmaCopyOp) and _hbm(op.access("dst").tensor):
                feeds[i] = stores
                stores += 1
        for i in reversed(range(n)):
            for k in succ[i]:
                feeds[i] = min(feeds[i], feeds[k])
        return feeds


def list_order(block, target, make_scheduler=_ListScheduler):
    """Reorder ``block`` (no loops, no deallocations yet) in place as the module docstring says;
    returns the scheduler (``make_scheduler(instrs, target)``, a ``_ListScheduler``) or None
    when the block kept its order."""
    ops = list(block)
    if any(isinstance(op, DeallocOp) or op.regions for op in ops):
        raise ValueError("list_order takes a straight-line block before insert_deallocs")
    head = [op for op in ops if isinstance(op, HbmViewOp) or (isinstance(op, AllocOp) and _hbm(op.result))]
    allocs = {op.result: op for op in ops if isinstance(op, AllocOp) and not _hbm(op.result)}
    ret = block.last if isinstance(block.last, ReturnOp) else None
    instrs = [op for op in ops if op not in head and not isinstance(op, AllocOp) and op is not ret]
    sched = make_scheduler(instrs, target)
    order = sched.run()
    if order is None:
        return None
    for op in ops:
        block.remove(op)
    for op in head:
        block.append(op)
    placed = set()
    for i in order:
        for x in sched.tiles[i]:
            a = allocs.get(x)
            if a is not None and a not in placed:
                block.append(a)
                placed.add(a)
        block.append(instrs[i])
    for a in allocs.values():
        if a not in placed:
            block.append(a)
    if ret is not None:
        block.append(ret)
    return sched
