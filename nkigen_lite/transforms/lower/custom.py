"""Hand-written NKI bodies inlined into the kernel: ``tensor.custom_kernel`` ops, and composite
ops given a lowering of their own (``register_composite_lowering``). The body's inputs read the
operands' HBM homes and its output allocations become the results' homes; everything after —
hardware verifier, NKI interpreter, emitted module — sees its instructions like generated ones,
under a location naming the kernel."""

from __future__ import annotations

from collections.abc import Callable

from ...ir.clone import clone_op
from ...ir.errors import BuildError, VerifyError
from ...ir.graph import Graph
from ...ir.op import Op
from ...nki.ops import AllocOp, HbmViewOp
from ...nki.types import Access
from ...nki.verify import verify as nki_verify
from ...tensor import ops as T
from .context import LowerContext
from .homes import HbmHome
from .onchip_rows import held_inputs, note_stored, stored_outputs
from .rules import ITEM_RULES, item_rule


def inline_body(ctx: LowerContext, op: Op, body: Graph, outputs, label: str) -> None:
    """Copy ``body``'s ops into the kernel with its inputs bound to ``op``'s operands and
    ``outputs`` (names of body outputs, one per result of ``op``) as the results' homes."""
    held, skip = held_inputs(ctx, body, op.operands)  # loads of values SBUF already holds
    kept, kept_skip = stored_outputs(body, outputs)  # output tiles later items may read
    skip |= kept_skip
    vmap = {bv: ctx.view(ctx.home(v)) for bv, v in zip(body.inputs, op.operands)}
    vmap.update(held)
    placed = {}  # body output allocs written straight into a home placed before (a kernel output)
    for r, name in zip(op.results, outputs):
        bo = body.outputs[name]
        if r in ctx.homes and isinstance(bo.defining_op, AllocOp) and bo.defining_op.parent is body.body:
            home = ctx.view(ctx.homes[r])
            if tuple(home.type.shape) == tuple(bo.type.shape) and home.type.dtype is bo.type.dtype:
                vmap[bo] = placed[bo.defining_op] = home
    ctx.at(label + (f" at {op.loc}" if op.loc else ""))
    for inner in body.body:
        if inner is body.return_op or inner in placed or id(inner) in skip:
            continue
        base = _contiguous_view(vmap.get(inner.operand(0))) if isinstance(inner, HbmViewOp) else None
        if base is not None:  # a view of an input bound to a row-major view: view the root
            root, offset = base
            attrs = {"offset": offset + inner.attrs["offset"], "strides": inner.attrs["strides"]}
            new = HbmViewOp([root], attrs, [inner.result.type])
            new.loc = inner.loc
            ctx.b.append(new)
            new.result.name_hint = inner.result.name_hint
            vmap[inner.result] = new.result
            continue
        ctx.b.append(clone_op(inner, vmap))
    for r, name in zip(op.results, outputs):
        if body.outputs[name].defining_op not in placed:
            ctx.homes[r] = HbmHome.whole(vmap[body.outputs[name]])
        if name in kept:
            note_stored(ctx, r, Access.whole(vmap[kept[name]]), top_level=len(ctx.b._blocks) == 1)


def _contiguous_view(v):
    """(root, offset) when ``v`` is an ``hbm_view`` with row-major strides (a reshape or a
    contiguous window of its root's flat storage), else None."""
    op = v.defining_op if v is not None else None
    if not isinstance(op, HbmViewOp):
        return None
    shape, expect, step = v.type.shape, [], 1
    for n in reversed(shape):
        expect.append(step)
        step *= n
    if all(n == 1 or s == e for n, s, e in zip(shape, op.attrs["strides"], reversed(expect))):
        return op.operand(0), op.attrs["offset"]
    return None


@item_rule(T.CustomKernelOp)
def lower_custom_kernel(ctx: LowerContext, op: Op) -> None:
    inline_body(ctx, op, op.body(), op.attrs["outputs"], f"custom kernel {op.attrs['kernel']}")


_TAKES: dict[type, Callable] = {}
"""The ``takes(operand types, attrs)`` predicate of each composite lowering registered with one."""


def has_own_lowering(op_cls: type) -> bool:
    """True when a lowering rule is registered for exactly this (composite) op class."""
    return op_cls in ITEM_RULES


def own_lowering_takes(op: Op) -> bool:
    """True when ``op``'s class has a lowering of its own that takes its operand types and
    attributes (decompose keeps it; otherwise it expands into its definition)."""
    takes = _TAKES.get(type(op))
    return has_own_lowering(type(op)) and (
        takes is None or takes([v.type for v in op.operands], dict(op.attrs))
    )


def register_composite_lowering(op_cls: type, make_body: Callable, takes: Callable | None = None) -> None:
    """Lower the composite op ``op_cls`` (from ``nk.define_op``) by inlining the NKI kernel
    ``make_body(operand types, attrs)`` returns (one HBM input per operand, one output) instead
    of expanding it: decompose keeps an op with a lowering of its own, unless ``takes(operand
    types, attrs)`` is given and false (the op then expands into its definition)."""
    if not (isinstance(op_cls, type) and issubclass(op_cls, T.CompositeOp)) or op_cls is T.CompositeOp:
        raise BuildError(
            f"register_composite_lowering: {op_cls!r} is not a composite op class (nk.define_op)"
        )
    if not callable(make_body):
        raise BuildError(f"register_composite_lowering({op_cls.name}): make_body must be a function")
    if takes is not None:
        _TAKES[op_cls] = takes

    @item_rule(op_cls)
    def _lower(ctx: LowerContext, op: Op) -> None:
        types = [v.type for v in op.operands]
        body = make_body(types, dict(op.attrs))
        where = f"{op.name}'s registered lowering"
        if not isinstance(body, Graph):
            raise BuildError(f"{where} returned {type(body).__name__}, not an NKI graph")
        if len(body.outputs) != 1 or len(body.inputs) != len(types):
            raise BuildError(
                f"{where}: the kernel takes {len(body.inputs)} inputs and gives {len(body.outputs)} "
                f"outputs; the op has {len(types)} operands and one result"
            )
        for v, t in zip(list(body.inputs) + list(body.outputs.values()), types + [op.result.type]):
            if tuple(v.type.shape) != t.shape or v.type.dtype is not t.dtype:
                raise BuildError(f"{where}: kernel tensor {list(v.type.shape)} {v.type.dtype} is not {t}")
        try:
            nki_verify(body)
        except VerifyError as e:
            raise VerifyError(f"{where} (kernel {body.name!r}) breaks a hardware rule: {e}") from None
        inline_body(ctx, op, body, list(body.outputs), f"{op.name} (registered lowering {body.name})")
