"""``tensor.layout_convert``: an identity on values that marks where the layout solver moves
data between partitions and the free dims (a TensorE transpose in the lowering)."""

from __future__ import annotations

import numpy as np

from ...ir.errors import BuildError
from ...ir.traits import Pure
from ...tensor.interpret import TensorInterpreter
from ...tensor.ops import TensorOp
from ...tensor.types import TensorType


class LayoutConvertOp(TensorOp):
    """Same value, new layout: the result's dim roles (I/P/F) differ from the operand's."""

    name = "tensor.layout_convert"
    traits = frozenset({Pure})
    reference = staticmethod(lambda x: np.array(x, copy=True))
    numpy = "x (identity on values)"
    dtype_doc = "operand dtype"

    __slots__ = ()

    @classmethod
    def infer(cls, types, _attrs):
        if len(types) != 1 or not isinstance(types[0], TensorType):
            raise BuildError(f"{cls.name}: expects one tensor operand, got {list(map(str, types))}")
        return [types[0]]


@TensorInterpreter.impl(LayoutConvertOp)
def _layout_convert(_it, op, args):
    return [op.reference(args[0])]
