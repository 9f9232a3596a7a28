"""``Builder.for_loop``: build a ``tensor.for_loop`` from a Python body function.

The body is called once, with the induction variable and the carried values as Values; the ops
it builds go into the loop's body block. Outer values it reads become captured operands (block
arguments after the carried ones), so the region is closed.
"""

from __future__ import annotations

import operator

from ..ir.dtypes import int32
from ..ir.errors import BuildError
from ..ir.graph import Block, Region
from ..ir.value import Value
from .ops.control import ForLoopOp, YieldOp
from .types import TensorType


def build_for_loop(b, n, carried, body):
    """``b.for_loop(n, carried, body)``: see ``Builder.for_loop``."""
    try:
        n = operator.index(n)
    except TypeError:
        raise BuildError(f"tensor.for_loop: the trip count must be an int, got {n!r}") from None
    if n < 0:
        raise BuildError(f"tensor.for_loop: the trip count must be >= 0, got {n}")
    single = not isinstance(carried, (list, tuple))
    inits = [b.as_value(c) for c in ([carried] if single else carried)]
    if not callable(body):
        raise BuildError(f"tensor.for_loop: body must be a function body(i, *carried), got {body!r}")
    block = Block(
        [TensorType((), int32)] + [v.type for v in inits],
        ["i"] + [v.name_hint or "c" for v in inits],
    )
    for a in block.args:
        a._builder = b
    b._blocks.append(block)
    try:
        out = body(*block.args)
        outs = [out] if single and not isinstance(out, (list, tuple)) else out
        if not isinstance(outs, (list, tuple)) or len(outs) != len(inits):
            raise BuildError(
                f"tensor.for_loop: the body returns {_count(out)} value(s) for {len(inits)} carried value(s)"
            )
        nxt = []
        for k, (o, init) in enumerate(zip(outs, inits)):
            v = b.as_value(o, init.dtype)
            if v.type != init.type:
                raise BuildError(
                    f"tensor.for_loop: carried value {k} is {init.type} but the body returns {v.type}; "
                    "a carried value keeps its shape and dtype"
                )
            nxt.append(v)
        block.append(YieldOp(nxt))
    finally:
        b._blocks.pop()
    captured = _close(block)
    op = ForLoopOp(inits + captured, {"count": n, "carried": len(inits)}, regions=[Region([block])])
    if b.locator is not None:
        op.loc = b.locator()
    b._blocks[-1].append(op)
    for r, init in zip(op.results, inits):
        r.name_hint = init.name_hint or "loop"
        r._builder = b
    return op.results[0] if single else list(op.results)


def _count(out) -> int:
    return len(out) if isinstance(out, (list, tuple)) else 1


def _close(block: Block) -> list[Value]:
    """Replace the outer values the block's ops read by new block arguments; returns them."""
    inside = set(block.args)
    for op in block:
        for inner in op.walk():
            inside.update(inner.results)
            for r in inner.regions:
                for bb in r.blocks:
                    inside.update(bb.args)
    mapping: dict[Value, Value] = {}
    for op in block:
        for i, v in enumerate(op.operands):
            if v in inside:
                continue
            if v not in mapping:
                arg = block.add_arg(v.type, v.name_hint)
                arg._builder = v._builder
                mapping[v] = arg
            op.set_operand(i, mapping[v])
    return list(mapping)
