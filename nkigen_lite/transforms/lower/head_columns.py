"""Per-head statistics of a row-tiled front on ScalarE, one head at a time.

A decoder layer's front normalises q and k per head: over a ``[rows, heads, D]`` tile, the sum
of squares of each head (ScalarE ``square``, then a VectorE ``tensor_reduce`` over D) and the
product by each head's ``rsqrt`` (a ``tensor_tensor`` reading the ``[rows, heads, 1]`` column
tile broadcast over D: VectorE or GpSimd, on the SBUF bus they share). At seq 2048 VectorE and
that bus bound the front's row tiles while ScalarE idles (docs/lowering.md, "Per-head columns
on ScalarE"). ScalarE only applies per-partition columns, so here one head's column is one
instruction:

- a ``tensor_tensor`` multiply of a full ``[P, H, D]`` input by a ``[P, H, 1]`` tile broadcast
  over D (stride 0) becomes H ``tensor_scalar`` multiplies, head h's column ``[P, 1]`` as
  ``operand0`` (the same fp32 product of the same elements: results bit for bit the same);
- a ``tensor_reduce`` add over D of a tile only a ``square`` activation of the same shape writes
  (and only that reduce reads) becomes H ``square`` activations with ``reduce_res`` (the
  activation's fp32 accumulator) into head h's column, the reduce gone. The sum runs in
  ScalarE's accumulation order instead of VectorE's: fp32 sums of the same terms.

Only at top level of kernels with matmuls above ``engine_balance.MAX_INSTRUCTIONS`` static
instructions, those the engine balance that follows searches (the staged search of the whole
kernel, or ``balance_windows.py`` above ``MAX_STAGED_INSTRUCTIONS``), which then moves the new
``tensor_scalar`` instructions between ScalarE and VectorE where that is shorter. Kept when
the scheduled time drops: within the staged search's cap (the Qwen3-0.6B layer at seq 128 and
512) measured after that balance, on two copies of the kernel (one rewritten), since the
balance changes which is shorter (seq 128: 118.4 against 118.2 µs, refused). The balance that
follows puts the kept copy's decisions in place instead of searching the same kernel again
(``balance_engines``' ``replay``), so the two copies cost one staged search more than the
balance alone. Above the cap (seq 2048) decided before the balance: two schedules of the kernel.
"""

from __future__ import annotations

from ...ir.clone import clone_graph
from ...ir.graph import Graph
from ...nki.access import pack
from ...nki.ops import ActivationOp, DeallocOp, NkiOp, TensorReduceOp, TensorScalarOp, TensorTensorOp
from ...nki.target import Target
from ...nki.types import Access, DimSlice, TileType
from .engine_balance import (
    MAX_INSTRUCTIONS,
    MAX_STAGED_INSTRUCTIONS,
    ScheduleOracle,
    balance_engines,
    elementwise_kernel,
)

ENGINE = "scalar"  # where the per-head instructions are put (the balance may move them)


def _head(acc: Access, h: int) -> Access:
    """Head ``h`` (dim 1) of a ``[P, H, ...]`` access."""
    d = acc.dims[1]
    return Access(acc.tensor, (acc.dims[0], DimSlice(d.offset + h * d.stride, 1, 1)) + acc.dims[2:])


def _column_of(acc: Access, like: Access) -> bool:
    """``acc`` reads a ``[P, H, 1]`` tile broadcast over the last dim of ``like``'s shape."""
    t = acc.tensor.type
    if not isinstance(t, TileType) or len(acc.dims) != 3 or len(t.shape) != 3 or t.shape[2] != 1:
        return False
    d1, d2 = acc.dims[1], acc.dims[2]
    return d2.stride == 0 and d1.stride == 1 and acc.shape == like.shape and like.dims[2].stride == 1


def _full(acc: Access) -> bool:
    t = acc.tensor.type
    return isinstance(t, TileType) and len(acc.dims) == 3 and acc.dims[2].stride == 1


def column_multiply(op, target: Target) -> tuple[str, str] | None:
    """(full input, column input) of a per-head column multiply this pass rewrites, or None."""
    if not isinstance(op, TensorTensorOp) or op.attrs["op"] != "multiply":
        return None
    dst = op.access("dst")
    if not _full(dst) or dst.dims[1].stride != 1:
        return None
    for full, col in (("data1", "data2"), ("data2", "data1")):
        a, c = op.access(full), op.access(col)
        if _full(a) and a.dims[1].stride == 1 and _column_of(c, dst) and c.dtype.name == "f32":
            names = {x.dtype.name for x in (dst, a)}
            if names <= target.dtypes_of(ENGINE) and all(x.dtype.is_float for x in (dst, a)):
                return full, col
    return None


def square_sum(op) -> ActivationOp | None:
    """The ``square`` activation whose tile a per-head ``tensor_reduce`` add over D reads (the
    reduce rewritten with it), or None."""
    if not isinstance(op, TensorReduceOp) or op.attrs["op"] != "add" or op.attrs["negate"]:
        return None
    src, dst = op.access("data"), op.access("dst")
    st = src.tensor.type
    if tuple(op.attrs["axis"]) != (2,) or not isinstance(st, TileType) or len(st.shape) != 3:
        return None
    dt = dst.tensor.type
    if not src.is_whole() or not dst.is_whole() or dst.dtype.name != "f32" or not isinstance(dt, TileType):
        return None
    if len(dt.shape) != 3 or dt.shape[2] != 1 or dt.shape[:2] != st.shape[:2]:
        return None
    users = [u.op for u in src.tensor.uses if not isinstance(u.op, DeallocOp)]
    writers = [u for u in users if u is not op]
    if len(writers) != 1 or not isinstance(writers[0], ActivationOp):
        return None
    sq = writers[0]
    if sq.parent is not op.parent or sq.attrs["op"] != "square" or sq.attrs["reduce_res"] is not None:
        return None
    if sq.attrs["bias"] is not None or sq.attrs["scale"] != 1.0 or sq.access("dst").tensor is not src.tensor:
        return None
    if not sq.access("dst").is_whole() or not _full(sq.access("data")):
        return None
    return sq


def _build(cls, items: list, loc):
    operands, attrs = pack(items)
    new = cls(operands, attrs)
    new.loc = loc
    return new


def _split_multiply(op, full: str, col: str) -> list:
    dst, a, c = op.access("dst"), op.access(full), op.access(col)
    out = []
    for h in range(dst.shape[1]):
        cd = c.dims
        column = Access(c.tensor, (cd[0], DimSlice(cd[1].offset + h, 1, 1), DimSlice(0, 1, 1)))
        out.append(
            _build(
                TensorScalarOp,
                [
                    ("dst", _head(dst, h)),
                    ("data", _head(a, h)),
                    ("op0", "multiply"),
                    ("operand0", column),
                    ("reverse0", False),
                    ("op1", None),
                    ("operand1", None),
                    ("reverse1", False),
                    ("engine", ENGINE),
                ],
                op.loc,
            )
        )
    return out


def _split_square(sq, red) -> list:
    dst, data, res = sq.access("dst"), sq.access("data"), red.access("dst")
    out = []
    for h in range(dst.shape[1]):
        rd = res.dims
        column = Access(res.tensor, (rd[0], DimSlice(rd[1].offset + h, 1, 1), rd[2]))
        out.append(
            _build(
                ActivationOp,
                [
                    ("dst", _head(dst, h)),
                    ("data", _head(data, h)),
                    ("op", "square"),
                    ("bias", None),
                    ("scale", 1.0),
                    ("reduce_res", column),
                    ("engine", ENGINE),
                ],
                sq.loc,
            )
        )
    return out


def plan(block, target: Target) -> list:
    """(ops replaced, new ops, the op they go before) per rewrite, in program order."""
    plans = []
    for op in block:
        cm = column_multiply(op, target)
        if cm is not None:
            plans.append(([op], _split_multiply(op, *cm), op))
            continue
        sq = square_sum(op)
        if sq is not None:  # at the reduce: its result's allocation follows the square
            plans.append(([sq, op], _split_square(sq, op), op))
    return plans


def searched(instrs: list) -> bool:
    """A kernel with matmuls whose engines the staged search (engine_balance.py, one schedule of
    the whole kernel per try) or the search in windows (balance_windows.py) balances."""
    return not elementwise_kernel(instrs) and len(instrs) > MAX_INSTRUCTIONS


def apply(block, plans: list) -> None:
    """Put each plan's new instructions in place of the ops it replaces, two adjacent runs
    interleaved where ``_interleave`` allows."""
    for old, new, at in plans:
        for n in new:
            block.insert_before(at, n)
        for o in old:
            block.remove(o)
    _interleave(block, [new for _, new, _ in plans])


def _tiles(ops: list, names) -> set:
    """The allocations ``ops`` access through the access attributes ``names(op)``."""
    return {op.access(n).tensor for op in ops for n in names(op) if op.access(n) is not None}


def _written(op) -> tuple:
    return op.writes


def _read(op) -> tuple:
    return tuple(n for n, _ in op.access_attrs() if n not in op.writes)


def _interleave(block, runs: list) -> None:
    """Interleave two per-head runs that follow each other in ``block`` with nothing between
    them, of the same length, where neither writes an allocation the other reads or writes
    (the two head halves of head_halves.py): each run writes its own tiles one head at a
    time, and one engine's write after the previous write to the same allocation waits for
    the same-engine dependency latency (perf/latency.py: 100 cycles, ~83 ns on ScalarE, half
    of a ``square``); alternating the runs puts the other run's instruction in that wait."""
    i = 0
    while i + 1 < len(runs):
        a, b = runs[i], runs[i + 1]
        if len(a) != len(b) or len(a) < 2 or a[-1].next_op is not b[0]:
            i += 1
            continue
        if any(x.next_op is not y for x, y in zip(a + b, (a + b)[1:])):
            i += 1
            continue
        wa, wb = _tiles(a, _written), _tiles(b, _written)
        if wa & (wb | _tiles(b, _read)) or wb & _tiles(a, _read):
            i += 1
            continue
        anchor = b[-1].next_op
        for op in a + b:
            block.remove(op)
        for x, y in zip(a, b):
            for op in (x, y):
                if anchor is None:
                    block.append(op)
                else:
                    block.insert_before(anchor, op)
        i += 2


def _balanced(graph: Graph, target: Target, rewrite: bool) -> tuple[float, tuple | None]:
    """The scheduled time of a copy of ``graph``, rewritten or not, after the staged engine
    balance the pass is followed by (the copy is dropped), and that balance's record
    (``balance_engines``; None when it searched nothing)."""
    trial = clone_graph(graph)
    if rewrite:
        plans = plan(trial.body, target)
        apply(trial.body, plans)
        for old, _, _ in plans:
            for o in old:
                o.drop_operand_uses()
    record: list = []
    balance_engines(trial, target, None, ScheduleOracle(trial, target), True, record)
    return ScheduleOracle(trial, target).makespan(), (record[0] if record else None)


def _rewrite_after_balance(graph: Graph, target: Target, decided: list | None) -> bool:
    """Whether the rewritten copy of ``graph`` is shorter than the other after the staged
    balance; the kept copy's balance record goes to ``decided`` (when given and recorded)."""
    rewritten, record = _balanced(graph, target, True)
    kept, kept_record = _balanced(graph, target, False)
    keep = rewritten < kept
    chosen = record if keep else kept_record
    if decided is not None and chosen is not None:
        decided.append(chosen)
    return keep


def split_head_columns(graph: Graph, target: Target, decided: list | None = None) -> int:
    """Rewrite the per-head column instructions of ``graph`` (module docstring) when that
    shortens its scheduled time; returns how many instructions were replaced (0: none).
    ``decided``: when given, receives the record of the staged engine balance of the copy
    kept (``balance_engines``' ``replay``: the balance that follows puts its states in place
    instead of searching the same kernel again)."""
    block = graph.body
    instrs = [op for op in block.walk() if isinstance(op, NkiOp)]
    if not searched(instrs):
        return 0
    if not any(column_multiply(op, target) or square_sum(op) for op in block):
        return 0
    staged = len(instrs) <= MAX_STAGED_INSTRUCTIONS
    if staged and not _rewrite_after_balance(graph, target, decided):
        return 0  # decided after the balance, on copies
    plans = plan(block, target)
    if staged:
        apply(block, plans)
        for old, _, _ in plans:
            for o in old:
                o.drop_operand_uses()
        return sum(len(old) for old, _, _ in plans)
    before = list(block)
    base = ScheduleOracle(graph, target).makespan()
    apply(block, plans)
    if ScheduleOracle(graph, target).makespan() < base:
        for old, _, _ in plans:
            for o in old:
                o.drop_operand_uses()
        return sum(len(old) for old, _, _ in plans)
    for _, new, _ in plans:
        for n in new:
            n.erase()
    for op in list(block):
        block.remove(op)
    for op in before:
        block.append(op)
    return 0
