"""What each tensor op asks of the roles of its operands' and results' dims.

- elementwise ops, broadcast_to: operand dims (aligned from the right) that are not
  broadcast share the result dim's role;
- reduce: reduced axes are F in the operand; kept dims share roles with the result (a
  keepdims size-1 dim is F);
- matmul A(…,M,K) @ B(…,K,N) = C(…,M,N): K is P in A and B, M is F in A, N is F in B and C,
  M is P in C, batch dims are I;
- transpose permutes roles; slice, concat keep them; reshape maps them through its groups of
  dims (1:1 groups share roles, split/merge groups are solved later, see ``solver.py``);
- sources (full, constant, iota), layout_convert and unknown ops constrain nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...ir.op import Op
from ...tensor import ops as T
from .ops import LayoutConvertOp

# one operand constraint: ("res", dim, result_dim) | ("opd", dim, other_operand, other_dim)
#                         | ("req", dim, role)


@dataclass
class OpConstraints:
    """Requirements on result dims, per-operand constraints, and reshape groups to solve."""

    results: list[tuple[int, str]] = field(default_factory=list)
    operands: list[list[tuple]] = field(default_factory=list)
    reshape_groups: list[tuple[tuple[int, ...], tuple[int, ...]]] = field(default_factory=list)


def _aligned(op: Op, i: int) -> list[tuple]:
    x, r = op.operand(i).shape, op.results[0].shape
    off = len(r) - len(x)
    return [("res", d, d + off) for d in range(len(x)) if x[d] == r[d + off]]


def reshape_groups(src: tuple[int, ...], dst: tuple[int, ...]):
    """Groups (src dims, dst dims) of equal element count, ignoring size-1 dims; None when the
    shapes have no such grouping (a zero-size tensor)."""
    a = [d for d, n in enumerate(src) if n != 1]
    b = [d for d, n in enumerate(dst) if n != 1]
    if 0 in src or 0 in dst:
        return None
    groups, i, j = [], 0, 0
    while i < len(a) or j < len(b):
        gi, gj = [a[i]], [b[j]]
        pa, pb = src[a[i]], dst[b[j]]
        i, j = i + 1, j + 1
        while pa != pb:
            if pa < pb:
                pa *= src[a[i]]
                gi.append(a[i])
                i += 1
            else:
                pb *= dst[b[j]]
                gj.append(b[j])
                j += 1
        groups.append((tuple(gi), tuple(gj)))
    return groups


def _matmul(op: Op, c: OpConstraints) -> None:
    a, b = (v.shape for v in op.operands)
    out = op.result.shape
    ca: list[tuple] = []
    cb: list[tuple] = []
    batch_a = len(a) - 2 if len(a) >= 2 else 0
    batch_b = len(b) - 2 if len(b) >= 2 else 0
    batch_c = max(batch_a, batch_b)
    ka = len(a) - 1
    kb = len(b) - 2 if len(b) >= 2 else 0
    ca.append(("req", ka, "P"))
    if len(a) >= 2:
        ca.append(("req", len(a) - 2, "F"))
    cb += [("req", kb, "P"), ("opd", kb, 0, ka)]
    if len(b) >= 2:
        n_c = len(out) - 1
        cb += [("req", len(b) - 1, "F"), ("res", len(b) - 1, n_c)]
        c.results.append((n_c, "F"))
    if len(a) >= 2:
        c.results.append((len(out) - 1 if len(b) < 2 else len(out) - 2, "P"))
    for cx, shape, nb in ((ca, a, batch_a), (cb, b, batch_b)):
        for d in range(nb):
            cx.append(("req", d, "I"))
            k = d + batch_c - nb
            if shape[d] == out[k]:
                cx.append(("res", d, k))
    c.results += [(k, "I") for k in range(batch_c)]
    c.operands = [ca, cb]


def op_constraints(op: Op) -> OpConstraints:
    """The constraints ``op`` puts on roles (see the module docstring)."""
    c = OpConstraints(operands=[[] for _ in op.operands])
    if isinstance(op, LayoutConvertOp) or len(op.results) != 1:
        return c
    if isinstance(op, (T.UnaryOp, T.BinaryOp, T.WhereOp, T.CastOp, T.BroadcastToOp)):
        c.operands = [_aligned(op, i) for i in range(op.num_operands)]
    elif isinstance(op, T.ReduceOp):
        axes, keep = op.attrs["axes"], op.attrs["keepdims"]
        kept = [d for d in range(op.operand(0).ndim) if d not in axes]
        cons: list[tuple] = [("req", d, "F") for d in axes]
        if keep:
            cons += [("res", d, d) for d in kept]
            c.results = [(d, "F") for d in axes]
        else:
            cons += [("res", d, k) for k, d in enumerate(kept)]
        c.operands = [cons]
    elif isinstance(op, T.MatmulOp):
        _matmul(op, c)
    elif isinstance(op, T.TransposeOp):
        c.operands = [[("res", p, i) for i, p in enumerate(op.attrs["perm"])]]
    elif isinstance(op, (T.SliceOp, T.ConcatOp)):
        c.operands = [[("res", d, d) for d in range(v.ndim)] for v in op.operands]
    elif isinstance(op, T.ReshapeOp):
        groups = reshape_groups(op.operand(0).shape, op.result.shape) or []
        c.operands = [[("res", gi[0], gj[0]) for gi, gj in groups if len(gi) == len(gj) == 1]]
        c.reshape_groups = [(gi, gj) for gi, gj in groups if not len(gi) == len(gj) == 1]
    return c
