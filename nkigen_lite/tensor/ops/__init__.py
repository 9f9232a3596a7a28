"""Tensor dialect ops: whole-tensor SSA ops with NumPy semantics, one class per op carrying
every fact about it (``base.py``; docs/adding_an_op.md).

Attributes are canonical (non-negative sorted axes, resolved shapes, ``range()``-style slice
bounds); the Builder turns NumPy-style arguments into that form. The registries
(``TENSOR_OPS``, ``UNARY_OPS``, ``BINARY_OPS``) fill themselves as classes are defined.
"""

from .activations import ACTIVATION_COMPOSITES, GeluOp, SiluOp, SoftplusOp  # noqa: F401  (in UNARY_OPS)
from .base import TENSOR_OPS, Needs, TensorOp, elementwise_class, tensor_types
from .binary import *  # noqa: F403  (every binary op class)
from .binary import BINARY_OPS, CATEGORIES, BinaryOp
from .composite import COMPOSITE_OPS, CompositeOp, define_op
from .control import ForLoopOp, YieldOp
from .custom import CUSTOM_REFERENCES, CustomKernelOp, register_custom_reference
from .indexed import (
    INDEXED_OPS,
    DynamicSliceOp,
    DynamicUpdateSliceOp,
    GatherRowsOp,
    OneHotOp,
    ScatterRowsOp,
    TakeAlongAxisOp,
)
from .movement import BroadcastToOp, ConcatOp, ReshapeOp, SliceOp, TransposeOp
from .ordering import TopkOp
from .reduction import REDUCE_ALU, REDUCE_KINDS, MatmulOp, ReduceOp
from .selection import CastOp, WhereOp
from .sources import ConstantOp, FullOp, IotaOp
from .unary import *  # noqa: F403  (every unary op class)
from .unary import UNARY_OPS, UnaryOp

ALL_TENSOR_OPS: tuple[type[TensorOp], ...] = (
    *UNARY_OPS.values(),
    *BINARY_OPS.values(),
    *(c for c in TENSOR_OPS.values() if not issubclass(c, (UnaryOp, BinaryOp))),
)
"""The tensor ops this package defines (``TENSOR_OPS`` also holds ones added later)."""

__all__ = [
    "TENSOR_OPS",
    "Needs",
    "TensorOp",
    "elementwise_class",
    "tensor_types",
    "BINARY_OPS",
    "CATEGORIES",
    "BinaryOp",
    "UNARY_OPS",
    "UnaryOp",
    "BroadcastToOp",
    "ConcatOp",
    "ReshapeOp",
    "SliceOp",
    "TransposeOp",
    "TopkOp",
    "CustomKernelOp",
    "CUSTOM_REFERENCES",
    "register_custom_reference",
    "REDUCE_ALU",
    "REDUCE_KINDS",
    "MatmulOp",
    "ReduceOp",
    "CastOp",
    "WhereOp",
    "ConstantOp",
    "FullOp",
    "IotaOp",
    "ALL_TENSOR_OPS",
    "ForLoopOp",
    "YieldOp",
    "COMPOSITE_OPS",
    "ACTIVATION_COMPOSITES",
    "CompositeOp",
    "define_op",
    "INDEXED_OPS",
    "DynamicSliceOp",
    "DynamicUpdateSliceOp",
    "GatherRowsOp",
    "OneHotOp",
    "ScatterRowsOp",
    "TakeAlongAxisOp",
    *(c.__name__ for c in (*UNARY_OPS.values(), *BINARY_OPS.values())),
]
