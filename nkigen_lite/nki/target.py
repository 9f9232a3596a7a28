"""The hardware target: every trn2 number the compiler uses, each with its fact-sheet source.

Source keys in brackets resolve in shared/reference/trn2_nki_facts.md §9. This module is the
only place in the package where hardware numbers live; the verifier, interpreter, lowering and
cost model read them from a ``Target``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .ops import alu

_ALL_DTYPES = frozenset(
    {
        "f32",
        "f16",
        "bf16",
        "tf32",
        "f8e4m3",
        "f8e4m3fn",
        "f8e5m2",
        "f8e3m4",
        "i8",
        "i16",
        "i32",
        "u8",
        "u16",
        "u32",
        "bool",
    }
)


@dataclass(frozen=True)
class Target:
    """One NeuronCore generation's limits, dtype support, clocks and cost constants."""

    name: str
    nc_version: str

    # ---- on-chip memory (facts §1.3, §2.1) ------------------------------------------------------
    num_partitions: int  # pmax: partition dim of any SBUF/PSUM tile
    sbuf_bytes_per_partition: int  # usable SBUF per partition
    sbuf_physical_bytes_per_partition: int
    psum_num_banks: int  # PSUM banks per partition
    psum_bank_bytes: int  # bytes per PSUM bank per partition
    psum_bank_fmax: int  # fp32 elements per PSUM bank per partition
    psum_min_align_bytes: int
    sbuf_min_align_bytes: int
    max_free_dims: int  # free dims of one access pattern
    partition_quadrant: int  # partition-start granularity for <= 32 partitions

    # ---- Tensor engine (facts §2.1, §2.2, §2.4) -------------------------------------------------
    gemm_contraction_max: int  # K on the partition dim
    gemm_stationary_fmax: int  # M: stationary free size
    gemm_moving_fmax: int  # N: moving free size
    pe_transpose_max: int  # nc_transpose on TensorE: input <= this x this
    vector_transpose_max: int  # nc_transpose on VectorE: input <= this x this
    matmul_fp32_class: frozenset  # these may only pair with each other
    matmul_dst_dtypes: frozenset  # PSUM result dtypes of nc_matmul
    bn_stats_fmax: int

    # ---- engines (facts §1.4, §2.5) ------------------------------------------------------------
    engine_dtypes: tuple  # ((engine, frozenset of dtype names), ...)
    scalar_tensor_scalar_ops: tuple  # op chains ScalarE's tensor_scalar supports
    activation_functions: frozenset  # ScalarE activation functions (names as nki/ops/alu.py)
    alu_ops: frozenset  # binary ALU operators (no divide instruction)
    reduce_ops: frozenset  # operators a free-axis reduction may use
    tensor_clock_hz: float
    vector_clock_hz: float
    scalar_clock_hz: float
    gpsimd_clock_hz: float

    # ---- ScalarE activation input domains (no range reduction outside them) ---------------------
    activation_domains: tuple  # ((func, low, high), ...): |x| range for reciprocal

    # ---- DMA (facts §1.6, §1.8, §7.2) ----------------------------------------------------------
    dma_engines: int
    dma_queues_per_engine: int
    dma_partitions_per_engine: int
    dma_engine_bytes_per_s: float  # practical per-engine rate
    dma_engine_peak_bytes_per_s: float  # theoretical per-engine link rate
    dma_first_byte_latency_ns: float  # semaphore-to-start latency of one DMA
    dge_issue_ns: float  # HW-DGE descriptor generation per dma_copy
    dma_min_efficient_bytes_per_partition: int
    dma_saturating_bytes_per_partition: int
    dma_transpose_hbm_bytes_per_s: float
    dma_transpose_sbuf_bytes_per_s: float
    hbm_bytes_per_s: float  # per-core HBM share used by the roofline
    dge_instances: int  # hardware DGE instances issuing dma_copy descriptors
    dma_efficiency_at_min_efficient: float  # DMA efficiency at dma_min_efficient_bytes_per_partition
    dma_write_drain_ns: float  # DMA completion to data visible (beyond its transfer)

    # ---- per-instruction cost constants (facts §1.7, §7.2) -------------------------------------
    min_ii_cycles: int  # MIN_II of VectorE / ScalarE instructions
    mm_init_latency_cycles: int
    matmul_fp32_factor: int  # fp32 matmul cycles vs bf16
    vector_instruction_overhead_cycles: int
    access_init_cycles: int
    gpsimd_start_cycles: int
    min_ii_dynamic_cycles: int
    vector_reciprocal_factor: int
    tensor_sem_to_start_ns: float
    tensor_write_drain_ns: float
    vector_sem_to_start_ns: float
    vector_write_drain_ns: float
    gpsimd_sem_to_start_ns: float
    gpsimd_write_drain_ns: float
    scalar_sem_to_start_ns: float
    scalar_write_drain_ns: float
    pe_transpose_min_cycles: int  # the 64 in nc_transpose's max(P, min(64, F))
    vector_fast_dtypes: frozenset  # 16-bit floats VectorE's performance mode speeds up
    vector_perf_mode_sbuf_factor: int  # tensor_copy / tensor_scalar, SBUF->SBUF, unit stride
    vector_perf_mode_other_factor: int  # the same off unit stride or touching PSUM; tensor_tensor
    vector_fast_reduce_dtypes: frozenset
    vector_fast_reduce_ops: frozenset  # tensor_reduce at N / factor for these ops and dtypes
    vector_fast_reduce_factor: int
    vector_memset_zero_factor: int  # memset of 0 into a 16-bit float tile
    matmul_peak_flops: tuple  # ((operand dtype, FLOP/s at peak), ...) for the roofline
    vector_gpsimd_shared_sbuf_port: bool  # VectorE perf mode and GpSimd share one SBUF bus
    hbm_bytes: int = 24 * 2**30  # HBM one NeuronCore addresses: one 24 GB stack [CHIP-T2]

    # ---- interconnect and logical NeuronCores (facts §1.1, §1.2, §7) ----------------------------
    neuronlink_chip_bytes_per_s: float = 1.024e12  # NeuronLink-v3 intra-instance, per chip [TRN2-INST]
    physical_cores_per_chip: int = 8  # 8 NeuronCore-v3 per trn2 chip [CHIP-T2]
    # No fact gives the latency of one collective ring step; assumed: one DMA first-byte latency
    # (a step is a DMA between cores) [DMA-BW], the same as dma_first_byte_latency_ns.
    collective_step_latency_ns: float = 1300.0
    hbm_stack_bytes_per_s: float = 725e9  # one HBM stack, shared by an LNC=2 pair: 2.9 TB/s / 4 §7
    lnc_max: int = 2  # LNC degree: 1 or 2 physical cores per logical core [LNC]
    # nc_transpose on TensorE is nc_matmul(is_transpose=True) (NKI nc_transpose docs), trn2's
    # transpose mode: "2x FP32 transpose speed" over an fp32 matmul pass, i.e. 2x the bf16
    # cycles (facts §1.7 trn2 deltas) [ARCH-T2] [ISA]
    pe_transpose_fp32_factor: int = 2

    # ---- top-8 instructions: max8, nc_find_index8, nc_match_replace8 (NKI 0.6 I6 pages) --------
    top8_width: int = 8  # values per partition max8 writes, find_index8 / match_replace8 read [ISA]
    top8_free_min: int = 8  # elements per partition max8 / nc_find_index8 read: 8 ... [ISA]
    top8_free_max: int = 16_384  # ... to 16,384 (nc_match_replace8: at most 16,384) [ISA]
    top8_data_max_rank: int = 3  # max8 / find_index8 data rank incl. partitions, 0.6 [ISA]
    top8_index_dtypes: frozenset = frozenset({"u16", "u32"})  # nc_find_index8 dst dtypes [ISA]

    # ---- batch-norm statistics: bn_stats / bn_aggr (NKI 0.6 I6 pages; the input limit is
    # bn_stats_fmax above) ------------------------------------------------------------------------
    bn_stats_width: int = 6  # bn_stats dst: (count, mean, var*count) of even, then odd elements [ISA]
    bn_stat_fields: int = 3  # one (count, mean, var*count) triple; bn_aggr data a multiple of it [ISA]
    bn_aggr_width: int = 2  # bn_aggr dst: mean, then variance [ISA]
    bn_aggr_data_max_rank: int = 5  # bn_aggr data at most four free dims (rank 5) [ISA]
    bn_aggr_dst_max_rank: int = 3  # bn_aggr dst at most two free dims (rank 3) [ISA]
    bn_aggr_cycles_per_element: float = 13 / 3  # bn_aggr: max(MIN_II, 13 N / 3) cycles [OLD-ISA]

    # ---- derived views -------------------------------------------------------------------------
    @property
    def collective_link_bytes_per_s(self) -> float:
        """Interconnect bandwidth one rank (one physical core) sends at in a collective. Assumed
        (no per-core fact): the chip's NeuronLink bandwidth shared evenly by its cores."""
        return self.neuronlink_chip_bytes_per_s / self.physical_cores_per_chip

    @property
    def psum_bytes_per_partition(self) -> int:
        return self.psum_num_banks * self.psum_bank_bytes

    def dtypes_of(self, engine: str) -> frozenset:
        """Dtype names an engine reads and writes."""
        return dict(self.engine_dtypes)[engine]

    def activation_domain(self, func: str) -> tuple[float, float] | None:
        """Documented input range of an activation function, or None when unrestricted."""
        for f, lo, hi in self.activation_domains:
            if f == func:
                return lo, hi
        return None


TRN2 = Target(
    name="trn2",
    nc_version="gen3",  # trn2 = NeuronCore-v3 = gen3 [ISA]
    num_partitions=128,  # pmax [TILING] [KLR]
    sbuf_bytes_per_partition=212_984,  # 224 KiB - 16 KiB - 8 B on gen3 [KLR]
    sbuf_physical_bytes_per_partition=224 * 1024,  # 28 MiB = 128 x 224 KiB [ARCH-T2]
    psum_num_banks=8,  # 8 banks per partition [ARCH-T2] [NKL]
    psum_bank_bytes=2048,  # PSUM_BANK_SIZE = 2048 [NKL] [ARCH-T1]
    psum_bank_fmax=512,  # psum_bank_fmax [TILESIZE] [KLR]
    psum_min_align_bytes=4,  # psum_min_align [KLR]
    sbuf_min_align_bytes=1,  # sbuf_min_align [KLR]
    max_free_dims=4,  # up to 4-D pattern per partition [ARCH-T1] [APS]
    partition_quadrant=32,  # partition start rules [ARCH-T1]
    gemm_contraction_max=128,  # K <= 128 on partitions [ISA]
    gemm_stationary_fmax=128,  # gemm_stationary_fmax [TILING] [KLR]
    gemm_moving_fmax=512,  # gemm_moving_fmax [TILING] [KLR]
    pe_transpose_max=128,  # nc_transpose(engine=tensor) <= [128,128] [ISA]
    vector_transpose_max=32,  # nc_transpose(engine=vector) <= [32,32] [ISA]
    matmul_fp32_class=frozenset({"f32", "tf32"}),  # fp32/tf32 pair only with fp32/tf32 [ISA]
    matmul_dst_dtypes=frozenset({"f32"}),  # dst fp32 on v2/v3 [ISA]
    bn_stats_fmax=512,  # bn_stats_fmax [ISA] [KLR]
    engine_dtypes=(
        # TensorE inputs [ISA]; fp8_e3 at bf16 speed [ARCH-T2]; e4m3fn (OCP) matmul is v4+ [SHARED]
        ("tensor", frozenset({"f8e4m3", "f8e5m2", "f8e3m4", "bf16", "f16", "tf32", "f32"})),
        ("vector", _ALL_DTYPES),  # all NKI dtypes [ARCH-T1] [ISA]
        ("scalar", _ALL_DTYPES),  # all NKI dtypes, fp32 math [ISA]
        ("gpsimd", _ALL_DTYPES),  # free cast to/from fp32 [ARCH-T1]
    ),
    # ScalarE tensor_scalar on trn2: only (mult, add), (mult), (add) [ISA]
    scalar_tensor_scalar_ops=(("multiply", "add"), ("multiply",), ("add",)),
    activation_functions=frozenset(alu.ACTIVATION_FUNCS),  # [SHARED]
    # abs_max / abs_min are NeuronCore-v4 only (NKI 0.4 release notes) [SHARED] [NKIGEN]
    alu_ops=frozenset(alu.ALU_OPS) - {"abs_max", "abs_min"},
    reduce_ops=frozenset(alu.REDUCE_OPS),  # [SHARED]
    tensor_clock_hz=2.4e9,  # [ARCH-T2]
    vector_clock_hz=0.96e9,  # [ARCH-T2]
    scalar_clock_hz=1.2e9,  # [ARCH-T2]
    gpsimd_clock_hz=1.2e9,  # [ARCH-T2]
    activation_domains=(  # [SHARED]
        ("log", 2.0**-64, 2.0**64),
        ("sin", -3.141592653589793, 3.141592653589793),  # no range reduction
        ("arctan", -1.5707963267948966, 1.5707963267948966),
        ("sqrt", 2.0**-116, 2.0**118),
        ("rsqrt", 2.0**-87, 2.0**97),
        ("reciprocal", 2.0**-42, 2.0**42),  # on |x|
    ),
    dma_engines=16,  # 16 DMA engines per NC [DMA-OV] [ARCH-T2]
    dma_queues_per_engine=16,  # [DMA-OV]
    dma_partitions_per_engine=8,  # ~1 engine per 8 partitions [DMA-OV] [DMA-BW]
    dma_engine_bytes_per_s=23e9,  # 23 B/ns per engine on trn2 [DMA-OV] [DMA-BW]
    dma_engine_peak_bytes_per_s=27.2e9,  # theoretical [DMA-OV]
    dma_first_byte_latency_ns=1300.0,  # semaphore-to-start [DMA-BW] [NKIPY-HW]
    dge_issue_ns=600.0,  # HW-DGE per DMA instruction [ARCH-T2] [DGE]
    dma_min_efficient_bytes_per_partition=2048,  # >= 2 KiB recommended [DMA-BW]
    dma_saturating_bytes_per_partition=4096,  # >= 4 KiB saturates [DMA-BW]
    dma_transpose_hbm_bytes_per_s=335e9,  # HBM->SBUF DMA transpose [NKIPY-HW]
    dma_transpose_sbuf_bytes_per_s=215e9,  # SBUF->SBUF DMA transpose [NKIPY-HW]
    hbm_bytes_per_s=360e9,  # per-core roofline bandwidth [derived] §7.1
    dge_instances=2,  # 2 HW-DGE per NC-v3 (Sync, Scalar) [ARCH-T2] [DGE]
    dma_efficiency_at_min_efficient=0.85,  # "approaches peak" at 2 KiB: ~0.8-0.9 §7.2 [DMA-BW]
    dma_write_drain_ns=0.0,  # none listed ("-") [NKIPY-HW]
    min_ii_cycles=64,  # MIN_II [OLD-ISA] [SHARED]
    mm_init_latency_cycles=64,  # MM_INIT_LATENCY (NC-v2) [ARCH-T1]
    matmul_fp32_factor=4,  # fp32 matmul ~4x bf16 [OLD-ISA] [ARCH-T2]
    vector_instruction_overhead_cycles=100,  # small dependent instructions [ARCH-T1]
    access_init_cycles=60,  # SBUF/PSUM access initiation (NC-v2) [ARCH-T1]
    gpsimd_start_cycles=150,  # GPSIMD_START [OLD-ISA]
    min_ii_dynamic_cycles=600,  # dynamic-address tensor_copy [OLD-ISA]
    vector_reciprocal_factor=8,  # VectorE reciprocal 8N [OLD-ISA]
    tensor_sem_to_start_ns=81.0,  # [NKIPY-HW]
    tensor_write_drain_ns=150.0,  # [NKIPY-HW]
    vector_sem_to_start_ns=268.0,  # [NKIPY-HW]
    vector_write_drain_ns=161.0,  # [NKIPY-HW]
    gpsimd_sem_to_start_ns=186.0,  # [NKIPY-HW]
    gpsimd_write_drain_ns=218.0,  # [NKIPY-HW]
    scalar_sem_to_start_ns=268.0,  # no ScalarE row in [NKIPY-HW]: VectorE's assumed
    scalar_write_drain_ns=161.0,  # no ScalarE row in [NKIPY-HW]: VectorE's assumed
    pe_transpose_min_cycles=64,  # nc_transpose max(P, min(64, F)) [OLD-ISA]
    vector_fast_dtypes=frozenset({"bf16", "f16"}),  # performance mode, BF16/FP16 only [ARCH-T2]
    vector_perf_mode_sbuf_factor=4,  # 4x copy/tensor_scalar SBUF->SBUF unit stride [ARCH-T2]
    vector_perf_mode_other_factor=2,  # 2x non-unit stride / PSUM side / tensor_tensor [ARCH-T2]
    vector_fast_reduce_dtypes=frozenset({"bf16"}),  # tensor_reduce N/2 bf16 in/out [OLD-ISA]
    vector_fast_reduce_ops=frozenset({"add", "maximum"}),  # ... for add or max [OLD-ISA]
    vector_fast_reduce_factor=2,  # [OLD-ISA]
    vector_memset_zero_factor=2,  # memset 0 into bf16/fp16: N/2 [OLD-ISA]
    matmul_peak_flops=(  # §7.1: 128 x 128 x 2 x 2.4 GHz ("78.6", doc 79) [ARCH-T2]
        ("bf16", 128 * 128 * 2 * 2.4e9),
        ("f16", 128 * 128 * 2 * 2.4e9),
        ("tf32", 128 * 128 * 2 * 2.4e9),
        ("f8e3m4", 128 * 128 * 2 * 2.4e9),  # FP8_E3 at BF16 speed [ARCH-T2]
        ("f8e4m3", 2 * 128 * 128 * 2 * 2.4e9),  # FP8 double_row, "157" [ARCH-T2] [NCV3]
        ("f8e5m2", 2 * 128 * 128 * 2 * 2.4e9),
        ("f32", 128 * 128 * 2 * 2.4e9 / 4),  # FP32 matmul ~4x BF16 cost, "19.7" [ARCH-T2] [OLD-ISA]
    ),
    vector_gpsimd_shared_sbuf_port=True,  # "they share a bus; VectorE perf mode uses it
    # and HW arbitrates" §1.4 [ARCH-T2]
)
