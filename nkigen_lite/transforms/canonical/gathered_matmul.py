"""A batched matmul whose right operand is ``gather_rows`` of a stacked table (the experts of a
mixture of experts) reads each selected matrix once, without an HBM copy of the gathered ones.

``A @ gather_rows(T, ids)``, with ``T`` (E, K, N), 1-D ``ids`` of n selections and ``A``
(n, 1, K) — one row per selection, e.g. a token's activations for each of its top-k experts —
becomes one of:

- **gathered** (n <= E: fewer selections than matrices): ``tensor.gathered_matmul(a, T, ids,
  group)``, lowered with each selected matrix gathered straight into SBUF
  (lower/gathered_matmul.py). When ``A`` repeats each row of ``a`` (t, 1, K) ``group`` times
  (``reshape(broadcast_to(a, (t, group, K)), (n, 1, K))``, a token broadcast over its k
  experts), the op takes ``a`` itself.
- **dense** (n > E: more selections than matrices, so some matrix is selected twice): every
  matrix read once and applied to every token, ``D = X @ T`` (E, t, N), and the selections'
  rows picked from ``D`` by ``gather_rows(D, ids·t + token)``. ``X`` is ``a`` when ``A`` repeats
  the rows of ``a``, else ``A``'s rows scattered into a zero (E·t, 1, K) buffer at
  ``ids·t + token`` (``scatter_rows``). Needs ``ids = reshape(I)`` with ``I`` (t, k) the indices
  of a ``topk`` over its last axis, so a token's k ids are distinct and ``ids·t + token`` names
  each selection's (matrix, token) pair once.

Both compute every selection's row as the same dot products as the matmul (the dense form also
computes rows nobody reads), so the results are the matmul's, rounding included.
"""

from __future__ import annotations

from ...ir.dtypes import int32
from ...ir.rewrite import RewritePattern
from ...tensor import ops as T
from ...tensor.composites_gathered_matmul import GatheredMatmulOp
from ...tensor.types import TensorType
from ..lower.gathered_matmul import supported
from ..match import def_op, full, make, replace


def _repeated_rows(a):
    """(x, group) when ``a`` (n, 1, K) is ``reshape(broadcast_to(x, (t, group, K)), (n, 1, K))``
    of an ``x`` (t, 1, K) (or a reshape of one); else (a, 1)."""
    r = def_op(a, T.ReshapeOp)
    bc = def_op(r.operand(0), T.BroadcastToOp) if r is not None else None
    if bc is None or bc.result.type.rank != 3:
        return a, 1
    x = bc.operand(0)
    t, g, k = bc.result.type.shape
    if tuple(x.type.shape) == (t, 1, k):
        return x, g
    if x.type.size == t * k and x.type.rank >= 1 and x.type.shape[-1] == k:
        return x, g  # reshaped below to (t, 1, K)
    return a, 1


def _topk_rows(ids):
    """(t, k) when 1-D ``ids`` is a reshape of the (t, k) indices of a last-axis ``topk``."""
    r = def_op(ids, T.ReshapeOp)
    top = def_op(r.operand(0), T.TopkOp) if r is not None else None
    if top is None or r.operand(0) is not top.results[1]:
        return None
    shape = top.results[1].type.shape
    if len(shape) != 2 or top.attrs["axis"] != 1:
        return None
    return shape


class GatheredMatmul(RewritePattern):
    """A @ gather_rows(T, ids) → gathered_matmul(a, T, ids, group)   (n <= E), or the dense form
    gather_rows(X @ T, ids·t + token)   (n > E, ids from a topk)"""

    root = T.MatmulOp

    def match_and_rewrite(self, op, rw):
        lhs, rhs = op.operands
        gr = def_op(rhs, T.GatherRowsOp)
        if gr is None:
            return False
        table, ids = gr.operands
        if table.type.rank != 3 or ids.type.rank != 1 or lhs.type.rank != 3:
            return False
        e, k, n_cols = table.type.shape
        n = ids.type.shape[0]
        if tuple(lhs.type.shape) != (n, 1, k) or lhs.dtype is not table.dtype:
            return False
        x, group = _repeated_rows(lhs)
        rows = n // group
        if n > e:
            return self.dense(op, rw, lhs, x, group, table, ids)
        x = x if tuple(x.type.shape) == (rows, 1, k) else make(rw, T.ReshapeOp, [x], {"shape": (rows, 1, k)})
        if not supported([x.type, table.type, ids.type], {"group": group}):
            return False
        new = make(rw, GatheredMatmulOp, [x, table, ids], {"group": group})
        return replace(rw, op, new)

    def dense(self, op, rw, lhs, x, group, table, ids) -> bool:
        tk = _topk_rows(ids)
        if tk is None:
            return False
        t, kk = tk
        e, k, n_cols = table.type.shape
        n = ids.type.shape[0]
        top_ids = def_op(ids, T.ReshapeOp).operand(0)
        token = make(rw, T.IotaOp, [], {"axis": 0}, result_type=TensorType((t, kk), int32))
        key = make(rw, T.AddOp, [make(rw, T.MulOp, [top_ids, full(rw, t, top_ids.dtype)]), token])
        key = make(rw, T.ReshapeOp, [key], {"shape": (n,)})
        if group == kk and x.type.size == t * k:
            xs = make(rw, T.ReshapeOp, [x], {"shape": (1, t, k)})
        else:
            zeros = full(rw, 0, lhs.dtype, (e * t, 1, k))
            scattered = make(rw, T.ScatterRowsOp, [zeros, key, lhs], {"unique": True})
            xs = make(rw, T.ReshapeOp, [scattered], {"shape": (e, t, k)})
        dense = self.every_matrix(rw, xs, table)  # (E, t, N): every matrix on every token
        flat = make(rw, T.ReshapeOp, [dense], {"shape": (e * t, 1, n_cols)})
        return replace(rw, op, make(rw, T.GatherRowsOp, [flat, key]))

    @staticmethod
    def every_matrix(rw, xs, table):
        """``xs @ table`` for xs (1 or E, t, K): a ``gathered_matmul`` over ids 0 … E-1 (each
        matrix read once, in one DMA) when the kernel takes the shapes, else the matmul."""
        group = _every_matrix_group(xs, table)
        if group is None:
            return make(rw, T.MatmulOp, [xs, table])
        e = table.type.shape[0]
        ids = make(rw, T.IotaOp, [], {"axis": 0}, result_type=TensorType((e,), int32))
        return make(rw, GatheredMatmulOp, [xs, table, ids], {"group": group})


def _every_matrix_group(xs, table):
    """``group`` of the gathered_matmul over ids 0 … E-1 computing ``xs @ table`` (E when xs
    has one batch, else 1), or None when the kernel does not take the shapes."""
    e = table.type.shape[0]
    group = e if xs.type.shape[0] == 1 else 1
    ok = supported([xs.type, table.type, TensorType((e,), int32)], {"group": group})
    return group if ok else None


class WidenGatheredMatmul(RewritePattern):
    """cast(gathered_matmul(a, T, ids), f32) → gathered_matmul(a, T, ids, astype="float32")
    (its only use): the kernel widens its rounded results on their last on-chip copy, instead of
    a separate group reading them back from HBM."""

    root = T.CastOp

    def match_and_rewrite(self, op, rw):
        gm = def_op(op.operand(0), GatheredMatmulOp)
        if gm is None or gm.attrs["astype"] or op.result.dtype.name != "f32" or len(gm.result.uses) != 1:
            return False
        attrs = {"group": gm.attrs["group"], "astype": "float32"}
        if not supported([v.type for v in gm.operands], attrs):
            return False
        return replace(rw, op, make(rw, GatheredMatmulOp, list(gm.operands), attrs))


GATHERED_MATMUL_PATTERNS = (GatheredMatmul(), WidenGatheredMatmul())
