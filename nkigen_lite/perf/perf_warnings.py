"""Performance warnings: which source op makes a kernel slow or move too many bytes, and why.

``kernel_warnings(graph)`` (``Kernel.warnings()``) warns when the scheduled estimate exceeds
``TIME_RATIO_LIMIT`` x the roofline or the HBM traffic exceeds ``TRAFFIC_RATIO_LIMIT`` x the
minimum. Each warning names the source op (the NKI ``loc``, e.g. ``tensor.reduce %sum``) and a
reason read off its NKI instructions:

- ``np.repeat materialised in HBM``: an HBM -> HBM DMA from a stride-0 (broadcast) view;
- ``copy materialised in HBM``: another HBM -> HBM DMA;
- ``intermediate materialised in HBM``: a store into an HBM scratch tensor (not an output);
- ``weights reloaded per row tile``: a kernel input TensorE reads (a matmul or transpose
  operand) loaded from HBM at least twice over; ``input re-read`` for other inputs;
- ``element-wise DMA descriptors`` / ``small DMA descriptors``: a DMA whose contiguous chunk
  is one element / below ``SMALL_DESCRIPTOR_BYTES``;
- ``reduction on N partition(s)`` / ``N of 128 partitions``: work on few partitions (also a DMA
  that reaches few DMA engines);
- ``DMA and compute serialised``: the schedule is far above the overlapped lower bound plus
  the fixed DMA latency no schedule hides (loop tiles without a rotating buffer, so loads wait
  for the previous iteration's compute, or engines waiting on each other's results); given to
  the busiest op and to every other named op without a finding of its own;
- ``fixed DMA latency``: otherwise, when the kernel is small: within ``TIME_RATIO_LIMIT`` x
  its roofline plus the first load's and the last store's fixed costs (HW-DGE issue and
  first-byte latency, ``fixed_dma_latency_ns``); one warning, on the busiest op.

Time findings are weighted by the busy time they cover, traffic findings by the HBM bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.graph import Block, Graph, ReturnOp
from ..nki.ops import (
    ActivationOp,
    DmaCopyOp,
    ForiLoopOp,
    HbmViewOp,
    MatmulOp,
    TensorReduceOp,
    TransposeOp,
)
from ..nki.target import TRN2, Target
from ..nki.types import HbmType
from .costmodel import Estimate, estimate
from .dma_cost import dma_cost
from .instruction_cost import FREE_OPS, instruction_cost
from .stats import KernelStats, kernel_stats

TIME_RATIO_LIMIT = 3.0  # warn when scheduled / roofline exceeds this
TRAFFIC_RATIO_LIMIT = 2.0  # warn when HBM traffic / minimum exceeds this
FEW_PARTITIONS = 32  # fewer partitions than this is "few" (a quarter of the array)
SMALL_DESCRIPTOR_BYTES = 512  # contiguous DMA chunks below this are "small"
SERIALISED_RATIO = 1.5  # scheduled / lower bound above this: "DMA and compute serialised"
MAX_WARNINGS_PER_KIND = 3


def fixed_dma_latency_ns(target: Target) -> float:
    """The fixed DMA cost no schedule overlaps: the first load's before any compute starts and
    the last store's after it ends (issue and first-byte latency each)."""
    return 2 * (target.dge_issue_ns + target.dma_first_byte_latency_ns)


@dataclass(frozen=True)
class PerfWarning:
    """One performance warning: the source op responsible, the reason, and what triggered it
    (``kind`` "time": scheduled / roofline; "traffic": HBM bytes / minimum)."""

    op: str
    reason: str
    kind: str
    ratio: float  # the kernel's scheduled / roofline or traffic / minimum
    share: float  # the op's share of the kernel's busy time or HBM traffic

    def __str__(self) -> str:
        what = "roofline" if self.kind == "time" else "minimum HBM traffic"
        part = "busy time" if self.kind == "time" else "HBM traffic"
        return (
            f"performance warning: {self.op}: {self.reason} (kernel {self.ratio:.1f}x "
            f"{what}; this op {self.share:.0%} of {part})"
        )


class _Findings:
    """Per source op: busy time, HBM bytes, and weighted reasons of each kind."""

    def __init__(self):
        self.hbm: dict[str, float] = {}
        self.time: dict[str, dict[str, float]] = {}
        self.traffic: dict[str, dict[str, float]] = {}
        self.input_reads: dict[int, float] = {}
        self.input_locs: dict[int, dict[str, float]] = {}
        self.pe_operands: set[int] = set()  # tiles TensorE reads (matmul / transpose operands)
        self.weights: set[int] = set()  # kernel inputs loaded into such tiles

    @staticmethod
    def _add(table, loc, reason, weight):
        reasons = table.setdefault(loc, {})
        reasons[reason] = reasons.get(reason, 0.0) + weight


def _loc(op) -> str:
    return op.loc or op.name


def _hbm_root(access):
    """(root value, strides of the accessed view) of an HBM access."""
    v = access.tensor
    op = v.defining_op
    if isinstance(op, HbmViewOp):
        return op.operand(0), tuple(op.attrs["strides"])
    return v, None


def _broadcast(access) -> bool:
    _, strides = _hbm_root(access)
    if strides is None:
        return False
    return any(s == 0 and n > 1 for s, n in zip(strides, access.tensor.type.shape))


def _partitions(n: int) -> str:
    return f"{n} partition" + ("" if n == 1 else "s")


def _dma(op, mult, f: _Findings, inputs: dict, scratch: set, target: Target) -> None:
    loc = _loc(op)
    d = dma_cost(op, target)
    t = mult * (d.transfer_ns + target.dge_issue_ns)
    dst, src = op.access("dst"), op.access("src")
    hbm_sides = [a for a in (dst, src) if isinstance(a.tensor.type, HbmType)]
    f.hbm[loc] = f.hbm.get(loc, 0.0) + mult * d.hbm_bytes
    if len(hbm_sides) == 2:
        reason = (
            "np.repeat materialised in HBM"
            if _broadcast(src)
            else "copy materialised in HBM (HBM -> HBM DMA)"
        )
        f._add(f.traffic, loc, reason, mult * d.hbm_bytes)
        f._add(f.time, loc, reason, t)
    elif isinstance(dst.tensor.type, HbmType) and id(_hbm_root(dst)[0]) in scratch:
        f._add(f.traffic, loc, "intermediate materialised in HBM", mult * d.hbm_bytes)
    elif isinstance(src.tensor.type, HbmType):
        root = id(_hbm_root(src)[0])
        if root in inputs:
            nbytes = mult * dst.size * src.dtype.itemsize
            f.input_reads[root] = f.input_reads.get(root, 0.0) + nbytes
            locs = f.input_locs.setdefault(root, {})
            locs[loc] = locs.get(loc, 0.0) + nbytes
            if id(dst.tensor) in f.pe_operands:
                f.weights.add(root)
    itemsize = max(dst.dtype.itemsize, src.dtype.itemsize)
    if d.chunk_bytes <= itemsize and dst.size > 1:
        f._add(f.time, loc, f"element-wise DMA descriptors ({d.chunk_bytes} B each)", t)
    elif d.chunk_bytes < SMALL_DESCRIPTOR_BYTES and d.chunk_bytes < dst.size * itemsize:
        f._add(f.time, loc, f"small DMA descriptors ({d.chunk_bytes} B contiguous)", t)
    if len(hbm_sides) < 2 and d.partitions < FEW_PARTITIONS:
        f._add(
            f.time,
            loc,
            f"DMA over {_partitions(d.partitions)} uses {d.engines} of {target.dma_engines} DMA engines",
            t,
        )


def _compute(op, mult, f: _Findings, target: Target) -> None:
    loc = _loc(op)
    c = instruction_cost(op, target)
    t = mult * c.ns
    data = op.access("data") if "data" in dict(op.access_attrs()) else None
    parts = max(op.access(n).partitions for n, _ in op.access_attrs())
    reduces = isinstance(op, TensorReduceOp) or (
        isinstance(op, ActivationOp) and op.attrs["reduce_res"] is not None
    )
    if reduces and data is not None and data.partitions < FEW_PARTITIONS:
        f._add(f.time, loc, f"reduction on {_partitions(data.partitions)}", t)
    elif parts < FEW_PARTITIONS:
        f._add(f.time, loc, f"{c.engine} work on {parts} of {target.num_partitions} partitions", t)


def _walk(block: Block, mult: int, f: _Findings, inputs: dict, scratch: set, target) -> None:
    for op in block:
        if isinstance(op, ForiLoopOp):
            _walk(op.body, mult * op.trip_count, f, inputs, scratch, target)
        elif isinstance(op, DmaCopyOp):
            _dma(op, mult, f, inputs, scratch, target)
        elif not isinstance(op, (ReturnOp, *FREE_OPS)):
            _compute(op, mult, f, target)


def _reason(reasons: dict[str, float]) -> str:
    """The heaviest reasons (those within a quarter of the heaviest), heaviest first."""
    ranked = sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))
    top = ranked[0][1]
    return "; ".join(r for r, w in ranked if w >= 0.25 * top)


def _time_warnings(est: Estimate, f: _Findings, target: Target) -> list[PerfWarning]:
    """The time warnings of a kernel above TIME_RATIO_LIMIT x its roofline: its busiest ops,
    each with its findings, the serialisation or the fixed-latency reason."""
    out: list[PerfWarning] = []
    total = sum(est.by_op_ns.values()) or 1.0
    ranked = sorted(est.by_op_ns.items(), key=lambda kv: (-kv[1], kv[0]))
    fixed = fixed_dma_latency_ns(target) if est.dma_bytes else 0.0
    floor = est.lower_bound_ns + fixed
    serialised = est.scheduled_ns / floor if floor else 1.0
    small = fixed > 0 and est.scheduled_ns <= TIME_RATIO_LIMIT * (est.roofline_ns + fixed)
    for loc, busy in ranked[:MAX_WARNINGS_PER_KIND]:
        if busy < 0.25 * ranked[0][1]:
            break
        reasons = dict(f.time.get(loc, {}))
        if serialised > SERIALISED_RATIO and (loc == ranked[0][0] or not reasons):
            reasons[
                f"DMA and compute serialised (loop tiles with too few buffers or engines waiting "
                f"on each other: scheduled {serialised:.1f}x the overlapped lower bound plus "
                f"the fixed DMA latency)"
            ] = est.scheduled_ns - floor
        elif not reasons and loc == ranked[0][0] and small:
            reasons[
                f"fixed DMA latency (a small kernel: the first load's and the last store's "
                f"fixed costs, {fixed / 1e3:.1f} us, against a {est.roofline_ns / 1e3:.1f} us "
                f"roofline)"
            ] = fixed
        if not reasons:
            if small:
                continue  # the latency warning on the busiest op covers a small kernel
            reasons = {f"{busy / total:.0%} of the kernel's busy time": busy}
        out.append(PerfWarning(loc, _reason(reasons), "time", est.ratio, busy / total))
    return out


def kernel_warnings(
    graph: Graph, target: Target = TRN2, est: Estimate | None = None, stats: KernelStats | None = None
) -> list[PerfWarning]:
    """Performance warnings of an NKI kernel graph (empty when it is within the limits)."""
    est = est if est is not None else estimate(graph, target)
    stats = stats if stats is not None else kernel_stats(graph, target)
    inputs = {id(v): name for name, v in zip(graph.input_names, graph.inputs)}
    outputs = {id(v) for v in graph.outputs.values()}
    scratch = {
        id(op.results[0])
        for op in graph.walk()
        if op.name == "nki.alloc"
        and isinstance(op.results[0].type, HbmType)
        and id(op.results[0]) not in outputs
    }
    f = _Findings()
    for op in graph.walk():
        if isinstance(op, (MatmulOp, TransposeOp)) and op.engine == "tensor":
            f.pe_operands.update(id(op.access(n).tensor) for n, _ in op.access_attrs() if n not in op.writes)
    _walk(graph.body, 1, f, inputs, scratch, target)
    for root, nbytes in f.input_reads.items():
        size = next(v.type.size * v.type.dtype.itemsize for v in graph.inputs if id(v) == root)
        if nbytes >= 2 * size:
            times = f"{inputs[root]} read {nbytes / size:.1f}x from HBM"
            reason = (
                f"weights reloaded per row tile ({times})"
                if root in f.weights
                else f"input re-read ({times})"
            )
            for loc, b in f.input_locs[root].items():
                f._add(f.traffic, loc, reason, b - size * b / nbytes)
    warnings: list[PerfWarning] = []
    if est.ratio > TIME_RATIO_LIMIT:
        warnings += _time_warnings(est, f, target)
    if stats.hbm_traffic_ratio > TRAFFIC_RATIO_LIMIT:
        total = sum(f.hbm.values()) or 1.0
        ranked = sorted(f.traffic.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))
        if not ranked:
            ranked = [
                (loc, {"most HBM traffic": b})
                for loc, b in sorted(f.hbm.items(), key=lambda kv: (-kv[1], kv[0]))[:1]
            ]
        seen: set[str] = set()
        for loc, reasons in ranked:  # one op per distinct reason
            reason = _reason(reasons)
            if reason in seen or len(seen) == MAX_WARNINGS_PER_KIND:
                continue
            seen.add(reason)
            warnings.append(
                PerfWarning(loc, reason, "traffic", stats.hbm_traffic_ratio, f.hbm.get(loc, 0.0) / total)
            )
    return warnings
