"""Does a graph's int32 arithmetic stay where the compiled kernel is exact?

Integer matmuls run on the Tensor engine in fp32, exact only while the sums stay below 2**24
(docs/lowering.md, "Known limits"). ``int32_out_of_range`` runs a graph on the tensor
interpreter with integer arithmetic widened to int64 and names the first op that leaves that
range (None when every value stays inside), so a random-graph property can reject such inputs
instead of reporting a known limit as a failure. It also rejects int32 / uint32 arithmetic
that overflows, which kernels once saturated and now wrap like NumPy (docs/tensor_ops.md §4):
a conservative filter, kept so the properties' drawn inputs stay as they were.
"""

from __future__ import annotations

import numpy as np

from ..ir.dtypes import cast_array
from ..ir.interpreter import check_inputs
from ..tensor import ops as T
from ..tensor.interpret import TensorInterpreter

MATMUL_EXACT = 2**24  # fp32 holds every integer below this exactly
_WIDE = ("i32", "u32")


class WideIntInterpreter(TensorInterpreter):
    """The faithful tensor interpreter with int32 / uint32 arithmetic computed in int64; each
    result that leaves its dtype's range (or an integer matmul whose sums reach 2**24) is
    recorded in ``escaped`` as a message naming the op."""

    def __init__(self):
        super().__init__("faithful")
        self.escaped: list[str] = []
        self.current = None

    @classmethod
    def rule_for(cls, op_class):
        for k in op_class.__mro__:
            if k in cls.rules:
                return cls.rules[k]
        return TensorInterpreter.rule_for(op_class)

    def run_op(self, op) -> None:
        self.current = op
        super().run_op(op)

    def compute_type(self, dtype) -> np.dtype:
        if dtype.name in _WIDE:
            return np.dtype(np.int64)
        return super().compute_type(dtype)

    def store(self, x, dtype) -> np.ndarray:
        x = np.asarray(x)
        if dtype.name in _WIDE and x.dtype.kind in "iu" and x.size:
            info = np.iinfo(dtype.np_dtype)
            lo, hi = int(x.min()), int(x.max())
            if lo < info.min or hi > info.max:
                self.escaped.append(
                    f"{self.current.name} gives {lo if lo < info.min else hi}, outside {dtype.name}"
                )
        return cast_array(x, dtype)


@WideIntInterpreter.impl(T.BinaryOp)
def _binary(it: WideIntInterpreter, op, args):
    out_t = op.results[0].type.dtype
    if op.category != "arith" or out_t.name not in _WIDE:
        return TensorInterpreter.rule_for(type(op))(it, op, args)
    a, b = (np.asarray(x).astype(np.int64) for x in args)
    with np.errstate(all="ignore"):
        return [it.store(op.reference(a, b), out_t)]


@WideIntInterpreter.impl(T.MatmulOp)
def _matmul(it: WideIntInterpreter, op, args):
    out_t = op.results[0].type.dtype
    if not out_t.is_float:
        a, b = (np.abs(np.asarray(x).astype(np.int64)) for x in args)
        bound = np.matmul(a, b)
        if bound.size and int(bound.max()) >= MATMUL_EXACT:
            it.escaped.append(f"{op.name} sums reach {int(bound.max())} >= 2**24 (fp32 on the Tensor engine)")
    return TensorInterpreter.rule_for(type(op))(it, op, args)


def int32_out_of_range(graph, inputs) -> str | None:
    """The first op of ``graph`` on ``inputs`` whose int32 / uint32 result leaves the range
    the compiled kernel computes exactly (see the module docstring), or None."""
    it = WideIntInterpreter()
    arrays = check_inputs(graph, inputs)
    with np.errstate(all="ignore"):
        it.run_block(graph.body, [arrays[n] for n in graph.input_names])
    return it.escaped[0] if it.escaped else None
