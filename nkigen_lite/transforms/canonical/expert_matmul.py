"""Batched matmuls over a stacked table of expert matrices (the dense form of a mixture of
experts, as an expert-parallel rank runs it: parallel/moe_ep.py) read each matrix in one DMA.

``X @ T`` with ``T`` a kernel input (E, K, N), E >= 2, becomes ``tensor.gathered_matmul(X, T,
iota(E), group)`` (lowered by lower/gathered_matmul.py: each matrix gathered straight into SBUF
in one DMA, instead of the general matmul's 128-row chunks) when:

- ``X`` is (1, t, K): the same rows for every matrix (the tokens into each expert's gate / up
  projection), ``group = E``; or
- ``X`` is (E, t, K) and computed, through casts and element-wise ops, from such a product of a
  table with E matrices (the activations into each expert's down projection), ``group = 1``.

The second condition keeps other batched matmuls by a 3-D input (attention's ``P @ V``) on their
own lowerings. Only shapes the kernel takes are rewritten. Each output row is the same dot
products as the matmul, so the results are the matmul's, rounding included.
"""

from __future__ import annotations

from ...ir.rewrite import RewritePattern
from ...ir.traits import Elementwise
from ...tensor import ops as T
from ...tensor.composites_gathered_matmul import GatheredMatmulOp
from ..match import replace
from .gathered_matmul import GatheredMatmul, _every_matrix_group

MAX_WALK = 32  # ops searched back from X for the up projection (an activation chain is short)


def _table(v):
    """(E, K, N) when ``v`` is a kernel input holding E >= 2 matrices, else None."""
    if v.defining_op is not None or v.type.rank != 3 or v.type.shape[0] < 2:
        return None
    return v.type.shape


def _experts_product(v, e) -> bool:
    """``v`` computed through casts and element-wise ops from an every-matrix product over a
    table of ``e`` matrices (a gathered_matmul over iota ids, or the matmul this pattern turns
    into one)."""
    seen, todo = set(), [v]
    while todo and len(seen) < MAX_WALK:
        x = todo.pop()
        op = x.defining_op
        if op is None or op in seen:
            continue
        seen.add(op)
        if isinstance(op, GatheredMatmulOp) and op.operand(1).type.shape[0] == e:
            return True
        if isinstance(op, T.MatmulOp):
            t = _table(op.operand(1))
            if t is not None and t[0] == e and op.operand(0).type.shape[0] == 1:
                return True
            continue
        if isinstance(op, T.CastOp) or op.has_trait(Elementwise):
            todo.extend(w for w in op.operands if w.type.rank == 3)
    return False


class ExpertTableMatmul(RewritePattern):
    """X @ T, T a kernel input (E, K, N), X (1, t, K) or an activation of such a product →
    gathered_matmul(X, T, iota(E), group)"""

    root = T.MatmulOp

    def match_and_rewrite(self, op, rw):
        x, table = op.operands
        shape = _table(table)
        if shape is None or x.type.rank != 3 or x.dtype is not table.dtype:
            return False
        e = shape[0]
        if x.type.shape[0] != 1 and not (x.type.shape[0] == e and _experts_product(x, e)):
            return False
        if _every_matrix_group(x, table) is None:
            return False
        return replace(rw, op, GatheredMatmul.every_matrix(rw, x, table))


EXPERT_MATMUL_PATTERNS = (ExpertTableMatmul(),)
