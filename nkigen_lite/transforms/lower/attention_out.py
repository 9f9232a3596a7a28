"""The causal attention's output O kept on chip for the O projection that reads it.

In a decoder layer ``O = causal_attention(q, k, v)`` (heads, rows, dv) reaches the O projection
``O.transpose(0, 2, 1, 3).reshape(rows, heads·dv) @ Wo`` through views only. Lowered on their
own, the attention stores O and the projection's row pipeline (with the MLP, its staging loop:
mlp_prologue.py) loads it back: at seq 2048 of Qwen3-0.6B 16 of the layer's 70 MB of HBM
traffic. Here (``front_keep.out_groups``: O read only that way, ``d == dv`` a multiple of 128, whole row
tiles) the front keeps q as one tile per KV head (front_keep.py: ``[p, row tiles, R, d]``) and
the attention writes O of query head ``g·R + j``, row tile t, over q's slot ``[:, t, j]`` of
tile g: that head's Q was read (transposed into Qᵀ) before any of its units ran, so O needs no
SBUF of its own, and no KV head waits for another's writes. The projection's A operand (the
reshape result) reads its row tiles from those tiles (``KeptRows`` in ``ctx.kept_out``;
``stage_a_kept`` transposes them on TensorE), and the view ops between O and it emit nothing.

O stays past the attention in at most ``KEEP_SHARE`` of SBUF: the first KV heads' tiles beyond
that are stored to HBM as each head ends (``stored_heads``, ``store_group``) and the projection
loads those features back per row tile. Fallback: a reader that asks for the value's HBM home
(the projection lowered alone, any lowering that cannot read the tiles) gets the rest of O
stored there first (``LowerContext.home`` calls ``spill``) — the traffic of before, never a
wrong read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...nki.types import Access, Affine
from ...nki.types import ds as _ds
from ...tensor import ops as T
from .matmul_chunks import ChunkTiles

_LINKS = (T.ReshapeOp, T.TransposeOp)
# of SBUF per partition O may hold past the attention: the MLP prologue after it (O projection,
# residual, rmsnorm, xᵀ) needs the rest. Qwen3-0.6B layer at seq 2048 (O: 8 KiB per KV head),
# KV heads' O kept / stored (on 3bc677e): 8 / 0 (this share) 1,693.1 µs, traffic 1.27x the
# minimum; 4 / 4 (1/6) 1,689.0 µs, 1.48x — all kept, the prologue's row loop is pipelined only
# when paired once (stage_fit.py; paired twice, 1,736.7 µs)
KEEP_SHARE = 1 / 3


@dataclass
class KeptRows:
    """A value (rows, features) held in SBUF as one tile per KV head, ``tiles[g][p, row tiles,
    R, f]`` (row ``t·p + i`` at ``[i, t]``, feature ``(g·R + j)·f + e`` at ``tiles[g][.., j,
    e]``), the attention result it views and the view ops between them."""

    tiles: list
    f: int
    source: object  # the attention result (heads, rows, f)
    links: tuple  # view ops from the attention result to the value, in program order
    stored: int = 0  # the first KV heads' tiles, stored to ``rows_home`` as they end
    rows_home: object = None  # an HBM view [p, row tiles, heads, f] of the value's rows
    value_view: object = None  # an HBM view (rows, heads·f) of the value

    def rows(self, m0, mt: int, k0: int, kt: int) -> Access:
        """Rows ``[m0, m0 + mt)`` (``m0`` a multiple of p), features ``[k0, k0 + kt)`` of one head
        (``k0`` a Python int: the tile is chosen by it)."""
        p, _, rep, f = self.tiles[0].type.shape
        if not isinstance(k0, int) or k0 % f + kt > f:
            raise AssertionError(f"lowering bug: kept rows read at features {k0}+{kt} across heads of {f}")
        a = Affine.of(m0)
        if a.const % p or any(c % p for _, c in a.terms):
            raise AssertionError(f"lowering bug: kept rows read at row {a}, not a multiple of {p}")
        t = Affine(a.const // p, tuple((v, c // p) for v, c in a.terms))
        head = k0 // f
        tile = self.tiles[head // rep]
        return Access(tile, (_ds(0, mt), _ds(t, 1), _ds(head % rep, 1), _ds(k0 % f, kt)))


def match_out_chain(op):
    """(value, view ops) when the attention result is read only through single-use reshapes /
    transposes ending in the A operand of one matmul, that value being O's rows and heads'
    features in row-major order ((rows, heads·dv)); else None."""
    o = op.result
    links = []
    v = o
    while True:
        if len(v.uses) != 1:
            return None
        use = v.uses[0]
        if isinstance(use.op, _LINKS):
            links.append(use.op)
            v = use.op.result
            continue
        if not isinstance(use.op, T.MatmulOp) or use.index != 0 or not links:
            return None
        break
    heads, n, f = math.prod(o.type.shape[:-2]), *o.type.shape[-2:]
    if v.type.shape[-1] != heads * f or math.prod(v.type.shape[:-1]) != n:
        return None
    idx = np.arange(o.type.size, dtype=np.int64).reshape(o.type.shape)
    for op in links:
        idx = (
            idx.transpose(op.attrs["perm"])
            if isinstance(op, T.TransposeOp)
            else idx.reshape(op.attrs["shape"])
        )
    want = np.arange(o.type.size, dtype=np.int64).reshape(heads, n, f).transpose(1, 0, 2)
    if not np.array_equal(idx.reshape(n, heads, f), want):
        return None
    return v, tuple(links)


def keep_target(ctx, op):
    """(value, KeptRows) for the attention ``op`` when the front kept q as one tile per KV head
    (front_keep.py, for ``out_groups``), else None."""
    tiles = ctx.kept_rows.get(op, {}).get(0)
    if not isinstance(tiles, list):
        return None
    found = match_out_chain(op)
    if found is None:
        return None
    v, links = found
    return v, KeptRows(tiles, op.result.type.shape[-1], op.result, links)


def kept_tiles(ctx) -> set:
    """The tiles of every value kept here (nothing reads them after the value's reader)."""
    return {t for kept in ctx.kept_out.values() for t in kept.tiles}


def stored_heads(target, kept: KeptRows) -> int:
    """How many KV heads' O tiles (the first ones) go to HBM as their heads end: as few as leave
    at most ``KEEP_SHARE`` of SBUF kept."""
    per = kept.tiles[0].type.bytes_per_partition
    keep = int(target.sbuf_bytes_per_partition * KEEP_SHARE) // per
    return max(0, len(kept.tiles) - keep)


def give_home(ctx, v, kept: KeptRows) -> None:
    """An HBM buffer for the value ``v`` (rows, heads·f), row-major, and its views."""
    home = ctx.alloc_hbm(v.type.shape, v.type.dtype)
    ctx.homes[v] = home
    heads, f = math.prod(kept.source.type.shape[:-2]), kept.f
    p, tiles = kept.tiles[0].type.shape[:2]
    kept.rows_home = ctx.view(home.reshape((tiles, p, heads, f)).transpose((1, 0, 2, 3)))
    kept.value_view = ctx.view(home.reshape((tiles * p, heads * f)))


def store_group(ctx, kept: KeptRows, g: int) -> None:
    """One DMA storing KV head ``g``'s tile to the value's HBM buffer."""
    p, tiles, rep, f = kept.tiles[g].type.shape
    ctx.b.dma_copy(
        dst=Access(kept.rows_home, (_ds(0, p), _ds(0, tiles), _ds(g * rep, rep), _ds(0, f))),
        src=Access(kept.tiles[g], (_ds(0, p), _ds(0, tiles), _ds(0, rep), _ds(0, f))),
    )


def spill(ctx, v) -> None:
    """Store the kept value ``v`` to its HBM buffer (one DMA per KV head not stored yet): its
    readers then load it as before."""
    kept = ctx.kept_out.pop(v)
    ctx.at(f"store {ctx.name(kept.source)} (kept on chip, read from HBM)")
    if kept.rows_home is None:
        give_home(ctx, v, kept)
    for g in range(kept.stored, len(kept.tiles)):
        store_group(ctx, kept, g)


def stage_a_kept(em, kept: KeptRows, m0, mt: int):
    """Aᵀ ([p, nk, mt] as ChunkTiles of one PSUM bank each) of the row tile at ``m0`` of the
    matmul emitter ``em``'s A held in ``kept``: per bank, its 16-bit TensorE transposes and one
    copy (as matmul_stage.stage_a_natural does after its loads)."""
    b, tg, p, dt = em.b, em.ctx.target, em.p, em.a_dt
    if em.k % p or kept.f % p:
        raise AssertionError(f"lowering bug: kept rows of {kept.f} features read in chunks of {p}")
    nk = em.k // p
    per_bank = max(1, tg.psum_bank_bytes // (p * dt.itemsize))
    at = ChunkTiles.alloc(b, p, nk, mt, dt, "a_t", per_bank)
    rep = kept.tiles[0].type.shape[2]
    cut = kept.stored * rep * kept.f  # features stored to HBM: loaded back per row tile
    nat = None
    if cut:
        nat = b.alloc((p, cut), dt, "sbuf", name="a_nat")
        b.dma_copy(
            dst=Access(nat, (_ds(0, mt), _ds(0, cut))),
            src=Access(kept.value_view, (_ds(m0, mt), _ds(0, cut))),
        )

    def src(k0):
        if k0 < cut:
            return Access(nat, (_ds(0, mt), _ds(k0, p)))
        return kept.rows(m0, mt, k0, p)

    for c0 in range(0, nk, per_bank):
        n = min(per_bank, nk - c0)
        ps = b.alloc((p, per_bank, p), kept.tiles[0].type.dtype, "psum", name="ps_t")
        for s in range(n):
            b.nc_transpose(dst=Access(ps, (_ds(0, p), _ds(s, 1), _ds(0, mt))), data=src((c0 + s) * p))
        tile, c = at.part(c0)
        b.tensor_copy(
            dst=Access(tile, (_ds(0, p), _ds(c0 - c, n), _ds(0, mt))),
            src=Access(ps, (_ds(0, p), _ds(0, n), _ds(0, mt))),
            engine=em.a_copy_engine,
        )
    return at
