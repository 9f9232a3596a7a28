"""List scheduling of an NKI kernel's executed instruction stream (docs/costmodel.md).

Every engine (tensor, vector, scalar, gpsimd) runs its instructions in program order, one at a
time; an instruction starts when its engine is free and its dependencies are satisfied:

- **RAW**: it reads a buffer after the last write to it has finished (+ the dependency latency);
- **WAR**: it overwrites a buffer after every read since the last write has finished;
- **WAW**: it overwrites a buffer nobody read since the last write, after that write.

Dependencies are tracked per allocation (an HBM view is its root tensor). A tile allocated in a
loop body with ``bufs = 1`` is one buffer reused by every iteration, so the load of iteration
i+1 waits for the readers of iteration i; with ``bufs = k`` rotating buffers, execution n of
the alloc uses buffer ``n mod k`` and only waits for the readers of execution n - k. HBM
tensors only carry RAW dependencies (the lowering writes disjoint windows of them), with the
latest write of any window.

A ``dma_copy`` is issued on one of the HW-DGE queues (round robin in execution order), which it
occupies for ``dge_issue_ns``; its transfer is ready ``dma_first_byte_latency_ns`` later (the
latency overlaps other in-flight DMAs) and occupies the DMA engines for its transfer time.
Transfers do not overlap each other; the engines serve ready transfers first come, first
served across queues (in order within a queue), not in program order: a transfer is booked
only when an instruction depends on it (or at a loop's steady-state snapshot, or at the end),
and then every pending transfer ready no later than it is booked first, in order of readiness.
So the load of tile i+1, ready while tile i is computed, goes before the store of tile i that
precedes it in program order. A transfer booked late may still fill an earlier idle gap of the
DMA engines. VectorE instructions in performance mode and every GpSimd instruction also occupy
the SBUF bus those two engines share (facts §1.4).

Loops: the first ``STEADY_STATE_ITERATIONS`` iterations of a ``fori_loop`` are scheduled; every
time the loop touches (engine, queue and buffer times) is then advanced by ``trips - k`` times
the largest advance of the last scheduled iteration (at most that iteration's serial time), the
steady-state period. Each scheduled instruction costs O(1) (its number of accesses), so the
scheduler is linear in the static instruction count times ``k`` per loop level, independent of
trip counts.
"""

from __future__ import annotations

import copy

from ..ir.graph import Block, ReturnOp
from ..nki.ops import AllocOp, ForiLoopOp, HbmViewOp, MatmulOp
from ..nki.target import Target
from ..nki.types import HbmType
from .instruction_cost import FREE_OPS, InstructionCost, instruction_cost
from .latency import latency_table
from .op_memo import remembered

STEADY_STATE_ITERATIONS = 8  # loop iterations scheduled before extrapolating (a model choice)
IDLE_GAPS_KEPT = 32  # idle intervals of the DMA engines remembered for later transfers
PORT = "vector_gpsimd_port"  # the SBUF bus VectorE (perf mode) and GpSimd share
DMA = "dma"  # the DMA engines (transfers)


def queue_name(q: int) -> str:
    return f"dma_queue{q}"


class _OpInfo:
    """What the scheduler needs of one static instruction."""

    __slots__ = (
        "cost",
        "engine",
        "reads",
        "writes",
        "port",
        "ns",
        "read_roots",
        "sbuf_read",
        "rotating",
        "keys",
    )

    def __init__(self, cost: InstructionCost, reads: list, writes: list, rotating: bool = True):
        self.cost = cost
        self.engine = cost.engine
        self.ns = cost.ns
        self.reads = reads  # [(root id, is_hbm)]
        self.writes = writes
        self.port = cost.sbuf_port
        self.read_roots = [r for r, _ in reads]
        # the positions in ``reads`` of on-chip buffers (None: all of them)
        self.sbuf_read = (
            None if not any(h for _, h in reads) else [i for i, (_, h) in enumerate(reads) if not h]
        )
        # whether a root is a rotating allocation (only those name another buffer per execution);
        # without one, ``keys`` is what ``Scheduler._buffer_keys`` gives every time
        self.rotating = rotating
        pos = self.sbuf_read
        sbuf = self.read_roots if pos is None else [self.read_roots[i] for i in pos]
        self.keys = (self.read_roots, writes, sbuf)


# what ``_run_block`` does with an op, by its class (filled on first sight of each class)
_INSTR, _LOOP, _ALLOC, _SKIP = range(4)
_KINDS: dict = {}


def _kind(cls) -> int:
    k = _KINDS.get(cls)
    if k is None:
        if issubclass(cls, ForiLoopOp):
            k = _LOOP
        elif issubclass(cls, AllocOp):
            k = _ALLOC  # a rotating alloc advances its buffer; any other is free (FREE_OPS)
        elif issubclass(cls, (ReturnOp, *FREE_OPS)):
            k = _SKIP
        else:
            k = _INSTR
        _KINDS[cls] = k
    return k


def _root(v) -> tuple[int, bool]:
    """Identity of the memory a tensor value names (an HBM view names its root tensor), and
    whether it is in HBM."""
    op = v.defining_op
    if isinstance(op, HbmViewOp):
        v = op.operand(0)
    return id(v), isinstance(v.type, HbmType)


def _reads(op) -> list:
    names = [n for n, _ in op.access_attrs() if n not in op.writes]
    if isinstance(op, MatmulOp) and op.attrs["accumulate"]:
        names.append("dst")
    return list(dict.fromkeys(_root(op.access(n).tensor) for n in names))


def _writes(op) -> list:
    return list(dict.fromkeys(_root(op.access(n).tensor) for n in op.writes if op.access(n) is not None))


def _rotating(op) -> bool:
    """Whether ``op`` accesses a tile of a rotating allocation (``bufs > 1``)."""
    for v in op.tensors():
        a = v.defining_op
        if isinstance(a, AllocOp) and a.bufs > 1:
            return True
    return False


def _roots(op) -> tuple[list, list, bool]:
    """(``_reads(op)``, ``_writes(op)``, ``_rotating(op)``), remembered on the op while its
    attributes and operands stay the same objects (what they read: its accesses and the views'
    and allocations' defining ops, fixed once built), since every search pass schedules the same
    instructions again (compile time). The lists are shared: never mutated."""
    return remembered(op, "_roots", lambda: (_reads(op), _writes(op), _rotating(op)))


class _Pending:
    """A DMA transfer issued but not yet booked on the DMA engines: ready time, transfer time,
    the buffer keys it reads and writes (resolved at issue), and its trace slot."""

    __slots__ = ("ready", "ns", "reads", "writes", "seq", "op", "issue", "slot")

    def __init__(self, ready, ns, reads, writes, seq, op, issue):
        self.ready, self.ns, self.reads, self.writes = ready, ns, reads, writes
        self.seq, self.op, self.issue, self.slot = seq, op, issue, None


class _LoopInfo:
    """Static facts of a loop body: the state keys it touches and its executed DMA count."""

    __slots__ = ("resources", "read_roots", "written_roots", "dmas", "busy", "rotating", "own", "load")

    def __init__(self):
        self.resources: set = set()
        self.read_roots: set = set()
        self.written_roots: set = set()
        self.rotating: set = set()  # rotating allocations anywhere in the body (root ids)
        self.own: dict = {}  # rotating buffer key -> bufs, for allocations directly in this body
        self.dmas = 0
        self.load: dict[str, float] = {}  # resource -> its busy time in one iteration
        self.busy = 0.0  # one iteration's instruction times, each DMA with issue + latency


class Scheduler:
    """Schedules an NKI block's instructions; ``makespan`` is the scheduled time (ns) and
    ``dependency_ns`` the sum over executed instructions of their largest dependency latency
    (the latency part of the serial time)."""

    def __init__(self, target: Target, costs: dict | None = None, trace: bool = False):
        self.target = target
        self.costs = {} if costs is None else costs  # id(op) -> InstructionCost
        self.lat = latency_table(target)
        self.info: dict[int, _OpInfo] = {}
        self.loops: dict[int, _LoopInfo] = {}
        self.free: dict[str, float] = {}  # resource -> time it becomes free
        self.w_end: dict[int, float] = {}  # buffer -> end of its latest write
        self.w_eng: dict[int, str] = {}
        self.r_end: dict[int, float] = {}  # buffer -> end of its reads since that write
        self.r_eng: dict[int, str] = {}
        self.dma_counter = 0
        self.bufs: dict[int, int] = {}  # rotating allocation (root id) -> its number of buffers
        self.executions: dict[int, int] = {}  # rotating allocation -> times its alloc ran
        self.key: dict[int, tuple] = {}  # rotating allocation -> the buffer it names now
        self.gaps: list[list[float]] = []  # idle [start, end) of the DMA engines before free[DMA]
        self.dependency_ns = 0.0
        self.trace: list | None = [] if trace else None  # (op, start, end) per scheduled instruction
        self.pending: list[_Pending] = []  # issued transfers not yet booked, in issue order
        self.pending_keys: dict = {}  # buffer key -> the pending transfers touching it

    def fork(self) -> Scheduler:
        """A scheduler in this one's state that schedules on independently (static facts and
        costs shared, no trace): to try continuations of a schedule prefix."""
        s = Scheduler.__new__(Scheduler)
        s.__dict__.update(self.__dict__)
        for name in ("free", "w_end", "w_eng", "r_end", "r_eng", "bufs", "executions", "key"):
            setattr(s, name, dict(getattr(self, name)))
        s.gaps = [list(g) for g in self.gaps]
        s.trace = None
        copies = {id(p): copy.copy(p) for p in self.pending}
        s.pending = [copies[id(p)] for p in self.pending]
        s.pending_keys = {k: [copies[id(p)] for p in v] for k, v in self.pending_keys.items()}
        return s

    def run_ops(self, ops) -> None:
        """Schedule ``ops`` (instructions and loops, in order) after the current state; pending
        DMA transfers stay pending (``makespan`` books them)."""
        self._run_block(ops)

    # ---- static facts ----------------------------------------------------------------------
    def _op_info(self, op) -> _OpInfo:
        info = self.info.get(id(op))
        if info is None:
            cost = self.costs.get(id(op))
            if cost is None:
                cost = self.costs[id(op)] = instruction_cost(op, self.target)
            info = self.info[id(op)] = _OpInfo(cost, *_roots(op))
        return info

    def _loop_info(self, loop: ForiLoopOp) -> _LoopInfo:
        li = self.loops.get(id(loop))
        if li is not None:
            return li
        li = self.loops[id(loop)] = _LoopInfo()
        for op in loop.body:
            if isinstance(op, ForiLoopOp):
                inner = self._loop_info(op)
                li.resources |= inner.resources
                li.read_roots |= inner.read_roots
                li.written_roots |= inner.written_roots
                li.rotating |= inner.rotating
                for r, t in inner.load.items():
                    li.load[r] = li.load.get(r, 0.0) + t * op.trip_count
                li.dmas += inner.dmas * op.trip_count
                li.busy += inner.busy * op.trip_count
                continue
            if isinstance(op, AllocOp) and op.bufs > 1:
                root = id(op.result)
                self.bufs[root] = op.bufs
                li.rotating.add(root)
                li.own.update({(root, s): op.bufs for s in range(op.bufs)})
                continue
            if isinstance(op, (ReturnOp, *FREE_OPS)):
                continue
            info = self._op_info(op)
            li.busy += info.cost.ns
            li.load[info.engine] = li.load.get(info.engine, 0.0) + info.cost.ns
            if info.port:
                li.load[PORT] = li.load.get(PORT, 0.0) + info.cost.ns
            li.read_roots.update(k for r, hbm in info.reads if not hbm for k in self._keys(r))
            li.written_roots.update(k for r, _ in info.writes for k in self._keys(r))
            if info.engine == "dma":
                li.dmas += 1
                li.busy += self.target.dge_issue_ns + self.target.dma_first_byte_latency_ns
                li.resources.add(DMA)
                li.resources.update(queue_name(q) for q in range(self.target.dge_instances))
            else:
                li.resources.add(info.engine)
                if info.port:
                    li.resources.add(PORT)
        return li

    def _keys(self, root: int) -> list:
        """Every buffer key an allocation may name (its rotating buffers, or itself)."""
        n = self.bufs.get(root)
        return [root] if n is None else [(root, s) for s in range(n)]

    def _next_buffer(self, op: AllocOp) -> None:
        """An execution of a rotating alloc: its tile names the next of its buffers."""
        root = id(op.result)
        n = self.executions.get(root, 0)
        self.executions[root] = n + 1
        self.bufs[root] = op.bufs
        self.key[root] = (root, n % op.bufs)

    # ---- scheduling ---------------------------------------------------------------------------
    @property
    def makespan(self) -> float:
        self.flush()
        return max(self.free.values(), default=0.0)

    def run(self, block: Block) -> None:
        """Schedule every instruction of ``block`` (loops included) after the current state,
        booking every DMA transfer."""
        self._run_block(block)
        self.flush()

    def _run_block(self, block: Block) -> None:
        infos, kinds, trace = self.info, _KINDS, self.trace
        for op in block:
            cls = op.__class__
            k = kinds.get(cls)
            if k is None:
                k = _kind(cls)
            if k == _INSTR:
                info = infos.get(id(op))
                if info is None:
                    info = self._op_info(op)
                start, end = self._instruction(info, op)
                if trace is not None and end is not None:
                    trace.append((op, start, end))
            elif k == _LOOP:
                self._loop(op)
            elif k == _ALLOC and op.bufs > 1:
                self._next_buffer(op)

    def flush(self) -> None:
        """Book every pending DMA transfer."""
        if self.pending:
            self._book_until(max(p.ready for p in self.pending))

    def _book_until(self, ready: float) -> None:
        """Book the pending transfers ready at or before ``ready``, first ready first."""
        due = sorted((p for p in self.pending if p.ready <= ready), key=lambda p: (p.ready, p.seq))
        if not due:
            return
        done = set(map(id, due))
        self.pending = [p for p in self.pending if id(p) not in done]
        for p in due:
            for k in p.reads + [w for w, _ in p.writes]:
                lst = self.pending_keys.get(k)
                if lst is not None:
                    lst.remove(p)
                    if not lst:
                        del self.pending_keys[k]
            end = self._transfer(p.ready, p.ns)
            self._record(p.reads, p.writes, "dma", end)
            if self.trace is not None:
                self.trace[p.slot] = (p.op, p.issue, end)

    def _buffer_keys(self, info: _OpInfo) -> tuple[list, list, list]:
        """(buffer keys read, (key, is_hbm) written, on-chip keys read) of an instruction now:
        a rotating allocation names its current buffer."""
        key = self.key
        if not (key and info.rotating):  # every root names itself (the lists are never mutated)
            return info.keys
        reads = [key.get(root, root) for root in info.read_roots]
        writes = [(key.get(root, root), hbm) for root, hbm in info.writes]
        pos = info.sbuf_read
        return reads, writes, (reads if pos is None else [reads[i] for i in pos])

    def _resolve(self, reads: list, writes: list) -> None:
        """Book the pending transfers an instruction reading ``reads`` and writing ``writes``
        depends on."""
        pending_keys = self.pending_keys
        need = None
        for k in reads + [k for k, hbm in writes if not hbm]:
            lst = pending_keys.get(k)
            if lst:
                for p in lst:
                    if need is None or p.ready > need:
                        need = p.ready
        if need is not None:
            self._book_until(need)

    def _instruction(self, info: _OpInfo, op=None) -> tuple[float, float | None]:  # noqa: C901
        """Schedule one instruction; returns its start (a DMA: its issue) and end (None for a
        DMA: its transfer is booked later). Every schedule's hot path, so written out inline:
        the buffer keys (``_buffer_keys`` for an instruction touching a rotating tile), the
        earliest start by the RAW / WAR / WAW dependencies of those keys with the largest
        dependency latency, and the last read and write of each (as ``_record``)."""
        eng = info.engine
        key = self.key
        if not (key and info.rotating):
            reads, writes, sbuf_reads = info.keys
        else:
            reads, writes, sbuf_reads = self._buffer_keys(info)
        if self.pending_keys:
            self._resolve(reads, writes)
        lat = self.lat
        w_end, w_eng, r_end, r_eng = self.w_end, self.w_eng, self.r_end, self.r_eng
        ready = 0.0
        dep = 0.0
        # (``if x > m: m = x`` is ``m = max(m, x)`` without the call: times are never NaN)
        for root in reads:  # RAW
            if root in w_end:
                d = lat[w_eng[root], eng]
                x = w_end[root] + d
                if x > ready:
                    ready = x
                if d > dep:
                    dep = d
        for root, hbm in writes:
            if hbm:
                continue
            if root in r_end:  # WAR
                d = lat[r_eng[root], eng]
                x = r_end[root] + d
            elif root in w_end:  # WAW
                d = lat[w_eng[root], eng]
                x = w_end[root] + d
            else:
                continue
            if x > ready:
                ready = x
            if d > dep:
                dep = d
        self.dependency_ns += dep
        if eng == "dma":
            return self._issue(info, op, ready, list(sbuf_reads), writes), None
        free = self.free
        start = free.get(eng, 0.0)
        if ready > start:
            start = ready
        port = info.port
        if port:
            f = free.get(PORT, 0.0)
            if f > start:
                start = f
        end = free[eng] = start + info.ns
        if port:
            free[PORT] = end
        self._record(sbuf_reads, writes, eng, end)
        return start, end

    def _issue(self, info: _OpInfo, op, ready: float, sbuf_reads: list, writes: list) -> float:
        """Issue a DMA on the next HW-DGE queue at or after ``ready``; its transfer stays
        pending. Returns the issue time."""
        free, t = self.free, self.target
        q = queue_name(self.dma_counter % t.dge_instances)
        self.dma_counter += 1
        start = max(ready, free.get(q, 0.0))
        free[q] = start + t.dge_issue_ns
        p = _Pending(
            start + t.dge_issue_ns + t.dma_first_byte_latency_ns,
            info.ns,
            sbuf_reads,
            writes,
            self.dma_counter,
            op,
            start,
        )
        if self.trace is not None:
            p.slot = len(self.trace)
            self.trace.append((op, start, start))
        self.pending.append(p)
        for k in sbuf_reads + [w for w, _ in writes]:
            self.pending_keys.setdefault(k, []).append(p)
        return start

    def _record(self, reads: list, writes: list, eng: str, end: float) -> None:
        """Remember the last read and write (end time, engine) of each buffer touched: ``reads``
        the on-chip buffer keys read, ``writes`` (key, is_hbm) pairs."""
        w_end, w_eng, r_end, r_eng = self.w_end, self.w_eng, self.r_end, self.r_eng
        for root in reads:
            if end >= r_end.get(root, -1.0):
                r_end[root] = end
                r_eng[root] = eng
        for root, hbm in writes:
            if hbm:
                if end >= w_end.get(root, -1.0):
                    w_end[root] = end
                    w_eng[root] = eng
                continue
            w_end[root] = end
            w_eng[root] = eng
            r_end.pop(root, None)

    def _transfer(self, ready: float, ns: float) -> float:
        """Place a DMA transfer of ``ns`` on the DMA engines at or after ``ready``: in the first
        remembered idle gap it fits, else after the last transfer. Returns its end."""
        end, self.free[DMA] = _place(self.gaps, self.free.get(DMA, 0.0), ready, ns)
        return end

    def _snapshot(self, li: _LoopInfo) -> tuple:
        """The times ``li`` touches, as they would be with the pending transfers booked (booked
        on a copy: booking them now would put them ahead of transfers the next iteration makes
        ready earlier)."""
        free = {r: self.free[r] for r in li.resources if r in self.free}
        w = {b: self.w_end[b] for b in li.written_roots if b in self.w_end}
        r = {b: self.r_end[b] for b in li.read_roots if b in self.r_end}
        if self.pending:
            gaps = [g[:] for g in self.gaps]
            last = self.free.get(DMA, 0.0)
            for p in sorted(self.pending, key=lambda p: (p.ready, p.seq)):
                end, last = _place(gaps, last, p.ready, p.ns)
                for k, _ in p.writes:
                    if k in li.written_roots:
                        w[k] = max(w.get(k, end), end)
                for k in p.reads:
                    if k in li.read_roots:
                        r[k] = max(r.get(k, end), end)
            if DMA in li.resources:
                free[DMA] = last
        return free, w, r

    def _advance(self, li: _LoopInfo, before: tuple, after: tuple) -> float:
        """The largest advance over one iteration of the times the loop touches."""
        period = 0.0
        queues = {queue_name(q) for q in range(self.target.dge_instances)}
        for old, new in zip(before, after):
            for key, t in new.items():
                if key in old and key not in queues:
                    # a buffer of a tile rotating over this loop was last touched ``bufs``
                    # iterations before: its advance spans that many periods
                    period = max(period, (t - old[key]) / li.own.get(key, 1))
        # the HW-DGE queues as one: with an odd number of DMAs per iteration round robin uses a
        # queue every other iteration, so one queue's advance spans two periods
        q_old = [before[0][q] for q in queues if q in before[0]]
        q_new = [after[0][q] for q in queues if q in after[0]]
        if q_old and q_new:
            period = max(period, max(q_new) - max(q_old))
        return period

    def _loop(self, loop: ForiLoopOp) -> None:
        trips = loop.trip_count
        k = min(trips, STEADY_STATE_ITERATIONS)
        li = self._loop_info(loop)
        before = None
        dep_before = 0.0
        runs_before: dict = {}
        body = list(loop.body)  # unchanged while it is scheduled: walk the linked block once
        for it in range(k):
            if it == k - 1 and k < trips:
                before = self._snapshot(li)
                dep_before = self.dependency_ns
                runs_before = {r: self.executions.get(r, 0) for r in li.rotating}
            self._run_block(body)
        if before is None:
            return
        rest = trips - k
        after = self._snapshot(li)
        period = self._advance(li, before, after)
        for r, n in runs_before.items():  # the extrapolated iterations run the allocs too
            self.executions[r] += rest * (self.executions[r] - n)
            self.key[r] = (r, (self.executions[r] - 1) % self.bufs[r])
        # a steady-state iteration never takes longer than its serial time, nor less than the
        # busiest resource's work in it (an advance can be smaller when work filled idle gaps)
        dep_iter = self.dependency_ns - dep_before
        period = min(max(period, max(li.load.values(), default=0.0)), li.busy + dep_iter)
        shift = rest * period
        for r in after[0]:
            if r in self.free:
                self.free[r] += shift
        for b in after[1]:
            if b in self.w_end:
                self.w_end[b] += shift
        for b in after[2]:
            if b in self.r_end:
                self.r_end[b] += shift
        for p in self.pending:  # transfers of the last scheduled iteration move with it
            p.ready += shift
            p.issue += shift
        self.dependency_ns += rest * dep_iter
        self.dma_counter += rest * li.dmas
        # idle gaps of the DMA engines inside the extrapolated iterations are not known: the
        # remembered ones all lie in the scheduled iterations or before


def _place(gaps: list, last: float, ready: float, ns: float) -> tuple[float, float]:
    """Place a transfer of ``ns`` ready at ``ready`` on DMA engines busy until ``last`` with the
    idle intervals ``gaps`` (updated in place): in the first gap it fits (transfers of different
    queues are served as they become ready), else after ``last``. Returns (its end, the new
    ``last``)."""
    for i, g in enumerate(gaps):
        g0 = g[0]
        start = g0 if g0 > ready else ready  # max(ready, g0) without the call
        end = start + ns
        if end <= g[1]:
            if start > g0 and end < g[1]:
                gaps.insert(i + 1, [end, g[1]])  # the gaps are disjoint: g is the first equal to g
                g[1] = start
            elif start > g[0]:
                g[1] = start
            elif end < g[1]:
                g[0] = end
            else:
                gaps.remove(g)
            return end, last
    start = max(ready, last)
    if start > last:
        gaps.append([last, start])
        if len(gaps) > IDLE_GAPS_KEPT:
            del gaps[0]
    return start + ns, start + ns
