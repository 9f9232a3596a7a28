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
must also accept every operand's dtype (``Target.dtypes_of``). Kernels above
``MAX_INSTRUCTIONS`` static instructions keep their engines (each try schedules the kernel once),
so the pass costs at most a fixed number of schedules of a bounded kernel.
"""

from __future__ import annotations

from ...ir.graph import Graph
from ...nki.access import pack
from ...nki.ops import ForiLoopOp, NkiOp, TensorCopyOp, TensorScalarOp, TensorTensorOp
from ...nki.target import Target
from ...nki.types import MemorySpace
from ...perf.instruction_cost import instruction_cost
from ...perf.schedule import Scheduler

MAX_INSTRUCTIONS = 400  # static NKI instructions of a kernel whose engines are searched
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


def _instructions(block, out: list) -> None:
    for op in block:
        if isinstance(op, ForiLoopOp):
            _instructions(op.body, out)
        elif isinstance(op, NkiOp):
            out.append(op)


class _Oracle:
    """The scheduled time of the kernel, with per-instruction facts cached across schedules
    (instructions replaced are kept alive so that their ids are never reused)."""

    def __init__(self, graph: Graph, target: Target):
        self.graph, self.target = graph, target
        self.costs: dict = {}
        self.info: dict = {}
        self.replaced: list = []

    def makespan(self) -> float:
        sched = Scheduler(self.target, self.costs)
        sched.info = self.info
        sched.run(self.graph.body)
        return sched.makespan


def balance_engines(graph: Graph, target: Target) -> int:
    """Move instructions to other engines where the scheduled time drops (module docstring);
    returns how many instructions end on another engine than they started on."""
    instrs: list = []
    _instructions(graph.body, instrs)
    if len(instrs) > MAX_INSTRUCTIONS:
        return 0
    movable = [(op, candidates(op, target)) for op in instrs]
    movable = [(op, c) for op, c in movable if len(c) > 1]
    if not movable:
        return 0
    cur = [op for op, _ in movable]
    start = [op.engine for op in cur]
    oracle = _Oracle(graph, target)

    def assign(moves: list) -> list:
        """Put ``cur[i]`` on engine ``e`` for every (i, e); returns the moves undoing it."""
        undo = []
        for i, e in moves:
            if cur[i].engine != e:
                undo.append((i, cur[i].engine))
                oracle.replaced.append(cur[i])
                cur[i] = with_engine(cur[i], e)
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

    # every instruction of one source op (the same loc: its tiles, its pipeline stages) together
    groups: dict = {}
    for i, (op, engines) in enumerate(movable):
        groups.setdefault((op.loc or op.name, op.name, engines), []).append(i)
    cost = [instruction_cost(op, target).ns for op in cur]
    by_work = sorted(groups.items(), key=lambda kv: (-sum(cost[i] for i in kv[1]), kv[1][0]))
    for (_, _, engines), members in by_work[:MAX_MOVABLE]:
        for e in engines:
            attempt([(i, e) for i in members])
    # then one instruction at a time, the costliest first
    order = sorted(range(len(cur)), key=lambda i: (-cost[i], i))
    for i in order[:MAX_MOVABLE]:
        for e in movable[i][1]:
            if attempt([(i, e)]):
                break
    return sum(op.engine != e for op, e in zip(cur, start))
