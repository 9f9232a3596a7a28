"""NKI dialect: explicit memory (HBM / SBUF / PSUM), DMA, tiled loops and NISA compute ops.

b = nk.nki.Builder("k"); ...; nk.nki.verify(b.graph); nk.nki.run(b.graph, {"x": x})
"""

from . import (
    interpret_compute,  # noqa: F401  (registers the compute interpreter rules)
    run_cores,  # noqa: F401  (registers nki.program_id's interpreter rule)
    verify_collective,  # noqa: F401  (registers the collectives' legality rule)
)
from .builder import Builder
from .interpret import run
from .ops import (
    ALL_OPS,
    ActivationOp,
    AffineSelectOp,
    AllocOp,
    DeallocOp,
    DmaCopyOp,
    ForiLoopOp,
    HbmViewOp,
    IotaOp,
    MatmulOp,
    MemsetOp,
    NkiOp,
    SelectOp,
    TensorCopyOp,
    TensorReduceOp,
    TensorScalarOp,
    TensorTensorOp,
    TransposeOp,
)
from .run_ranks import run_ranks
from .target import TRN2, Target
from .types import INDEX, Access, Affine, DimSlice, HbmType, IndexType, MemorySpace, TileType, ds, ts
from .verify import MemoryPeaks, verify

__all__ = [
    "Builder",
    "run",
    "run_ranks",
    "verify",
    "MemoryPeaks",
    "TRN2",
    "Target",
    "ts",
    "ds",
    "MemorySpace",
    "TileType",
    "HbmType",
    "IndexType",
    "INDEX",
    "Access",
    "Affine",
    "DimSlice",
    "ALL_OPS",
    "NkiOp",
    "AllocOp",
    "DeallocOp",
    "HbmViewOp",
    "DmaCopyOp",
    "TensorCopyOp",
    "MemsetOp",
    "IotaOp",
    "MatmulOp",
    "TransposeOp",
    "ActivationOp",
    "TensorTensorOp",
    "TensorScalarOp",
    "TensorReduceOp",
    "SelectOp",
    "AffineSelectOp",
    "ForiLoopOp",
]
