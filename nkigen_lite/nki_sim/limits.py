"""trn2 (NeuronCore-v3) limits the simulator enforces, each with its facts-sheet source key.

Source keys resolve in shared/reference/trn2_nki_facts.md §9. Every hardware number the
simulator checks lives here and nowhere else.
"""

from __future__ import annotations

import math

# Partitions of SBUF and PSUM; max partition dim of any on-chip tile (nl.tile_size.pmax). [TILING] [KLR]
PARTITIONS = 128
# Usable SBUF bytes per partition on gen3 (total_available_sbuf_size / sbuf_fmax_bytes). [KLR] [TILESIZE]
SBUF_BYTES_PER_PARTITION = 212_984
# One PSUM bank per partition: 2 KiB = 512 fp32 values. [ARCH-T2] [NKL] [TILESIZE]
PSUM_BANK_BYTES = 2048
PSUM_BANK_FMAX = 512
# PSUM banks per partition. [ARCH-T2] [TILESIZE] [NKL]
PSUM_BANKS = 8
# nc_matmul: contraction (partition) dim, stationary free dim, moving free dim. [TILING] [ISA] §2.2
MATMUL_K_MAX = 128
GEMM_STATIONARY_FMAX = 128
GEMM_MOVING_FMAX = 512
# nc_transpose: TensorE up to 128x128, VectorE up to 32x32. [ISA] §2.4
TENSOR_TRANSPOSE_MAX = 128
VECTOR_TRANSPOSE_MAX = 32
# Engine accesses start on a 32-partition quadrant boundary (stricter for wider accesses). [ARCH-T1] §2.6
PARTITION_QUADRANT = 32
# ScalarE has no range reduction: sin needs [-pi, pi], arctan [-pi/2, pi/2]. [SHARED] §2.5
SIN_DOMAIN = (-math.pi, math.pi)
ARCTAN_DOMAIN = (-math.pi / 2, math.pi / 2)
# Maximum depth of an iota / affine_select free-dim pattern. [ISA] §3.5
PATTERN_MAX_DIMS = 4
# max8 / nc_find_index8 / nc_match_replace8: 8 values per partition; data 8 ... 16,384 elements
# per partition (match_replace8: at most 16,384); max8 / find_index8 data at most rank 3 in
# NKI 0.6 (legacy 5-D); find_index8 writes uint16 or uint32. [ISA] (nki.isa.max8 / nc_find_index8
# / nc_match_replace8 pages)
TOP8_WIDTH = 8
TOP8_FREE_MIN = 8
TOP8_FREE_MAX = 16_384
TOP8_DATA_MAX_RANK = 3
TOP8_INDEX_DTYPES = ("uint16", "uint32")
# bn_stats reads at most 512 elements per partition (bn_stats_fmax) and writes 6 per partition
# (count, mean, variance * count of the even, then the odd elements); bn_aggr reads whole
# triples (a multiple of 3, rank <= 5) and writes 2 (mean, variance; rank <= 3). [ISA] [KLR]
# (nki.isa.bn_stats / nki.isa.bn_aggr pages)
BN_STATS_FMAX = 512
BN_STATS_WIDTH = 6
BN_STAT_FIELDS = 3
BN_AGGR_WIDTH = 2
BN_AGGR_DATA_MAX_RANK = 5
BN_AGGR_DST_MAX_RANK = 3
