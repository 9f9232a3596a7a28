"""Engines of movable elementwise instructions chosen against the scheduled estimate.

The tile rules pick an engine per instruction as they emit it, from a running count of elements
per engine (frame.py); that count knows neither the engines' real costs (a GpSimd
``tensor_tensor`` pays ~150 cycles to start and runs at 1.2 GHz, VectorE reads two SBUF streams
at 0.96 GHz, ScalarE runs a ``tensor_scalar`` at 1.2 GHz) nor the order the engines meet their
work in. Here each instruction that several engines run with the same result is tried on its
other engines, one at a time, largest first, and moved when the kernel's list-scheduled time
(perf/schedule.py, the VectorE / GpSimd shared SBUF port included) gets shorter.

Movable, with the same bits on every engine listed (every engine computes in fp32 and rounds
once into ``dst``):

- float ``tensor_tensor`` add / subtract / multiply / maximum / minimum with every operand in
  SBUF: VectorE or GpSimd;
- float ``tensor_scalar`` of one ``add`` or ``multiply``, or ``multiply`` then ``add``,
  unreversed: VectorE or ScalarE (the ScalarE forms ``Target.scalar_tensor_scalar_ops`` lists;
  GpSimd's is documented only for rsqrt);
- float → float ``tensor_copy``: VectorE or ScalarE.

Integer arithmetic stays where the lowering put it (GpSimd's is exact). Each candidate engine
must also accept every operand's dtype (``Target.dtypes_of``). Searched (``searched``):
elementwise and normalising kernels (``elementwise_kernel``: TensorE does at most row
broadcasts) of at most ``MAX_INSTRUCTIONS`` static instructions, and kernels with matmuls of
more, up to ``MAX_STAGED_INSTRUCTIONS`` (compile time) — multi-stage kernels such as a decoder layer, whose
stages (front norms and RoPE, attention, the MLP) each chose engines without seeing the
others' load; smaller matmul and attention kernels keep the engines their lowerings chose. Each
try schedules the kernel once, so the pass costs at most a fixed number of schedules of a
bounded kernel.
"""

from __future__ import annotations

from ...ir.graph import Graph
from ...nki.access import pack
from ...nki.ops import DeallocOp, ForiLoopOp, MatmulOp, NkiOp, TensorCopyOp, TensorScalarOp, TensorTensorOp
from ...nki.target import Target
from ...nki.types import MemorySpace
from ...perf.instruction_cost import FREE_OPS, instruction_cost
from ...perf.schedule import Scheduler
from .psum_rows import broadcast_rows, drop_unread_rows, psum_variant, psum_variant_possible

MAX_INSTRUCTIONS = 400  # static NKI instructions of a kernel whose engines are searched
MAX_STAGED_INSTRUCTIONS = 3000  # the same for kernels with matmuls (each try: one schedule)
MAX_MOVABLE = 64  # movable instructions tried (the costliest first)
_TT_ALU = ("add", "subtract", "multiply", "maximum", "minimum")


def _accesses(op):
    return [op.access(n) for n, _ in op.access_attrs() if op.access(n) is not None]


def _all_float(op) -> bool:
    return all(a.dtype.is_float for a in _accesses(op))


def candidates(op, target: Target) -> tuple[str, ...]:
    """The engines ``op`` may run on with the same result (module docstring), or ()."""
    if isinstance(op, TensorTensorOp):
        if op.attrs["op"] not in _TT_ALU or not _all_float(op):
            return ()
        if any(a.space is not MemorySpace.SBUF for a in _accesses(op)):
            return ()
        engines = ("vector", "gpsimd")
    elif isinstance(op, TensorScalarOp):
        chain = (op.attrs["op0"],) + ((op.attrs["op1"],) if op.attrs["op1"] else ())
        if chain not in target.scalar_tensor_scalar_ops or op.attrs["reverse0"] or op.attrs["reverse1"]:
            return ()
        if not _all_float(op):
            return ()
        engines = ("vector", "scalar")
    elif isinstance(op, TensorCopyOp):
        if not _all_float(op):
            return ()
        engines = ("vector", "scalar")
    else:
        return ()
    if op.engine not in engines:
        return ()
    return tuple(e for e in engines if all(a.dtype.name in target.dtypes_of(e) for a in _accesses(op)))


def with_engine(op, engine: str):
    """A copy of ``op`` running on ``engine``, put in its place (``op`` is erased)."""
    new = rebuilt(op, engine)
    op.parent.insert_before(op, new)
    op.erase()
    return new


def rebuilt(op, engine: str):
    """A new, unplaced copy of ``op`` running on ``engine`` (its operands' uses registered)."""
    items = []
    accs = dict(op.access_attrs())
    for a in op.attr_spec:
        if a.name == "engine":
            items.append((a.name, engine))
        elif a.name in accs and op.access(a.name) is not None:
            items.append((a.name, op.access(a.name)))
        else:
            items.append((a.name, op.attrs[a.name]))
    operands, attrs = pack(items)
    new = type(op)(operands, attrs)
    new.loc = op.loc
    return new


def searched(instrs: list, staged: bool = False) -> bool:
    """Whether the kernel's engines are searched: an elementwise kernel of at most
    ``MAX_INSTRUCTIONS`` static instructions, or (``staged``: the search run after the load
    hoisting) a kernel with matmuls of more (a multi-stage kernel such as a decoder layer,
    whose stages chose their engines without seeing each other's load), up to
    ``MAX_STAGED_INSTRUCTIONS``."""
    if elementwise_kernel(instrs):
        return not staged and len(instrs) <= MAX_INSTRUCTIONS
    return staged and MAX_INSTRUCTIONS < len(instrs) <= MAX_STAGED_INSTRUCTIONS


def elementwise_kernel(instrs: list) -> bool:
    """The kernel's TensorE work is at most row broadcasts (``ones[1,P]ᵀ · row`` matmuls, one
    partition of contraction): an elementwise / normalising kernel. Kernels with matmuls or
    transposes keep the engines and order their lowerings chose (matmul_lead.py,
    matmul_prefetch.py, attention: evacuation engines and prefetch orders of their own)."""
    for op in instrs:
        if isinstance(op, MatmulOp):
            if op.access("stationary").dims[0].size != 1:
                return False
        elif getattr(op, "engine", None) == "tensor":
            return False
    return True


def _instructions(block, out: list) -> None:
    for op in block:
        if isinstance(op, ForiLoopOp):
            _instructions(op.body, out)
        elif isinstance(op, NkiOp):
            out.append(op)


class ScheduleOracle:
    """The scheduled time of a kernel (perf/schedule.py), with per-instruction costs and
    accesses cached across schedules for one pass over one graph (instructions replaced or
    built to be costed are kept alive in ``replaced``, so that their ids are never reused)."""

    def __init__(self, graph: Graph, target: Target):
        self.graph, self.target = graph, target
        self.costs: dict = {}
        self.info: dict = {}
        self.replaced: list = []

    def cost(self, op, target: Target | None = None):  # noqa: ARG002  (a cost-function signature)
        """``instruction_cost(op)``, cached (the op kept alive)."""
        c = self.costs.get(id(op))
        if c is None:
            c = self.costs[id(op)] = instruction_cost(op, self.target)
            self.replaced.append(op)
        return c

    def makespan(self) -> float:
        instrs: list = []
        _instructions(self.graph.body, instrs)
        for op in instrs:
            if not isinstance(op, FREE_OPS):
                self.cost(op)
        sched = Scheduler(self.target, self.costs)
        sched.info = self.info
        sched.run(self.graph.body)
        return sched.makespan


PSUM_READ = "vector, row from PSUM"  # the state of an instruction reading a broadcast row's banks


class _Movable:
    """One movable instruction: its states (engines, and PSUM_READ when it reads a broadcast
    row, psum_rows.py), the form of each state tried (one op, or the PSUM pieces; built once,
    detached from the block while another form is in place) and the state it is in."""

    def __init__(self, op, states: tuple, rows: dict):
        self.tmpl, self.states, self.rows = op, states, rows
        self.state = op.engine
        self.forms = {op.engine: [op]}

    def set(self, state: str) -> None:
        if state == self.state:
            return
        cur = self.forms[self.state]
        new = self.forms.get(state)
        if new is None:
            tmpl = self.tmpl
            new = psum_variant(tmpl, self.rows) if state == PSUM_READ else [rebuilt(tmpl, state)]
            self.forms[state] = new
        anchor = cur[0]
        for op in new:
            anchor.parent.insert_before(anchor, op)
        for op in cur:
            op.parent.remove(op)
        self.state = state

    def finish(self, keep: list) -> None:
        """Drop the operand uses of the forms not in place (kept alive in ``keep``)."""
        for st, ops in self.forms.items():
            if st != self.state:
                for op in ops:
                    op.drop_operand_uses()
                    keep.append(op)


def balance_engines(
    graph: Graph,
    target: Target,
    insert_deallocs=None,
    oracle=None,
    staged=False,
    record: list | None = None,
    replay: tuple | None = None,
) -> int:
    """Move instructions to other engines (or to reading a broadcast row from PSUM, in a
    straight-line kernel, when ``insert_deallocs`` is given to move the banks' deallocations)
    where the scheduled time drops (module docstring); returns how many end in another form.
    ``oracle``: a ScheduleOracle of ``graph`` shared with other passes (its caches).

    ``record``: a list that receives ``(states, makespan)``, the state each movable instruction
    ends in and the scheduled time after the search. ``replay``: such a record from the search
    of a kernel of the same structure (a ``clone_graph`` copy of this one, head_columns.py):
    the search is deterministic, so its states are put in place without searching again; when
    they do not fit this kernel's movable instructions or do not give the recorded time, they
    are undone and the search runs."""
    instrs: list = []
    _instructions(graph.body, instrs)
    if not searched(instrs, staged):
        return 0
    straight = not any(isinstance(op, ForiLoopOp) for op in graph.body)
    rows = broadcast_rows(instrs, target) if straight and insert_deallocs else {}
    movable = []
    for op in instrs:
        states = candidates(op, target)
        if rows and psum_variant_possible(op, rows):
            states = tuple(dict.fromkeys(states + (op.engine, PSUM_READ)))
        if len(states) > 1:
            movable.append(_Movable(op, states, rows))
    if not movable:
        return 0
    oracle = oracle or ScheduleOracle(graph, target)
    if not (replay and _replayed(movable, oracle, replay)):
        _search(movable, oracle)
    if record is not None:
        record.append((tuple(m.state for m in movable), oracle.makespan()))
    for m in movable:
        m.finish(oracle.replaced)
    if any(m.state == PSUM_READ for m in movable):
        drop_unread_rows(graph.body, rows)
        for op in list(graph.body):
            if isinstance(op, DeallocOp):
                op.erase()
        insert_deallocs(graph.body)
    return sum(m.state != m.tmpl.engine for m in movable)


def _replayed(movable: list, oracle: ScheduleOracle, replay: tuple) -> bool:
    """Put each movable instruction in its state of ``replay`` (``balance_engines``); False
    (every instruction back in its first state) when the states do not fit or the scheduled
    time is not the recorded one."""
    states, makespan = replay
    if len(states) != len(movable) or any(st not in m.states for m, st in zip(movable, states)):
        return False
    for m, st in zip(movable, states):
        m.set(st)
    if oracle.makespan() == makespan:
        return True
    for m in movable:
        m.set(m.tmpl.engine)
    return False


def _search(movable: list, oracle: ScheduleOracle) -> None:
    """Greedy: whole source ops (the same loc) into each state, the costliest first, then one
    instruction at a time; a move is kept when the scheduled time drops."""

    def assign(moves: list) -> list:
        undo = []
        for i, st in moves:
            m = movable[i]
            if m.state != st:
                undo.append((i, m.state))
                m.set(st)
        return undo

    best = oracle.makespan()

    def attempt(moves: list) -> bool:
        nonlocal best
        undo = assign(moves)
        if not undo:
            return False
        t = oracle.makespan()
        if t < best - 1e-6:
            best = t
            return True
        assign(undo)
        return False

    groups: dict = {}
    for i, m in enumerate(movable):
        groups.setdefault((m.tmpl.loc or m.tmpl.name, m.tmpl.name, m.states), []).append(i)
    cost = [oracle.cost(m.tmpl).ns for m in movable]
    by_work = sorted(groups.items(), key=lambda kv: (-sum(cost[i] for i in kv[1]), kv[1][0]))
    for (_, _, states), members in by_work[:MAX_MOVABLE]:
        for st in states:
            attempt([(i, st) for i in members])
    # then one instruction at a time, the costliest first (a source op of one instruction was
    # tried above)
    alone = {kv[1][0] for kv in by_work[:MAX_MOVABLE] if len(kv[1]) == 1}
    order = sorted((i for i in range(len(movable)) if i not in alone), key=lambda i: (-cost[i], i))
    for i in order[:MAX_MOVABLE]:
        for st in movable[i].states:
            if attempt([(i, st)]):
                break
