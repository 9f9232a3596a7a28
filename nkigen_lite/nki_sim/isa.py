"""The simulated ``nki.isa`` (nisa): destination-first instructions and their enums."""

from __future__ import annotations

from .enums import dge_mode, engine, matmul_perf_mode, nc_version, oob_mode, reduce_cmd
from .isa_bn import bn_aggr, bn_stats
from .isa_data import affine_select, dma_copy, iota, memset, tensor_copy, tensor_copy_predicated
from .isa_dma_transpose import dma_transpose
from .isa_scalar import activation
from .isa_scan import tensor_tensor_scan
from .isa_shuffle import nc_stream_shuffle
from .isa_tensor_engine import nc_matmul, nc_transpose
from .isa_top8 import max8, nc_find_index8, nc_match_replace8
from .isa_vector import select_reduce, tensor_reduce, tensor_scalar, tensor_tensor


def get_nc_version() -> nc_version:
    """The simulated NeuronCore generation: gen3 (trn2)."""
    return nc_version.gen3


__all__ = [
    "dma_copy",
    "dma_transpose",
    "tensor_copy",
    "tensor_copy_predicated",
    "memset",
    "iota",
    "affine_select",
    "activation",
    "nc_matmul",
    "nc_transpose",
    "tensor_tensor",
    "tensor_tensor_scan",
    "nc_stream_shuffle",
    "tensor_scalar",
    "tensor_reduce",
    "select_reduce",
    "max8",
    "nc_find_index8",
    "nc_match_replace8",
    "bn_stats",
    "bn_aggr",
    "get_nc_version",
    "engine",
    "reduce_cmd",
    "dge_mode",
    "oob_mode",
    "matmul_perf_mode",
    "nc_version",
]
