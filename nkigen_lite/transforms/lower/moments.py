"""Row mean and variance from VectorE's batch-norm statistics: ``bn_stats`` per chunk of at most
512 elements, one ``bn_aggr`` for the row.

The two-pass form the decompositions give (LayerNorm, ``np.var`` / ``np.std``) is

    m = sum(x) * (1/n);  d = x - m;  v = sum(square(d)) * c        (c = 1/(n - ddof))

which costs a row reduction (VectorE), then a second full pass for the squares and their sum
(a ScalarE activation with ``reduce_res``), one after the other. When ``x`` is a row of the
group's tile (one free dim, reduced whole in every instance), ``m`` and ``v`` are read off one
VectorE pass instead: ``bn_stats`` writes (count, mean, sum of squared deviations) of the even and
odd elements of each chunk, ``bn_aggr`` combines them into (mean, population variance) in one
(P, 2) tile; ``m`` is its column 0 and ``v`` its column 1 (times ``c·n`` when ``ddof`` is not 0).
``d`` is still computed when something else reads it (the centred multiply of LayerNorm); when the
square is its only reader (``np.var``, ``np.std``) it is folded away too.

The statistics are computed in fp32 on the engine: the mean is the fp32 sum divided by the count
(the decomposed form multiplies by ``fp32(1/n)``; both are within an ulp or two) and the variance
is formed from deviations, as the two-pass form does, not from E[x²] − E[x]².
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...ir.op import Op
from ...ir.value import Value
from ...nki.types import Access, Affine, DimSlice
from ...tensor import ops as T
from .frame import TileFrame, immediate_of
from .groups import domain_axes
from .instance import loops_of


@dataclass(frozen=True)
class Moments:
    """The mean ``mean`` and variance ``var`` (= population variance · ``var_scale``) of ``data``
    along the group's free dim ``dim``, computed at the row sum ``host``."""

    data: Value
    dim: int
    mean: Value
    var: Value
    var_scale: float
    folded: tuple
    mean_scale: float = 0.0  # fp32(1/n) of the decomposed mean
    exact_mean: bool = False  # the mean leaves the statistics: formed from the row sum


def _only_use(em: TileFrame, v: Value) -> Op | None:
    """The one op of the group using ``v`` when ``v`` does not escape it."""
    if v.num_uses != 1 or v in em.keep or v in em.resident or v in em.resident_values:
        return None
    use = next(iter(v.uses)).op
    return use if use in em.members else None


def _plain(em: TileFrame, v: Value) -> bool:
    """``v`` gets a tile of its own in every instance (stored or read from it), not a row
    buffer or part of a concat tile (those have tiles of their own layout)."""
    return v not in em.resident and v not in em.resident_values and v not in em.into


def _scaled(op: Op | None, v: Value) -> float | None:
    """The immediate ``k`` of ``op = v * k``."""
    if not isinstance(op, T.MulOp):
        return None
    a, b = op.operands
    other = b if a is v else a
    if other is v:
        return None
    k = immediate_of(other)
    return None if k is None else float(k)


def _row_sum(em: TileFrame, op: Op, fps) -> tuple[Value, int] | None:
    """(data, free dim) of a float row sum over the group's single free dim, whole in every
    instance (no loop over that dim)."""
    if not isinstance(op, T.ReduceOp) or op.attrs["kind"] != "sum" or op in fps:
        return None
    x = op.operand(0)
    f_dims = list(em.plan.f_dims)
    if len(f_dims) != 1 or not x.type.dtype.is_float or op.result.type.dtype.name != "f32":
        return None
    (d,) = f_dims
    if em.ext(x)[d] < 2 or not em.per_partition(op.result):
        return None
    if sorted(domain_axes(op, len(em.plan.domain))) != [d]:
        return None
    if any(lp.dim == d for lp in loops_of(em.plan)) or d in em.plan.acc_dims:
        return None
    if x in em.into or x in em.tile_offsets:
        return None
    return x, d


def _escapes(em: TileFrame, m: Value, x: Value) -> bool:
    """Whether the mean ``m`` is read other than through the variance: stored, read outside
    the group or by any op but a centring ``x - m``, or a centred value that is stored or read
    outside the group (LayerNorm's centred rows, scaled by a function of the variance, are NaN
    on a row holding an infinity whichever the mean). bn_aggr's way of combining its triples is
    undocumented: its mean of a row holding an infinity may be NaN (the simulator's sequential
    pairwise update: ``inf + (m - inf) / 2``), where NumPy's mean is the infinity; only the
    variance (NaN for such rows either way) is taken from it then."""

    def out(v: Value) -> bool:
        return v in em.keep or any(u.op not in em.members for u in v.uses)

    if out(m):
        return True
    uses = [u.op for u in m.uses]
    if any(not (isinstance(u, T.SubOp) and u.operand(0) is x and u.operand(1) is m) for u in uses):
        return True  # a cast, a product, ...: the mean's own value is read
    return any(out(s.result) for s in uses)


def _match(em: TileFrame, r1: Op, folded) -> Moments | None:
    found = _row_sum(em, r1, folded)
    if found is None:
        return None
    x, d = found
    n = em.ext(x)[d]
    mul_m = _only_use(em, r1.result)
    k1 = _scaled(mul_m, r1.result)
    if k1 is None or abs(k1 * n - 1.0) > 1e-6:
        return None
    m = mul_m.result
    if m.type.dtype.name != "f32" or not _plain(em, m):
        return None
    for use in [u.op for u in m.uses]:
        if not (isinstance(use, T.SubOp) and use.operand(0) is x and use.operand(1) is m):
            continue
        s = use.result
        for q in [u.op for u in s.uses]:
            sq = isinstance(q, T.SquareOp) or (
                isinstance(q, T.MulOp) and q.operand(0) is s and q.operand(1) is s
            )
            if not sq or q not in em.members or q.result.type.dtype.name != "f32":
                continue
            r2 = _only_use(em, q.result)
            if r2 is None or q in folded:
                continue
            got = _row_sum(em, r2, folded)
            if got is None or got[1] != d:
                continue
            mul_v = _only_use(em, r2.result)
            k2 = _scaled(mul_v, r2.result)
            if k2 is None:
                continue
            v = mul_v.result
            if v.type.dtype.name != "f32" or not _plain(em, v):
                continue
            scale = k2 * n  # 1 up to the rounding of fp32(1/n) unless ddof is not 0
            scale = 1.0 if abs(scale - 1.0) <= 1e-6 else float(np.float32(scale))
            dead_d = (use,) if _only_use(em, s) is q else ()  # d read only by the square
            folded = (mul_m, q, r2, mul_v, *dead_d)
            return Moments(x, d, m, v, scale, folded, k1, _escapes(em, m, x))
    return None


def plan_moments(em: TileFrame, fp) -> None:
    """Record in the fold plan ``fp`` every row sum that starts a mean / variance pair: it
    emits the statistics; the mean and variance ops and the squares are folded away."""
    for op in em.g.ops:
        spec = _match(em, op, fp.folded)
        if spec is None:
            continue
        fp.moments[op] = spec
        fp.folded.update(spec.folded)


def _chunks(n: int, most: int) -> list[tuple[int, int]]:
    """(start, size) chunks of at most ``most`` elements, as even as possible (none below 2)."""
    k = -(-n // most)
    base, extra = divmod(n, k)
    out, start = [], 0
    for j in range(k):
        size = base + (1 if j < extra else 0)
        out.append((start, size))
        start += size
    return out


def emit_moments(em: TileFrame, op: Op, inst) -> None:
    """bn_stats per chunk of the row, bn_aggr into one (P, 2) tile; the mean and variance
    values are its columns (frame.columns)."""
    spec: Moments = em.fold.moments[op]
    b = em.b
    x = em.access(spec.data, inst)
    rows = inst.rows()
    chunks = _chunks(inst.extents[spec.dim], em.ctx.target.bn_stats_fmax)
    width = em.ctx.target.bn_stats_width
    stats = b.alloc((rows, width * len(chunks)), "f32", "sbuf", name="stats")
    whole = DimSlice(Affine.of(0), rows, 1)
    row = x.dims[1]
    if not x.tensor.type.dtype.is_float:  # an aliased exact widening (fold.py): bn_stats reads floats
        n = inst.extents[spec.dim]
        wide = b.alloc((rows, n), "f32", "sbuf", name="moments_f32")
        b.tensor_copy(dst=wide, src=Access(x.tensor, (x.dims[0], DimSlice(row.offset, n, row.stride))))
        x = Access(wide, (whole, DimSlice(Affine.of(0), n, 1)))
        row = x.dims[1]
    for j, (start, size) in enumerate(chunks):
        data = Access(x.tensor, (x.dims[0], DimSlice(row.offset + start * row.stride, size, row.stride)))
        b.bn_stats(dst=Access(stats, (whole, DimSlice(Affine.of(width * j), width, 1))), data=data)
    mv = b.alloc((rows, em.ctx.target.bn_aggr_width), "f32", "sbuf", name="mean_var")
    b.bn_aggr(dst=mv, data=stats)
    if spec.exact_mean:  # the row's sum of x * fp32(1/n) on ScalarE, beside bn_stats (_escapes)
        n = inst.extents[spec.dim]
        mean = b.alloc((rows, 1), "f32", "sbuf", name=spec.mean.name_hint or "mean")
        discard = b.alloc((rows, n), "f32", "sbuf", name="mean_terms")
        data = Access(x.tensor, (x.dims[0], DimSlice(row.offset, n, row.stride)))
        b.activation(dst=discard, op="copy", data=data, scale=spec.mean_scale, reduce_res=mean)
        b.dealloc(discard)
        em.tiles[spec.mean] = mean
    else:
        em.tiles[spec.mean] = mv
        em.columns[spec.mean] = 0
    if spec.var_scale == 1.0:
        em.tiles[spec.var] = mv
        em.columns[spec.var] = 1
        return
    v = b.alloc((rows, 1), "f32", "sbuf", name=spec.var.name_hint or "var")
    src = Access(mv, (whole, DimSlice(Affine.of(1), 1, 1)))
    b.tensor_scalar(dst=v, data=src, op0="multiply", operand0=spec.var_scale, engine="vector")
    em.tiles[spec.var] = v
