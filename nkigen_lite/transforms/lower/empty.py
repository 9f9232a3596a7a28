"""Empty tensors: NKI tensors need positive dims, so values with a zero-size dim are folded away
before lowering. Empty results become ``tensor.full``; reductions over empty axes become their
identity; a matmul with K = 0 becomes zeros; empty concat operands are dropped. Outputs that
stay empty are reported to the caller, which produces them without running the kernel."""

from __future__ import annotations

from ...ir.graph import Graph, ReturnOp
from ...ir.rewrite import Rewriter
from ...tensor import ops as T
from ...tensor.types import TensorType

_IDENTITY = {"sum": 0, "prod": 1, "any": False, "all": True}


def _full(rw: Rewriter, t: TensorType, value):
    op = rw.create(T.FullOp, (), {"value": t.dtype.python_value(value)}, [t], name_hint="c")
    return op.result


def fold_empty(graph: Graph) -> dict[str, TensorType]:
    """Rewrite ``graph`` in place so no op computes on an empty tensor; returns the graph
    outputs that are empty (name -> type)."""
    rw = Rewriter()
    for op in list(graph.body):
        if isinstance(op, ReturnOp) or op.parent is None:
            continue
        rw.set_insertion_point_before(op)
        t = op.results[0].type if op.results else None
        new = None
        if isinstance(op, T.ConcatOp) and t.size:
            keep = [v for v in op.operands if v.type.size]
            if len(keep) != op.num_operands:
                new = keep[0] if len(keep) == 1 else rw.create(T.ConcatOp, keep, dict(op.attrs)).result
                if new.type != t:
                    new = rw.create(T.CastOp, [new], {"dtype": t.dtype}).result
        elif isinstance(op, T.ReduceOp) and t.size and op.operand(0).type.size == 0:
            new = _full(rw, t, _IDENTITY[op.attrs["kind"]])
        elif isinstance(op, T.MatmulOp) and t.size and any(v.type.size == 0 for v in op.operands):
            new = _full(rw, t, 0)
        elif t is not None and isinstance(t, TensorType) and t.size == 0 and not isinstance(op, T.FullOp):
            new = _full(rw, t, 0)
        if new is not None:
            rw.replace_op(op, [new])
    graph.dce()
    return {n: v.type for n, v in graph.outputs.items() if v.type.size == 0}
