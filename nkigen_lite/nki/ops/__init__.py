"""NKI dialect ops (memory, compute, control)."""

from .base import ENGINES, NkiOp
from .bn import BN_OPS, BnAggrOp, BnStatsOp
from .collective import (
    COLLECTIVE_OPS,
    AllGatherOp,
    AllReduceOp,
    AllToAllOp,
    CollectiveOp,
    ReduceScatterOp,
)
from .compute import (
    COMPUTE_OPS,
    ActivationOp,
    AffineSelectOp,
    ComputeOp,
    IotaOp,
    MatmulOp,
    MemsetOp,
    SelectOp,
    TensorCopyOp,
    TensorReduceOp,
    TensorScalarOp,
    TensorTensorOp,
    TransposeOp,
)
from .control import ForiLoopOp
from .dma_transpose import DMA_TRANSPOSE_AXES, DmaTransposeOp
from .indirect import INDIRECT_OPS, DmaGatherOp, DmaScatterOp
from .memory import AllocOp, DeallocOp, DmaCopyOp, HbmViewOp
from .program import ProgramIdOp, lnc_of, program_id_op
from .scan import SCAN_OPS, TensorTensorScanOp
from .shuffle import SHUFFLE_OPS, StreamShuffleOp
from .top8 import TOP8_OPS, FindIndex8Op, MatchReplace8Op, Max8Op

ALL_OPS = (
    AllocOp,
    DeallocOp,
    HbmViewOp,
    DmaCopyOp,
    DmaTransposeOp,
    *INDIRECT_OPS,
    *COMPUTE_OPS,
    *TOP8_OPS,
    *SCAN_OPS,
    *SHUFFLE_OPS,
    *BN_OPS,
    ForiLoopOp,
    *COLLECTIVE_OPS,
    ProgramIdOp,
)

__all__ = [
    "ENGINES",
    "NkiOp",
    "ComputeOp",
    "COMPUTE_OPS",
    "ActivationOp",
    "AffineSelectOp",
    "IotaOp",
    "MatmulOp",
    "MemsetOp",
    "SelectOp",
    "TensorCopyOp",
    "TensorReduceOp",
    "TensorScalarOp",
    "TensorTensorOp",
    "TransposeOp",
    "ForiLoopOp",
    "AllocOp",
    "DeallocOp",
    "DmaCopyOp",
    "DmaTransposeOp",
    "DMA_TRANSPOSE_AXES",
    "DmaGatherOp",
    "DmaScatterOp",
    "INDIRECT_OPS",
    "HbmViewOp",
    "ALL_OPS",
    "TOP8_OPS",
    "Max8Op",
    "FindIndex8Op",
    "MatchReplace8Op",
    "SCAN_OPS",
    "TensorTensorScanOp",
    "SHUFFLE_OPS",
    "StreamShuffleOp",
    "BN_OPS",
    "BnStatsOp",
    "BnAggrOp",
    "COLLECTIVE_OPS",
    "CollectiveOp",
    "AllReduceOp",
    "AllGatherOp",
    "ReduceScatterOp",
    "AllToAllOp",
    "ProgramIdOp",
    "lnc_of",
    "program_id_op",
]
