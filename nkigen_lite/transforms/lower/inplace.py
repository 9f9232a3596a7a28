"""In-place outputs (IO aliasing): when an aliased output is written straight into its input.

An output ``v`` aliasing input ``x`` is computed *into x's buffer* when that is safe and moves
only the bytes that change: ``v`` is a tree of concats whose leaves are either slices of ``x``
at their own position (nothing to copy: the bytes are already there) or new data, and every
read of ``x`` is such a slice. The new data then lands in regions no read of ``x`` touches, so
no read can see an overwritten element whatever order the lowering picks. This is the form a
static ``x[:, 3] = k`` takes after tracing. Likewise a ``tensor.scatter_rows`` into (a reshape
of) ``x`` that nothing else reads — what ``dynamic_update_slice`` decomposes to — scatters its
rows straight into x's buffer, and a ``tensor.for_loop`` whose initial value is ``x`` (and that
nothing else reads) keeps that carried value in x's buffer. Any other aliased output is
computed aside and copied into the input's buffer after everything else (all bytes move, and
every read of the old contents comes first).
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
        if v in producers and v not in ctx.homes and (is_in_place_update(x, v) or loop_update(x, v)):
            ctx.homes[v] = ctx.homes[x]
            continue
        s = scattered_update(x, v)
        if s is not None and s not in ctx.homes:
            home = ctx.homes[x].reshape(tuple(s.type.shape))
            if home is not None:
                ctx.homes[s] = home  # the scatter writes its rows into x's buffer
    return aliases


def loop_update(x: Value, v: Value) -> bool:
    """True when ``v`` is a ``tensor.for_loop`` result whose initial value is ``x`` and nothing
    else reads ``x``: the loop's state buffer for it can be x's buffer."""
    op = v.defining_op
    if not isinstance(op, T.ForLoopOp) or v.index >= op.attrs["carried"]:
        return False
    return op.operand(v.index) is x and sum(o is x for o in op.operands) == 1 and _readers(x) == {op}


def scattered_update(x: Value, v: Value) -> Value | None:
    """The ``tensor.scatter_rows`` result when ``v`` is (up to reshapes) x with rows scattered
    into it, and nothing else reads ``x``: what ``dynamic_update_slice`` (the KV-cache write
    at a runtime position) decomposes to. Its rows can be scattered straight into x's buffer."""
    s = _through_reshapes(v)
    op = s.defining_op
    if op is None or op.name != "tensor.scatter_rows" or _through_reshapes(op.operand(0)) is not x:
        return None
    readers = _readers(x, through_reshapes=True)
    return s if readers == {op} else None


def _unit_transpose(op) -> bool:
    """A transpose that only moves extent-1 dims: the elements keep their row-major order (the
    ``cache[:, pos] = x`` trace moves the unit batch dim behind the positions and back)."""
    if not isinstance(op, T.TransposeOp):
        return False
    shape = op.operand(0).type.shape
    moved = [d for d in op.attrs["perm"] if shape[d] > 1]
    return moved == sorted(moved)


def _reshaping(op) -> bool:
    return is_layout_convert(op) or isinstance(op, T.ReshapeOp) or _unit_transpose(op)


def _through_reshapes(u: Value) -> Value:
    op = u.defining_op
    while op is not None and _reshaping(op):
        u = op.operand(0)
        op = u.defining_op
    return u


def finish_aliased_outputs(ctx, graph, outputs: dict, aliases: dict[str, str]) -> dict:
    """Kernel outputs for the aliased graph outputs: their input buffers, with the value copied
    in when it was computed elsewhere (called after everything else is lowered, so every read
    of the old contents comes first)."""
    final = {}
    for name, inp in aliases.items():
        h, dst = ctx.home(outputs[name]), ctx.homes[graph.input(inp)]
        if not h.same_elements(dst):
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


def _readers(x: Value, through_reshapes: bool = False) -> set:
    """The ops reading ``x`` directly or through layout conversions (and reshapes)."""
    out, todo = set(), [x]
    while todo:
        u = todo.pop()
        for use in u.uses:
            if is_layout_convert(use.op) or (through_reshapes and _reshaping(use.op)):
                todo.append(use.op.result)
            else:
                out.add(use.op)
    return out
