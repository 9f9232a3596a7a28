"""A value reached from a computed one through transposes and a copying reshape is computed in
the reshaped layout.

``y = reshape(transpose(reshape(x)))`` — attention's ``(p @ v).transpose(0, 2, 1, 3).reshape(s,
h·d)`` — is a reshape of a permuted view, which needs a copy: ``x`` would be stored to scratch
in its own row-major order and copied into ``y``'s order by one HBM -> HBM DMA of the whole
value (moving runs of one head row). When ``x`` is produced by the kernel and read by nothing
but the chain (each link read once), ``y``'s buffer is allocated first and ``x``'s home is the
chain run backwards over it — a strided view of ``y``'s buffer, its last dim contiguous — so
the producer's stores write ``y``'s layout directly, every link of the chain becomes a view
and no copy is made. A returned ``y`` gets the output's own buffer.
"""

from __future__ import annotations

from ...ir.types import row_major_strides
from ...ir.value import Value
from ...tensor import ops as T
from .context import LowerContext
from .homes import HbmHome

_LINKS = (T.ReshapeOp, T.TransposeOp)


def _chain(y: Value):
    """(x, links from y back to x) when ``y`` is reshapes / transposes of ``x``, each link's
    operand read once."""
    links = []
    v = y
    while isinstance(v.defining_op, _LINKS):
        links.append(v.defining_op)
        v = v.defining_op.operand(0)
        if v.num_uses != 1:
            break
    return v, links


def _forward(h: HbmHome, links) -> HbmHome | None:
    """``h`` run through the links (x -> y); None when some reshape needs a copy."""
    for op in reversed(links):
        if isinstance(op, T.TransposeOp):
            h = h.transpose(op.attrs["perm"])
        else:
            h = h.reshape(tuple(op.attrs["shape"]))
            if h is None:
                return None
    return h


def _backward(h: HbmHome, links) -> HbmHome | None:
    """``h`` (y's home) run back through the links to a home of x, or None."""
    for op in links:
        src = op.operand(0)
        if isinstance(op, T.TransposeOp):
            perm = op.attrs["perm"]
            inv = [0] * len(perm)
            for i, p in enumerate(perm):
                inv[p] = i
            h = h.transpose(inv)
        else:
            h = h.reshape(tuple(src.type.shape))
            if h is None:
                return None
    return h


def place_view_chains(ctx: LowerContext, graph, producers: set, outputs: dict) -> None:
    """Pre-assign homes so that single-use producers of copying view chains write the chain's
    result layout (module docstring)."""
    returned: dict[Value, list[str]] = {}
    for name, v in outputs.items():
        returned.setdefault(v, []).append(name)
    for op in graph.body:
        if not isinstance(op, T.ReshapeOp) or op.result in ctx.homes:
            continue
        y = op.result
        x, links = _chain(y)
        if len(links) < 2 or x not in producers or x in ctx.homes or x in returned or x.num_uses != 1:
            continue
        if any(link.operand(0) is not x and link.operand(0) in returned for link in links):
            continue
        if y.dtype is not x.dtype or len(returned.get(y, ())) > 1:
            continue
        if _forward(HbmHome(x, 0, x.type.shape, row_major_strides(x.type.shape)), links) is not None:
            continue  # no copy to save: the chain is views of x's own buffer
        hx = _backward(HbmHome(y, 0, y.type.shape, row_major_strides(y.type.shape)), links)
        if hx is None or hx.shape != x.type.shape or (hx.strides and hx.strides[-1] != 1):
            continue
        names = returned.get(y)
        ctx.at(f"output {names[0]}" if names else f"view chain {ctx.name(y)}")
        hy = ctx.alloc_hbm(y.type.shape, y.dtype, name=names[0] if names else None)
        ctx.homes[x] = HbmHome(hy.base, hx.offset, hx.shape, hx.strides)
