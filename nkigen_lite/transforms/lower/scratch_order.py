"""The storage order of a scratch buffer whose value is laid out with its last dim on the
partitions: the buffer holds the value's dims as [I..., P..., F...] (each kept in order), so the
tiles that fill it store whole free-dim runs, and the value's home is a transposed view of it.

Only for values read by nothing but matmuls (through layout_convert and transpose views): a
matmul reads an operand through any strided home (K-major windows or natural loads plus TensorE
transposes). ``(a.T * 2.0) @ b`` computes the product with K on the partitions (a's rows, loaded
whole); a row-major (M, K) scratch buffer took it with one element per DMA descriptor.
"""

from __future__ import annotations

from ...ir.value import Value
from ...tensor import ops as T
from .views import is_layout_convert


def _read_by_matmuls_only(v: Value) -> bool:
    uses = list(v.uses)
    for u in uses:
        if is_layout_convert(u.op) or isinstance(u.op, T.TransposeOp):
            if not _read_by_matmuls_only(u.op.result):
                return False
        elif not isinstance(u.op, T.MatmulOp):
            return False
    return bool(uses)


def scratch_order(v: Value, roles) -> tuple[int, ...] | None:
    """The dims of ``v`` in storage order (outermost first) for its scratch buffer, or None for
    row-major (see the module docstring)."""
    if not roles or len(roles) < 2 or roles[-1] != "P" or "F" not in roles:
        return None
    order = tuple(d for r in "IPF" for d, x in enumerate(roles) if x == r)
    if order == tuple(range(len(roles))) or not _read_by_matmuls_only(v):
        return None
    return order
