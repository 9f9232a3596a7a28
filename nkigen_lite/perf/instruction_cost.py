"""Per-instruction cost rules of the trn2 cost model, one per NKI op class.

Each rule gives the steady-state (pipelined) time an instruction occupies its engine, from the
facts sheet §1.7 / §7.2 formulas in engine cycles, converted with the engine clock. N is the
elements per partition of the largest operand; P (partitions) does not change the time.
Every number comes from the ``Target``. ``COST_RULES`` is keyed by op class and covers every
NKI instruction; ``FREE_OPS`` (allocation, deallocation, HBM views, the program id) cost nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.errors import VerifyError
from ..nki.ops import (
    ActivationOp,
    AffineSelectOp,
    AllocOp,
    DeallocOp,
    DmaCopyOp,
    DmaGatherOp,
    DmaScatterOp,
    DmaTransposeOp,
    HbmViewOp,
    IotaOp,
    MatmulOp,
    MemsetOp,
    ProgramIdOp,
    SelectOp,
    TensorCopyOp,
    TensorReduceOp,
    TensorScalarOp,
    TensorTensorOp,
    TransposeOp,
)
from ..nki.target import Target
from ..nki.types import MemorySpace
from .dma_cost import dma_cost
from .layout import unit_stride
from .op_memo import remembered

FREE_OPS = (AllocOp, DeallocOp, HbmViewOp, ProgramIdOp)


@dataclass(frozen=True)
class InstructionCost:
    """One instruction's engine, its busy time there (a DMA: its transfer time), its engine
    cycles (None for a DMA), for a matmul its FLOPs and the peak FLOP/s of its dtypes, for a
    DMA the bytes it moves; ``sbuf_port`` when it occupies the SBUF bus VectorE and GpSimd share
    (every GpSimd instruction, VectorE in performance mode; facts §1.4)."""

    engine: str
    ns: float
    cycles: float | None = None
    flops: int = 0
    peak_flops_per_s: float = 0.0
    bytes: int = 0
    sbuf_port: bool = False


def clock_hz(engine: str, target: Target) -> float:
    """Clock of a compute engine."""
    return {
        "tensor": target.tensor_clock_hz,
        "vector": target.vector_clock_hz,
        "scalar": target.scalar_clock_hz,
        "gpsimd": target.gpsimd_clock_hz,
    }[engine]


def _cycles(op, cycles: float, target: Target, port: bool = False) -> InstructionCost:
    return InstructionCost(
        op.engine,
        cycles * 1e9 / clock_hz(op.engine, target),
        cycles,
        sbuf_port=port and target.vector_gpsimd_shared_sbuf_port,
    )


def _accesses(op) -> list:
    return [op.access(name) for name, _ in op.access_attrs()]


def _n(op) -> int:
    """Elements per partition of the op's largest access."""
    return max(a.free_size for a in _accesses(op))


def _streams(inputs) -> int:
    """Input tile streams one pass reads: SBUF and PSUM have separate read ports, so an input in
    each costs one pass, two in the same memory two (facts §1.7: 2N for two SBUF inputs, N when
    one is in PSUM)."""
    sbuf = sum(1 for a in inputs if a.space is MemorySpace.SBUF)
    return max(sbuf, len(inputs) - sbuf, 1)


def _min_ii(cycles: float, target: Target) -> float:
    return max(target.min_ii_cycles, cycles)


def _gpsimd(op, n_inputs: int, target: Target) -> InstructionCost:
    # GpSimd: GPSIMD_START + N per input stream (iota / affine_select: 150 + N) [OLD-ISA]
    return _cycles(op, target.gpsimd_start_cycles + n_inputs * _n(op), target, port=True)


def _vector_single(op, target: Target) -> InstructionCost:
    """tensor_copy / tensor_scalar on VectorE: max(MIN_II, N / perf-mode factor)."""
    acc = [op.access("dst"), op.access("src" if isinstance(op, TensorCopyOp) else "data")]
    factor = 1
    if all(a.dtype.name in target.vector_fast_dtypes for a in acc):
        fast = all(a.space is MemorySpace.SBUF and unit_stride(a) for a in acc)
        factor = target.vector_perf_mode_sbuf_factor if fast else target.vector_perf_mode_other_factor
    return _cycles(op, _min_ii(_n(op) / factor, target), target, port=factor > 1)


def _tensor_copy(op, target: Target) -> InstructionCost:
    if op.engine == "vector":
        return _vector_single(op, target)
    if op.engine == "gpsimd":
        return _gpsimd(op, 1, target)
    return _cycles(op, _min_ii(_n(op), target), target)


def _tensor_scalar(op, target: Target) -> InstructionCost:
    return _tensor_copy(op, target)  # one or two ops cost the same [OLD-ISA]


def _tensor_tensor(op, target: Target) -> InstructionCost:
    ins = [op.access("data1"), op.access("data2")]
    if op.engine == "gpsimd":
        return _gpsimd(op, len(ins), target)
    cycles = _streams(ins) * _n(op)
    fast = (
        op.engine == "vector"
        and all(a.dtype.name in target.vector_fast_dtypes for a in [*ins, op.access("dst")])
        and all(a.space is MemorySpace.SBUF for a in ins)
    )
    if fast:
        cycles /= target.vector_perf_mode_other_factor
    return _cycles(op, _min_ii(cycles, target), target, port=fast)


def _activation(op, target: Target) -> InstructionCost:
    # max(MIN_II, N); the accumulator read-out of reduce_res adds MIN_II [OLD-ISA] [ARCH-T1]
    extra = target.min_ii_cycles if op.attrs["reduce_res"] is not None else 0
    return _cycles(op, _min_ii(_n(op), target) + extra, target)


def _tensor_reduce(op, target: Target) -> InstructionCost:
    data, dst = op.access("data"), op.access("dst")
    factor = 1
    if (
        op.attrs["op"] in target.vector_fast_reduce_ops
        and {data.dtype.name, dst.dtype.name} <= target.vector_fast_reduce_dtypes
    ):
        factor = target.vector_fast_reduce_factor
    return _cycles(op, _min_ii(data.free_size / factor, target), target)


def _memset(op, target: Target) -> InstructionCost:
    if op.engine == "gpsimd":
        return _gpsimd(op, 1, target)
    factor = 1
    if op.attrs["value"] == 0 and op.access("dst").dtype.name in target.vector_fast_dtypes:
        factor = target.vector_memset_zero_factor
    return _cycles(op, _min_ii(_n(op) / factor, target), target)


def _iota(op, target: Target) -> InstructionCost:
    return _gpsimd(op, 1, target)


def _affine_select(op, target: Target) -> InstructionCost:
    return _gpsimd(op, 1, target)


def _select(op, target: Target) -> InstructionCost:
    # like tensor_copy_predicated: max(MIN_II, N) with inputs split SBUF/PSUM, else one pass
    # per input stream (2N for predicate + on_true) [OLD-ISA] [ARCH-T1]; with reduce_res the
    # accumulator read-out adds MIN_II, as activation's and tensor_scalar_reduce's [OLD-ISA]
    ins = [op.access("predicate"), op.access("on_true")]
    if op.access("on_false") is not None:
        ins.append(op.access("on_false"))
    extra = target.min_ii_cycles if op.access("reduce_res") is not None else 0
    return _cycles(op, _min_ii(_streams(ins) * _n(op), target) + extra, target)


def _transpose(op, target: Target) -> InstructionCost:
    data = op.access("data")
    if op.engine == "tensor":
        # max(P, min(64, F)) TensorE cycles [OLD-ISA]; nc_transpose is the transpose mode of
        # nc_matmul (is_transpose=True), which on trn2 runs fp32 at 2x the bf16 cycles — half
        # the fp32 matmul rate (facts §1.7 trn2 deltas) [ARCH-T2] [ISA]
        cycles = max(data.partitions, min(target.pe_transpose_min_cycles, data.free_size))
        if data.dtype.name == "f32":
            cycles *= target.pe_transpose_fp32_factor
        return _cycles(op, cycles, target)
    return _cycles(op, _min_ii(_n(op), target), target)


def _matmul(op, target: Target) -> InstructionCost:
    st, mv = op.access("stationary"), op.access("moving")
    cycles = max(mv.free_size, target.mm_init_latency_cycles)
    if "f32" in (st.dtype.name, mv.dtype.name):
        cycles *= target.matmul_fp32_factor
    peaks = dict(target.matmul_peak_flops)
    peak = min(peaks[st.dtype.name], peaks[mv.dtype.name])
    base = _cycles(op, cycles, target)
    flops = 2 * st.partitions * st.free_size * mv.free_size
    return InstructionCost(base.engine, base.ns, cycles, flops, peak)


def _dma(op, target: Target) -> InstructionCost:
    d = dma_cost(op, target)
    return InstructionCost("dma", d.transfer_ns, bytes=d.bytes)


COST_RULES = {
    DmaCopyOp: _dma,
    DmaGatherOp: _dma,
    DmaTransposeOp: _dma,  # at the DMA-transpose rate (dma_cost.dma_transpose_cost)
    DmaScatterOp: _dma,
    TensorCopyOp: _tensor_copy,
    MemsetOp: _memset,
    IotaOp: _iota,
    MatmulOp: _matmul,
    TransposeOp: _transpose,
    ActivationOp: _activation,
    TensorTensorOp: _tensor_tensor,
    TensorScalarOp: _tensor_scalar,
    TensorReduceOp: _tensor_reduce,
    SelectOp: _select,
    AffineSelectOp: _affine_select,
}


def instruction_cost(op, target: Target) -> InstructionCost:
    """The steady-state cost of one NKI instruction (raises VerifyError for an op without a rule).

    Remembered on the op for ``target`` while its attributes and operands stay the same objects
    (a cost reads only those: the accesses, the operands' types and, for an HBM view, its
    defining op's strides, all fixed once built), since every search pass of the lowering costs
    the same instructions again (compile time)."""
    rule = COST_RULES.get(type(op))
    if rule is None:
        raise VerifyError(
            f"cost model: no cost rule for {op.name}; rules exist for "
            + ", ".join(sorted(c.name for c in COST_RULES))
        )
    return remembered(op, "_cost", lambda: rule(op, target), target)


from . import bn_cost, collective_cost, scan_cost, shuffle_cost, top8_cost  # noqa: E402, F401  (registers the collectives', scan, shuffle, top-8 and bn_stats / bn_aggr rules)
