"""In-place outputs (IO aliasing): when an aliased output is written straight into its input.

An output ``v`` aliasing input ``x`` is computed *into x's buffer* when that is safe and moves
only the bytes that change: ``v`` is a tree of concats whose leaves are either slices of ``x``
at their own position (nothing to copy: the bytes are already there) or new data, and every
read of ``x`` is such a slice. The new data then lands in regions no read of ``x`` touches, so
no read can see an overwritten element whatever order the lowering picks. This is the form a
static ``x[:, 3] = k`` takes after tracing. Any other aliased output is computed aside and copied
into the input's buffer after everything else (all bytes move, and every read of the old
contents comes first).
"""

from __future__ import annotations

from ...ir.value import Value
from ...tensor import ops as T
from .views import copy_home, is_layout_convert


def place_aliased_outputs(ctx, graph, outputs: dict, producers: set) -> dict[str, str]:
    """The aliases of ``outputs`` the kernel honours (inputs it takes); an output that is an
    in-place update of its input gets the input's buffer as its home before anything is
    planned, so its new blocks are computed or copied straight into it."""
    aliases = {n: a for n, a in graph.aliases.items() if n in outputs and graph.input(a) in ctx.homes}
    for name, inp in aliases.items():
        v, x = outputs[name], graph.input(inp)
        if v in producers and v not in ctx.homes and is_in_place_update(x, v):
            ctx.homes[v] = ctx.homes[x]
    return aliases


def finish_aliased_outputs(ctx, graph, outputs: dict, aliases: dict[str, str]) -> dict:
    """Kernel outputs for the aliased graph outputs: their input buffers, with the value copied
    in when it was computed elsewhere (called after everything else is lowered, so every read
    of the old contents comes first)."""
    final = {}
    for name, inp in aliases.items():
        h, dst = ctx.home(outputs[name]), ctx.homes[graph.input(inp)]
        if h != dst:
            ctx.at(f"output {name}")
            copy_home(ctx, h, dst)
        final[name] = dst.base
    return final


def _through_converts(u: Value) -> Value:
    op = u.defining_op
    while op is not None and is_layout_convert(op):
        u = op.operand(0)
        op = u.defining_op
    return u


def is_in_place_update(x: Value, v: Value) -> bool:
    """True when ``v`` (an output aliasing input ``x``) can be computed into x's buffer with only
    its new blocks written (see the module docstring)."""
    v = _through_converts(v)
    if not isinstance(v.defining_op, T.ConcatOp):
        return False
    placed: set = set()  # slice ops of x found at their own position
    misplaced: set = set()

    def walk(u: Value, offset: tuple[int, ...]) -> None:
        u = _through_converts(u)
        op = u.defining_op
        if isinstance(op, T.SliceOp) and _through_converts(op.operand(0)) is x:
            own = tuple(op.attrs["starts"]) == offset and all(s == 1 for s in op.attrs["strides"])
            (placed if own else misplaced).add(op)
        elif isinstance(op, T.ConcatOp):
            ax, start = op.attrs["axis"], 0
            for p in op.operands:
                off = list(offset)
                off[ax] += start
                walk(p, tuple(off))
                start += p.type.shape[ax]

    walk(v, (0,) * len(v.type.shape))
    readers = _readers(x)
    return not misplaced and bool(placed) and readers <= placed


def _readers(x: Value) -> set:
    """The ops reading ``x`` directly or through layout conversions."""
    out, todo = set(), [x]
    while todo:
        u = todo.pop()
        for use in u.uses:
            if is_layout_convert(use.op):
                todo.append(use.op.result)
            else:
                out.add(use.op)
    return out
