"""A matmul read only through column slices becomes one matmul per slice, on the matching
columns of B.

``g, u = np.split(x @ w_gu, 2, axis=-1)`` (a fused gate/up projection) computes ``x @ w_gu``
and then slices it: the lowering stores the whole product and loads each half back. Column
``j`` of ``A @ B`` depends only on column ``j`` of B, so ``(A @ B)[..., n0:n1]`` is
``A @ B[..., n0:n1]`` bit for bit (same products, same K order): each slice becomes a matmul on
a column view of B (a strided HBM view, no copy), and the row pipelines see two ordinary
projections that pass their results on chip (the SwiGLU MLP's ``silu(g) * u``).

Applies when every use of the product is a ``tensor.slice`` that keeps all leading dims whole
with unit strides (only the last dim sliced, stride 1), and B has rank >= 2.
"""

from __future__ import annotations

from ...ir.rewrite import RewritePattern
from ...tensor import ops as T
from ..match import def_op, make, replace


def _column_slice(op) -> tuple[int, int] | None:
    """(n0, n1) when ``op`` is a slice keeping every dim but the last whole (unit strides)."""
    if not isinstance(op, T.SliceOp):
        return None
    shape = op.operand(0).type.shape
    starts, strides = op.attrs["starts"], op.attrs["strides"]
    if any(s != 1 for s in strides):
        return None
    for d in range(len(shape) - 1):
        if starts[d] != 0 or op.result.type.shape[d] != shape[d]:
            return None
    n0 = starts[-1]
    return n0, n0 + op.result.type.shape[-1]


class SplitMatmulColumns(RewritePattern):
    """slice(A @ B, [..., n0:n1]) → A @ slice(B, [..., n0:n1])   (every use a column slice)"""

    root = T.SliceOp

    def match_and_rewrite(self, op, rw):
        cols = _column_slice(op)
        mm = def_op(op.operand(0), T.MatmulOp)
        if cols is None or mm is None:
            return False
        a, b = mm.operands
        if b.type.rank < 2 or a.type.rank < 1:
            return False
        if not all(_column_slice(u.op) is not None for u in mm.result.uses):
            return False
        n0, n1 = cols
        if (n0, n1) == (0, b.type.shape[-1]):
            return False  # the whole product: identities remove the slice
        rank = b.type.rank
        attrs = {
            "starts": (0,) * (rank - 1) + (n0,),
            "stops": tuple(b.type.shape[:-1]) + (n1,),
            "strides": (1,) * rank,
        }
        b_cols = make(rw, T.SliceOp, [b], attrs)
        return replace(rw, op, make(rw, T.MatmulOp, [a, b_cols]))


MATMUL_SPLIT_PATTERNS = (SplitMatmulColumns(),)
