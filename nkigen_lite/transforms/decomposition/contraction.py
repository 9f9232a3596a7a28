"""Degenerate contractions: matmuls with K = 1, or batched matmuls with M = 1 or N = 1, are
elementwise work, not Tensor-engine work (one tiny ``nc_matmul`` per batch instance otherwise).

``A(…, M, K) @ B(…, K, N)`` (1-D operands as NumPy reads them: ``(K,)`` is ``(1, K)`` on the
left and ``(K, 1)`` on the right):

- K = 1: ``C = A(…, M, 1) * B(…, 1, N)`` — a broadcast multiply, no sum;
- N = 1: ``C = sum(A(…, M, K) * Bᵀ(…, 1, K), axis=-1)``; M = 1: ``C = sum(Aᵀ(…, K, 1) *
  B(…, K, N), axis=-2)`` — taken when there are several batch instances, K ≤ ``MAX_ROW_K``
  and each instance's matrix is at most ``MAX_MATRIX_ELEMS`` (one 128 x 128 tile, where a
  matmul's fixed cost dominates). A single 2-D matrix-vector product stays on the Tensor
  engine, and so does a batch of larger matrices (one matrix per MoE expert selection): there
  the rewrite would broadcast the vector against the whole matrix in f32 — more bytes than
  the matrix itself — while the Tensor engine streams each matrix once.

Products and sums are computed in the matmul's work dtype (f32 for floats, as the Tensor
engine accumulates) and cast to the result dtype once, like the matmul.
"""

from __future__ import annotations

import math

from ...tensor import ops as T
from ..match import make, replace
from .base import DecompositionPattern, Emitter, work_dtype

MAX_ROW_K = 4096  # the N = 1 / M = 1 rewrite reduces K along a row in SBUF
MAX_MATRIX_ELEMS = 128 * 128  # ... of a matrix per batch instance no larger than one tile


def _swap_last(e: Emitter, x):
    perm = tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
    return make(e.rw, T.TransposeOp, [x], {"perm": perm})


class DegenerateMatmul(DecompositionPattern):
    """A @ B with K = 1 → broadcast multiply; batched with N = 1 or M = 1 → multiply + row sum"""

    root = T.MatmulOp

    def match_and_rewrite(self, op, rw):
        a, b = op.operands
        out = op.result
        k = a.shape[-1]
        if k == 0 or out.type.size == 0:
            return False  # empty contractions are canonicalize's
        m = a.shape[-2] if a.ndim >= 2 else 1
        n = b.shape[-1] if b.ndim >= 2 else 1
        batch = math.prod(out.shape[:-2]) if a.ndim >= 2 and b.ndim >= 2 else 1
        if k != 1 and not (batch > 1 and (m == 1 or n == 1) and k <= MAX_ROW_K):
            return False
        if k != 1 and k * (n if m == 1 else m) > MAX_MATRIX_ELEMS:
            return False  # a batch of large matrices: one Tensor-engine pass streams each once
        e = Emitter(rw)
        wd = work_dtype(out.dtype)
        a2 = e.cast(a if a.ndim >= 2 else e.reshape(a, (1, k)), wd)
        b2 = e.cast(b if b.ndim >= 2 else e.reshape(b, (k, 1)), wd)
        if k == 1:
            c = e.mul(a2, b2)
        elif n == 1:
            c = e.reduce(e.mul(a2, _swap_last(e, b2)), (max(a2.ndim, b2.ndim) - 1,), "sum")
        else:
            c = e.reduce(e.mul(_swap_last(e, a2), b2), (max(a2.ndim, b2.ndim) - 2,), "sum")
        return replace(rw, op, e.reshape(e.cast(c, out.dtype), out.shape))
