"""What each tensor op asks of the roles of its operands' and results' dims.

- elementwise ops, broadcast_to: operand dims (aligned from the right) that are not
  broadcast share the result dim's role;
- reduce: reduced axes are F in the operand; kept dims share roles with the result (a
  keepdims size-1 dim is F);
- matmul A(…,M,K) @ B(…,K,N) = C(…,M,N): K is P in A and B, M is F in A, N is F in B and C,
  M is P in C, batch dims are I; the requirements on 2-D+ operands are *soft*
  (``OpConstraints.soft``): they do not reach back into an elementwise producer (seen through
  transposes, reshapes, slices, concats) whose dims are still free (see ``solver.py``);
- transpose permutes roles; slice, concat keep them; reshape maps them through its groups of
  dims (1:1 groups share roles, split/merge groups are solved later, see ``solver.py``);
- sources (full, constant, iota) and non-tensor ops (layout_convert) constrain nothing; a
  tensor op without a rule is an error (every tensor op class needs one, see ``layout_rule``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ...ir.errors import BuildError
from ...ir.op import Op
from ...ir.registry import table
from ...parallel.collective_ops import CollectiveOp
from ...tensor import ops as T
from ..lower.custom import has_own_lowering
from .ops import LayoutConvertOp
from .policy import is_column_reduction

# one operand constraint: ("res", dim, result_dim) | ("opd", dim, other_operand, other_dim)
#                         | ("req", dim, role)


@dataclass
class OpConstraints:
    """Requirements on result dims, per-operand constraints, reshape groups to solve, and the
    operands whose requirements are soft (read through a layout_convert rather than imposed on
    an elementwise producer left free, ``solver.py``)."""

    results: list[tuple[int, str]] = field(default_factory=list)
    operands: list[list[tuple]] = field(default_factory=list)
    reshape_groups: list[tuple[tuple[int, ...], tuple[int, ...]]] = field(default_factory=list)
    soft: tuple[int, ...] = ()


ELEMENTWISE_OPS = (T.UnaryOp, T.BinaryOp, T.WhereOp, T.CastOp)
"""Tensor ops computing each result element from the aligned operand elements (their layout
rule is ``_elementwise``)."""


def is_elementwise(op) -> bool:
    """True when ``op`` is an elementwise computation (see ``ELEMENTWISE_OPS``)."""
    return isinstance(op, ELEMENTWISE_OPS)


VIEW_OPS = (T.TransposeOp, T.ReshapeOp, T.SliceOp, T.ConcatOp)
"""Ops that only move data: the solver sees an elementwise result through them (``soft``)."""


def elementwise_through_views(v) -> bool:
    """True when ``v`` is an elementwise result, or a transpose / reshape / slice / concat (of
    ...) of one (a concat: of at least one part). Each view op is visited once."""
    todo, seen = [v], set()
    while todo:
        op = todo.pop().defining_op
        if is_elementwise(op):
            return True
        if isinstance(op, VIEW_OPS) and id(op) not in seen:
            seen.add(id(op))
            todo.extend(op.operands)
    return False


LAYOUT_RULES: dict[type, Callable[[Op, OpConstraints], None]] = table()
"""Tensor op class -> rule filling its OpConstraints (looked up along the class's MRO)."""


def layout_rule(*op_classes: type):
    """Register ``fn(op, constraints)`` as the layout rule of ``op_classes``."""

    def register(fn):
        for c in op_classes:
            LAYOUT_RULES[c] = fn
        return fn

    return register


def rule_for(op_class: type):
    """The layout rule of ``op_class`` (along its MRO), or None."""
    return next((LAYOUT_RULES[k] for k in op_class.__mro__ if k in LAYOUT_RULES), None)


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


@layout_rule(T.MatmulOp)
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
    # K on the partitions is A's transposed layout (and B's when B is a transposed view)
    c.soft = tuple(i for i, shape in enumerate((a, b)) if len(shape) >= 2)


@layout_rule(*ELEMENTWISE_OPS, T.BroadcastToOp)
def _elementwise(op: Op, c: OpConstraints) -> None:
    c.operands = [_aligned(op, i) for i in range(op.num_operands)]


@layout_rule(T.ConstantOp, T.FullOp, T.IotaOp, LayoutConvertOp, T.CustomKernelOp)
def _free(_op: Op, _c: OpConstraints) -> None:
    """Sources and layout_convert constrain nothing: the solver places them."""


@layout_rule(T.ForLoopOp)
def _for_loop(_op: Op, _c: OpConstraints) -> None:
    """A loop constrains nothing outside. The solver lays out the graph's top block only; a
    loop body is laid out when it is lowered (for_loop.py lowers it as a graph of its own)."""


@layout_rule(CollectiveOp)
def _collective(_op: Op, _c: OpConstraints) -> None:
    """Collectives move whole HBM tensors (transforms/lower/collective.py): no tile roles."""


@layout_rule(T.CompositeOp)
def _composite(op: Op, _c: OpConstraints) -> None:
    """Composite ops are expanded by decompose, unless a lowering of their own is registered
    (then, like a custom kernel, they read and write HBM and constrain nothing); another one
    reaching layout is a pipeline error."""
    if has_own_lowering(type(op)):
        return
    raise BuildError(
        f"layout: {op.name} is a composite op; run decompose first (it expands "
        "composites into their definitions)"
    )


@layout_rule(T.TopkOp)
def _topk(_op: Op, _c: OpConstraints) -> None:
    """A tensor.topk left by decompose is lowered on HBM homes (transforms/lower/topk.py: rows
    on the partitions, the axis streamed in chunks): no role constraints."""


@layout_rule(T.ReduceOp)
def _reduce(op: Op, c: OpConstraints) -> None:
    axes, keep = op.attrs["axes"], op.attrs["keepdims"]
    kept = [d for d in range(op.operand(0).ndim) if d not in axes]
    if is_column_reduction(op.operand(0).shape, axes):  # reduced dims on partitions / loops
        cons: list[tuple] = [("req", op.operand(0).ndim - 1, "F")]
    else:
        cons = [("req", d, "F") for d in axes]
    if keep:
        cons += [("res", d, d) for d in kept]
        c.results = [(d, "F") for d in axes]
    else:
        cons += [("res", d, k) for k, d in enumerate(kept)]
    c.operands = [cons]


@layout_rule(T.TransposeOp)
def _transpose(op: Op, c: OpConstraints) -> None:
    c.operands = [[("res", p, i) for i, p in enumerate(op.attrs["perm"])]]


@layout_rule(T.SliceOp, T.ConcatOp)
def _same_dims(op: Op, c: OpConstraints) -> None:
    c.operands = [[("res", d, d) for d in range(v.ndim)] for v in op.operands]


@layout_rule(T.ReshapeOp)
def _reshape(op: Op, c: OpConstraints) -> None:
    groups = reshape_groups(op.operand(0).shape, op.result.shape) or []
    c.operands = [[("res", gi[0], gj[0]) for gi, gj in groups if len(gi) == len(gj) == 1]]
    c.reshape_groups = [(gi, gj) for gi, gj in groups if not len(gi) == len(gj) == 1]


def op_constraints(op: Op) -> OpConstraints:
    """The constraints ``op`` puts on roles (see the module docstring). A tensor op without a
    layout rule is a BuildError naming it and this file."""
    c = OpConstraints(operands=[[] for _ in op.operands])
    if not isinstance(op, T.TensorOp):
        return c  # return: no constraints
    rule = rule_for(type(op))
    if rule is None:
        raise BuildError(
            f"layout: {op.name} has no layout rule; register one with "
            "@layout_rule in nkigen_lite/transforms/layout/constraints.py"
        )
    if len(op.results) == 1:
        rule(op, c)
    return c


from . import indexed_rules  # noqa: E402, F401  (the indexed ops' rules)
