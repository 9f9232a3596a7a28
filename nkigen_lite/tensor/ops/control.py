"""Tensor-level loops: ``tensor.for_loop`` and its terminator ``tensor.yield``.

    %h, %s = tensor.for_loop %h0, %s0, %w {count = 4, carried = 2} : tensor<128x64xf32>, tensor<f32>
        (%i: tensor<i32>, %h: tensor<128x64xf32>, %s: tensor<f32>, %w_1: tensor<64x64xf32>) {
      ...
      tensor.yield %h_next, %s_next
    }

The body runs ``count`` times (``count`` ≥ 0). Its block arguments are the induction variable
``i`` (a 0-d int32 tensor: 0, 1, ..., count - 1), the ``carried`` values (initialised from the
first ``carried`` operands, replaced by what ``tensor.yield`` gives at the end of every
iteration) and the remaining operands, read-only (the outer values the body uses: the region is
closed, every value it reads comes through an argument). The results are the carried values
after the last iteration. The loop is never unrolled: the lowering emits one on-device loop.
"""

from __future__ import annotations

import numpy as np

from ...ir.attrs import INT, Attr
from ...ir.dtypes import int32
from ...ir.errors import BuildError
from ...ir.op import Op
from ...ir.traits import HasRegion, Pure, Terminator
from ..types import TensorType
from .base import TensorOp, tensor_types


def _for_loop(count, body, carried, captured=()):
    """NumPy semantics: ``body(i, *carried, *captured)`` returns the next carried values."""
    carried = list(carried)
    for i in range(count):
        carried = list(body(np.int32(i), *carried, *captured))
    return carried


class YieldOp(Op):
    """``tensor.yield %a, %b``: ends a ``tensor.for_loop`` body with the next carried values."""

    name = "tensor.yield"
    traits = frozenset({Terminator})

    __slots__ = ()

    @classmethod
    def infer(cls, _types, _attrs):
        return []

    def verify(self) -> None:
        if self.results:
            raise BuildError("tensor.yield has no results")
        if not isinstance(self.parent_op, ForLoopOp):
            raise BuildError("tensor.yield ends the body of a tensor.for_loop and nothing else")


class ForLoopOp(TensorOp):
    """Run a body ``count`` times over carried values (a loop the lowering keeps a loop)."""

    name = "tensor.for_loop"
    traits = frozenset({Pure, HasRegion})
    attr_spec = (Attr("count", INT), Attr("carried", INT))
    num_regions = 1
    reference = staticmethod(_for_loop)
    numpy = "for i in range(count): carried = body(i, *carried, *captured)"
    dtype_doc = "the carried values'"
    builder_names = ("for_loop",)

    __slots__ = ()

    @classmethod
    def infer(cls, types, attrs):
        tensor_types(cls.name, types)
        n, k = attrs["count"], attrs["carried"]
        if n < 0:
            raise BuildError(f"{cls.name}: count must be >= 0, got {n}")
        if not 0 <= k <= len(types):
            raise BuildError(f"{cls.name}: carried = {k} but the loop has {len(types)} operands")
        return list(types[:k])

    @property
    def body(self):
        return self.regions[0].block

    @property
    def index(self):
        """The induction variable (a 0-d int32 tensor)."""
        return self.body.args[0]

    @property
    def carried_args(self):
        return self.body.args[1 : 1 + self.attrs["carried"]]

    @property
    def captured_args(self):
        return self.body.args[1 + self.attrs["carried"] :]

    @property
    def yielded(self):
        """The values the body's ``tensor.yield`` gives."""
        term = self.body.last
        return term.operands if isinstance(term, YieldOp) else ()

    def verify(self) -> None:
        super().verify()
        if len(self.regions[0].blocks) != 1:
            raise BuildError(f"{self.name}: the body is one block")
        args = self.body.args
        want = [TensorType((), int32)] + [v.type for v in self.operands]
        if [a.type for a in args] != want:
            got = ", ".join(str(a.type) for a in args)
            raise BuildError(
                f"{self.name}: body arguments are ({got}); expected (tensor<i32>, then the types of "
                "the operands: carried values, then captured values)"
            )
        term = self.body.last
        if not isinstance(term, YieldOp):
            raise BuildError(f"{self.name}: the body must end with tensor.yield")
        k = self.attrs["carried"]
        got = [v.type for v in term.operands]
        carried = [v.type for v in self.operands[:k]]
        if got != carried:
            raise BuildError(
                f"{self.name}: tensor.yield gives ({', '.join(map(str, got))}) but the carried "
                f"values are ({', '.join(map(str, carried))}); a carried value keeps its shape "
                "and dtype"
            )
        for op in self.body.walk():
            for v in op.operands:
                if not _defined_inside(v, self):
                    raise BuildError(
                        f"{self.name}: {op.name} in the body reads a value defined outside the "
                        "loop; pass it as a captured operand (the Builder does this)"
                    )


def _defined_inside(v, loop: Op) -> bool:
    """True when ``v`` is an argument or result of something nested in ``loop``."""
    owner = v.defining_op
    block = v.owner if owner is None else owner.parent
    while block is not None:
        region = block.parent
        if region is None:
            return False
        op = region.parent
        if op is loop:
            return True
        if not isinstance(op, Op):
            return False
        block = op.parent
    return False
