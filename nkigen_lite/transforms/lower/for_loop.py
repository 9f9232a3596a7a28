"""Lowering of ``tensor.for_loop``: one ``nki.fori_loop`` whose body is the loop body lowered
like a kernel of its own (never unrolled).

- Each carried value lives in a **state** buffer in HBM: the loop result's home, initialised
  from the initial value before the loop.
- The induction variable is a 1-element int32 HBM buffer written at the start of every
  iteration (a GpSimd ``iota`` whose offset is the loop index, then one DMA).
- The body becomes a standalone tensor graph (inputs: the induction variable, the carried and
  the captured values; outputs: the yielded values) and is lowered with the kernel's context:
  its inputs' homes are the buffers above and the captured values' homes, its yielded values
  go to **next** buffers, and at the end of the iteration the next buffers are copied into the
  state buffers (so no read of a carried value in the body can see the next iteration's value).
  A yielded value that updates its carried value in place (inplace.py: a block update, or a
  row scatter such as a KV-cache write at the induction variable) is written straight into
  the state buffer instead, with no copy.
- HBM buffers and views the body needs are kernel-level: they are placed before the outermost
  loop (``LowerContext.top_level``) and reused by every iteration.
"""

from __future__ import annotations

from ...ir.clone import _clone_op
from ...ir.dtypes import int32
from ...ir.graph import Graph
from ...ir.printer import Printer
from ...nki.types import Access
from ...tensor import ops as T
from . import driver
from .homes import HbmHome
from .inplace import is_in_place_update, place_aliased_outputs, scattered_update
from .rules import item_rule
from .views import copy_home


def body_graph(op: T.ForLoopOp) -> Graph:
    """The loop body as a tensor graph: inputs ``i``, ``c0..``, ``a0..`` (the block arguments),
    outputs ``y0..`` (the yielded values)."""
    g = Graph("loop_body")
    k = op.attrs["carried"]
    names = ["i"] + [f"c{j}" for j in range(k)] + [f"a{j}" for j in range(len(op.captured_args))]
    vmap = {a: g.add_input(n, a.type) for n, a in zip(names, op.body.args)}
    term = op.body.last
    for inner in op.body:
        if inner is not term:
            g.body.append(_clone_op(inner, vmap, {}))
    outputs = {f"y{j}": vmap[v] for j, v in enumerate(term.operands)}
    g.set_outputs(outputs, _updates_in_place(g, outputs, k))
    return g


def _updates_in_place(g: Graph, outputs: dict, k: int) -> dict[str, str]:
    """Aliases ``y{j} -> c{j}`` for yielded values that update their carried value in place (a
    block update or a row scatter that nothing else reads): they are then computed straight
    into the state buffer, with no copy at the end of the iteration."""
    aliases = {}
    for j in range(k):
        x, v = g.input(f"c{j}"), outputs[f"y{j}"]
        if any(o is x for o in outputs.values()):
            continue
        if is_in_place_update(x, v) or scattered_update(x, v) is not None:
            aliases[f"y{j}"] = f"c{j}"
    return aliases


@item_rule(T.ForLoopOp)
def lower_for_loop(ctx, op: T.ForLoopOp) -> None:
    k = op.attrs["carried"]
    states = [ctx.home_for_store(r) for r in op.results]
    for init, st in zip(op.operands[:k], states):
        h = ctx.home(init)
        if h != st:
            copy_home(ctx, h, st)
    n = op.attrs["count"]
    if n == 0:
        return
    g = body_graph(op)
    index = ctx.alloc_hbm((), int32, name="loop_index") if g.inputs[0].has_uses else None
    outer = ctx.hoist_before
    b = ctx.b
    with b.fori_loop(0, n) as i:
        if outer is None:
            ctx.hoist_before = b._blocks[0].last  # this nki.fori_loop
        try:
            if g.inputs[0].has_uses:  # the body reads the induction variable
                ctx.at(f"{op.name} index")
                t = b.alloc((1, 1), int32)
                b.iota(dst=t, pattern=[[1, 1]], offset=i)
                b.dma_copy(dst=Access.whole(ctx.view(index)), src=Access.whole(t))
                b.dealloc(t)
            args = [index, *states, *(ctx.home(v) for v in op.operands[k:])]
            for v, h in zip(g.inputs, args):
                ctx.homes[v] = h
            yielded = lower_body(ctx, g)
            ctx.at(f"{op.name} carried values")
            for h, st in zip(yielded, states):
                if h != st:
                    copy_home(ctx, h, st)
        finally:
            ctx.hoist_before = outer


def lower_body(ctx, g: Graph) -> list[HbmHome]:
    """Lower the ops of ``g`` (its inputs already have homes) at the builder's current
    insertion point, as ``lower_to_nki`` lowers a kernel; returns the outputs' homes."""
    free_limit = (ctx.target.sbuf_bytes_per_partition * 3 // 4) // 16
    saved = ctx.printer
    try:
        part, plans, row_local, pairs, splits = driver._partition_and_plan(ctx, g, free_limit)
        ctx.printer = Printer(g)
        driver.add_constant_inputs(ctx, g)
        producers = driver._produced_in_kernel(g, part)
        outputs = list(g.outputs.values())
        place_aliased_outputs(ctx, g, g.outputs, producers)
        for v in outputs:
            if v in producers and v not in ctx.homes:
                ctx.homes[v] = ctx.alloc_hbm(v.type.shape, v.type.dtype)
        driver.plan_concats(ctx, g, producers, set(outputs))
        driver._lower_items(ctx, part, plans, row_local, set(outputs), pairs, splits)
        return [ctx.home(v) for v in outputs]
    finally:
        ctx.printer = saved
