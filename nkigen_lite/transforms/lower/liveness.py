"""On-chip memory of a fusion group by liveness: the peak, over the group's ops in program
order, of the bytes per free element of the tiles live at once.

The model follows what the group emitter and the ``deallocs`` pass do: a tile is allocated when
its value is loaded or computed and freed after its last use. Inputs of the group are loaded
before its ops; values that leave the group are stored after them; values that do not vary
along some dim of the domain may be hoisted out of the loop over that dim, so they count as
live for the whole group. Only tiles spanning the group's last (widest) dim are charged; narrow
per-partition columns are covered by the scratch margin.
"""

from __future__ import annotations

from ...ir.value import Value
from ...tensor import ops as T
from .groups import FusionGroup

SCRATCH_BYTES = 8  # per free element: up to two fp32 scratch tiles inside one op's lowering


def _wide(v: Value, dom: tuple[int, ...]) -> bool:
    last = dom[-1] if dom else 1
    return bool(v.type.shape) and v.type.shape[-1] == last


def _hoistable(v: Value, dom: tuple[int, ...]) -> bool:
    ext = (1,) * (len(dom) - v.type.rank) + tuple(v.type.shape)
    return any(e == 1 and n > 1 for e, n in zip(ext, dom))


def _tile_bytes(v: Value) -> int:
    return max(4, v.type.dtype.itemsize)


def _bit_const_bytes(group: FusionGroup, dom: tuple[int, ...]) -> int:
    """Bytes per free element of the GpSimd bitwise constant tiles (fold.bit_consts, filled by
    group_emit before the loops): one 4-byte tile per distinct constant of a wide 32-bit
    integer bitwise op, live for the whole group (charged whether or not the balance moves the
    op to GpSimd)."""
    seen = set()
    for op in group.ops:
        if not isinstance(op, (T.BitwiseAndOp, T.BitwiseOrOp, T.BitwiseXorOp)) or not _wide(op.result, dom):
            continue
        dt = op.result.type.dtype
        if not dt.is_int or dt.bits != 32:
            continue
        for u in op.operands:
            if isinstance(u.defining_op, T.FullOp):
                seen.add((repr(u.defining_op.attrs["value"]), dt.name, tuple(op.result.type.shape)))
    return 4 * len(seen)


def peak_live_bytes(group: FusionGroup, keep=()) -> int:
    """Peak bytes per free element of the group's simultaneously live wide tiles, plus the
    GpSimd bitwise constant tiles and the scratch margin. ``keep`` are values that must stay
    live to the end (stored or passed on)."""
    dom = group.domain
    members = set(group.ops)
    n = len(group.ops)
    start: dict[Value, int] = {}
    end: dict[Value, int] = {}
    for i, op in enumerate(group.ops):
        for u in op.operands:
            d = u.defining_op
            if d not in members:
                if isinstance(d, T.FullOp):
                    continue  # an immediate
                start.setdefault(u, -1)
            end[u] = i
        start[op.result] = i
        end.setdefault(op.result, i)
    for v in keep:
        if v in start:
            end[v] = n
    for v in start:
        if _hoistable(v, dom):
            start[v], end[v] = -1, n
    delta = [0] * (n + 3)
    for v, s in start.items():
        if not _wide(v, dom):
            continue
        delta[s + 1] += _tile_bytes(v)
        delta[end[v] + 2] -= _tile_bytes(v)
    peak = live = 0
    for x in delta:
        live += x
        peak = max(peak, live)
    return peak + _bit_const_bytes(group, dom) + SCRATCH_BYTES
