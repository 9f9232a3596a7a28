"""``tensor.gathered_matmul``: one matmul per selection on a matrix picked from a stacked table.

``y[s] = a[s // group] @ table[ids[s]]`` for the ``n`` selections ``s`` of the 1-D integer ``ids``:
``a`` is (n / group, M, K) (``group`` consecutive selections share one row block of ``a``, as the
top-k experts of one token share its activations), ``table`` is (E, K, N) (E stacked matrices,
e.g. one projection of every expert of a mixture of experts), the result (n, M, N) in the dtype
NumPy's matmul of ``a`` and ``table`` gives, then cast to ``astype`` when it names a dtype
(``(a @ table[ids]).astype(np.float32)``: the matmul's rounding, then the cast). It is
``a @ table[ids]`` with ``a`` repeated ``group`` times along its first axis, and its expansion is
exactly that (a ``gather_rows`` and a batched ``matmul``). canonical/gathered_matmul.py forms it
from a matmul whose right operand is a ``gather_rows``; lower/gathered_matmul.py lowers it with
each selected matrix read straight from the table into SBUF (an indirect DMA per selection),
never through an HBM copy of the gathered matrices."""

from __future__ import annotations

from .ops.composite import define_op


def _gathered_matmul(a, table, ids, group=1, astype=""):
    """a[s // group] @ table[ids[s]] for every selection s of ids: (len(ids), M, N); cast to
    ``astype`` (a NumPy dtype name) after the matmul's own rounding when given."""
    rows = table[ids]  # (n, K, N)
    na, m, k = a.shape
    n = ids.shape[0]
    picked = rows.reshape(na, group, k, table.shape[-1])
    y = (a.reshape(na, 1, m, k) @ picked).reshape(n, m, table.shape[-1])
    return y.astype(astype) if astype else y


GatheredMatmulOp = define_op(
    "gathered_matmul",
    _gathered_matmul,
    numpy=(
        "(np.repeat(a, group, axis=0) @ table[ids]).astype(astype or the matmul's dtype) "
        "(ids 1-D int32 / uint32 in [0, len(table)))"
    ),
)
