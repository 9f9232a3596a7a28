"""Band masks of a fusion group become one GpSimd ``affine_select`` per tile.

A causal or sliding-window mask reaches the lowering as an iota comparison (written so, or
rebuilt from an ``np.triu`` / ``np.tril`` constant by canonical/masks.py):
``where(cmp(iota_col - iota_row, k), a, b)`` or ``where(cmp(iota_x, iota_y), a, b)``. Computed
op by op that is two iotas, a subtract, a compare, a predicate copy and a select per tile (eight
instructions with the memsets). When the row axis is the tile's partition dim and the column
axis its only free dim with extent > 1, the whole chain is one instruction:

    affine_select(dst, on_true, offset + channel_multiplier·p + step·f  cmp  0, on_false)

(``p`` the partition, ``f`` the free index; the offset carries the instance's row / column
offsets, so one instruction serves every row tile). ``a`` is the on_true tile (an immediate
``a`` reads a tile of that value the group fills once, before its loops) and ``b`` an
immediate; with a tile ``b`` and an immediate ``a``
the comparison is negated. The iotas, the subtract and the compare are folded away when the
mask is their only use. ``affine_select`` compares an int32 value exactly and writes on_true
bit for bit, so results are unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ir.value import Value
from ...nki.types import Access, Affine
from ...tensor import ops as T
from .frame import TileFrame, immediate_of

_CMP = {
    T.LessOp: "less",
    T.LessEqualOp: "less_equal",
    T.GreaterOp: "greater",
    T.GreaterEqualOp: "greater_equal",
    T.EqualOp: "equal",
    T.NotEqualOp: "not_equal",
}
_NEGATE = {
    "less": "greater_equal",
    "less_equal": "greater",
    "greater": "less_equal",
    "greater_equal": "less",
    "equal": "not_equal",
    "not_equal": "equal",
}


@dataclass
class MaskSpec:
    """``where`` as ``affine_select``: keep ``on_true`` where
    ``col_coef·col + row_coef·row - k  cmp  0``, else ``on_false``."""

    cmp: str
    row_coef: int
    col_coef: int
    k: int
    on_true: Value | float
    on_false: float
    iotas: tuple  # (row iota value, column iota value): their levels bound the mask's level
    folded: tuple  # ops the mask replaces


def _private(em: TileFrame, v: Value, done: set) -> bool:
    d = v.defining_op
    return d in em.members and v not in em.keep and v.num_uses == 1 and d not in done


def _member(em: TileFrame, v: Value, done: set) -> bool:
    d = v.defining_op
    return d in em.members and v not in em.keep and d not in done


def _iota_axis(em: TileFrame, v: Value):
    """The domain dim an int iota of the group runs along, else None."""
    op = v.defining_op
    if not isinstance(op, T.IotaOp) or not v.type.dtype.is_int or op not in em.members:
        return None
    return op.attrs["axis"] + len(em.plan.domain) - v.type.rank


def match_mask(em: TileFrame, op, done: set) -> MaskSpec | None:
    """The affine_select form of ``where`` op ``op`` in this group, or None."""
    if not isinstance(op, T.WhereOp) or not op.result.type.dtype.is_float or em.plan.split is not None:
        return None
    plan = em.plan
    if len(plan.p_dims) != 1 or not plan.f_dims:
        return None
    row_d, col_d = plan.p_dims[0], plan.f_dims[-1]
    res_ext = em.ext(op.result)
    if any(res_ext[d] > 1 for d in plan.f_dims if d != col_d):
        return None
    c, a, b = op.operands
    cmp_op = c.defining_op
    if type(cmp_op) not in _CMP or not _private(em, c, done):
        return None
    x, y = cmp_op.operands
    folded = [cmp_op]
    k = immediate_of(y)
    if k is not None:  # cmp(iota_x - iota_y, k)
        sub = x.defining_op
        if not isinstance(sub, T.SubOp) or not _member(em, x, done) or not isinstance(k, int):
            return None
        x, y = sub.operands
        folded.append(sub)
    else:
        k = 0
    ax, ay = _iota_axis(em, x), _iota_axis(em, y)
    if {ax, ay} != {row_d, col_d} or not (_member(em, x, done) and _member(em, y, done)):
        return None
    folded += [x.defining_op, y.defining_op]
    cmp = _CMP[type(cmp_op)]
    row_coef, col_coef = (-1, 1) if ax == col_d else (1, -1)
    ka, kb = immediate_of(a), immediate_of(b)
    if kb is not None and ka is None:
        on_true, on_false = a, float(kb)
    elif kb is not None:
        on_true, on_false = float(ka), float(kb)
    elif ka is not None:
        on_true, on_false, cmp = b, float(ka), _NEGATE[cmp]
    else:
        return None
    if isinstance(on_true, Value) and on_true.type.dtype is not op.result.type.dtype:
        return None
    iotas = (x, y) if ax == row_d else (y, x)
    return MaskSpec(cmp, row_coef, col_coef, int(k), on_true, on_false, iotas, tuple(folded))


def plan_masks(em: TileFrame, fp) -> None:
    """Record the group's band masks in the fold plan (``fp.masks``) and fold their chains.
    A subtract or iota may be shared by several masks (a band's two bounds, after CSE); it is
    folded only when every use of it is folded too, else the masks reading it are dropped."""
    done: set = set(fp.folded)
    specs = {}
    for op in em.g.ops:
        spec = match_mask(em, op, done)
        if spec is not None:
            specs[op] = spec
    while True:
        folded = {f for spec in specs.values() for f in spec.folded}
        bad = [
            op
            for op, spec in specs.items()
            if any(u.op not in folded for f in spec.folded[1:] for u in f.result.uses)
        ]
        if not bad:
            break
        for op in bad:
            del specs[op]
    for op, spec in specs.items():
        fp.masks[op] = spec
        fp.folded.update(spec.folded)


def mask_operands(spec: MaskSpec) -> list[Value]:
    """What the mask's instruction depends on (its level: the row / column loops)."""
    out = list(spec.iotas)
    if isinstance(spec.on_true, Value):
        out.append(spec.on_true)
    return out


def emit_mask(em: TileFrame, op, inst) -> None:
    """One ``affine_select`` (after a memset of an immediate on_true) for this instance."""
    spec: MaskSpec = em.fold.masks[op]
    plan = em.plan
    row_d, col_d = plan.p_dims[0], plan.f_dims[-1]
    dst = em.new_tile(op.result, inst)
    acc = em.access(op.result, inst)
    if isinstance(spec.on_true, Value):
        src = em.access(spec.on_true, inst, em.ext(op.result))
    else:  # the group's tile of that value, filled once before the loops
        const = em.const_tiles[(spec.on_true, op.result.type.dtype.name)]
        src = em.tile_access(const, inst, em.ext(op.result))
    col_ext = em.ext(op.result)[col_d]
    n = inst.extents[col_d] if col_ext > 1 else 1
    offset = Affine.of(inst.offsets[row_d]) * spec.row_coef - spec.k
    if col_ext > 1:
        offset = offset + Affine.of(inst.offsets[col_d]) * spec.col_coef
    pattern = [[spec.col_coef if col_ext > 1 else 0, n]]
    if src.dims[1:] != acc.dims[1:]:  # a broadcast on_true read with stride 0: copy first
        em.b.tensor_copy(dst=acc, src=src, engine="vector")
        src = acc
    em.b.affine_select(
        dst=Access(dst, acc.dims),
        pattern=pattern,
        channel_multiplier=spec.row_coef,
        on_true_tile=src,
        on_false_value=spec.on_false,
        cmp_op=spec.cmp,
        offset=offset,
    )
    em.note("gpsimd", n)
