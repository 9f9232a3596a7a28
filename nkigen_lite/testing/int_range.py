"""Does a graph's integer arithmetic stay where the compiled kernel is exact?

Integer matmuls run on the Tensor engine in fp32, exact only while the sums stay below 2**24
(docs/lowering.md, "Known limits"). ``int32_out_of_range`` runs a graph on the tensor
interpreter and names the first integer matmul whose sums reach that bound (None when there is
none), so a random-graph property can reject such inputs instead of reporting a known limit as
a failure. int32 / uint32 arithmetic that overflows is not rejected: kernels wrap it like NumPy
(docs/tensor_ops.md §4).
"""

from __future__ import annotations

import numpy as np

from ..ir.interpreter import check_inputs
from ..tensor import ops as T
from ..tensor.interpret import TensorInterpreter

MATMUL_EXACT = 2**24  # fp32 holds every integer below this exactly


class WideIntInterpreter(TensorInterpreter):
    """The faithful tensor interpreter recording, in ``escaped``, a message naming each integer
    matmul whose sums of magnitudes reach 2**24."""

    def __init__(self):
        super().__init__("faithful")
        self.escaped: list[str] = []

    @classmethod
    def rule_for(cls, op_class):
        for k in op_class.__mro__:
            if k in cls.rules:
                return cls.rules[k]
        return TensorInterpreter.rule_for(op_class)


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
    """The first integer matmul of ``graph`` on ``inputs`` whose sums leave the range the
    compiled kernel computes exactly (see the module docstring), or None."""
    it = WideIntInterpreter()
    arrays = check_inputs(graph, inputs)
    with np.errstate(all="ignore"):
        it.run_block(graph.body, [arrays[n] for n in graph.input_names])
    return it.escaped[0] if it.escaped else None
