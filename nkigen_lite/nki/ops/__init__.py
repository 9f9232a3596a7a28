"""NKI dialect ops (memory, compute, control)."""

from .base import ENGINES, NkiOp
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
from .memory import AllocOp, DeallocOp, DmaCopyOp, HbmViewOp

ALL_OPS = (AllocOp, DeallocOp, HbmViewOp, DmaCopyOp, *COMPUTE_OPS, ForiLoopOp)

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
    "HbmViewOp",
    "ALL_OPS",
]
