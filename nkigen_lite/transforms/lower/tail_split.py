"""The last store of a straight-line kernel in column pieces: the elementwise chain computing the
stored tile (and the intermediate tiles only it reads) runs per column half into tiles of its
own, each half stored by its own DMA.

A row-normalising kernel of few row tiles (LayerNorm 512×1024: 4 tiles) ends on the last tile's
chain — statistics, normalise, × w, + b — and then the store's fixed ~1.9 µs (HW-DGE issue and
first-byte latency) and its transfer, with the DMA engines idle behind it. With the chain after
the statistics in two halves, the store of the first half is issued while the second half is
computed, so the kernel ends about half a pass and half a transfer earlier. The halves are
separate allocations (the scheduler tracks dependencies per allocation: a DMA reading one half
of a shared tile would wait for the writes of the other, and they for its transfer).

What is split: the last ``dma_copy`` from a (P, F) SBUF tile into HBM (any rank, its last dim the F
columns: RMSNorm of one ``1×128×1024`` row block too), F even; the tile's writers
and, recursively, the (P, F) SBUF tiles they read over the same columns whose every reader is such
a writer — when every writer is an elementwise instruction (``activation`` without a fused sum,
``tensor_scalar``, ``tensor_tensor``, ``tensor_copy``) writing whole partitions and a column
window. Other inputs (a loaded tile, a broadcast row in PSUM, per-partition columns, immediates)
are read in windows. Values are unchanged bit for bit (elementwise instructions by columns); the
split is kept only when the scheduled estimate of the kernel in program order drops (the list
schedule and the engine search run after it, straight_order.py, engine_balance.py).
"""

from __future__ import annotations

from ...nki.access import pack
from ...nki.ops import (
    ActivationOp,
    AllocOp,
    DeallocOp,
    DmaCopyOp,
    NkiOp,
    TensorCopyOp,
    TensorScalarOp,
    TensorTensorOp,
)
from ...nki.target import Target
from ...nki.types import Access, DimSlice, HbmType, MemorySpace, TileType
from .engine_balance import ScheduleOracle
from .straight_order import _qualifies, _restore

PIECES = 2
ELEMENTWISE = (ActivationOp, TensorScalarOp, TensorTensorOp, TensorCopyOp)


def _columns(acc: Access) -> tuple[int, int] | None:
    """[start, stop) of a 2-D access's unit-stride constant column window."""
    d = acc.dims[-1]
    if len(acc.dims) != 2 or d.stride != 1 or d.offset.terms:
        return None
    return d.offset.const, d.offset.const + d.size


def _window(acc: Access, lo: int, n: int) -> Access:
    d = acc.dims[-1]
    return Access(acc.tensor, acc.dims[:-1] + (DimSlice(d.offset + lo * d.stride, n, d.stride),))


def _rebuild(op, accesses: dict):
    """``op`` with some accesses replaced (same class, attributes and loc)."""
    items = []
    held = dict(op.access_attrs())
    for a in op.attr_spec:
        val = accesses.get(a.name, op.access(a.name) if a.name in held else op.attrs[a.name])
        items.append((a.name, val))
    operands, attrs = pack(items)
    new = type(op)(operands, attrs)
    new.loc = op.loc
    return new


class _Cone:
    """The tiles to split and the instructions writing them, for the store ``store``."""

    def __init__(self, ops: list, store):
        self.store = store
        self.writers: dict = {}
        self.readers: dict = {}
        for o in ops:
            if isinstance(o, NkiOp):
                for name, _ in o.access_attrs():
                    t = o.access(name).tensor
                    (self.writers if name in o.writes else self.readers).setdefault(t, []).append(o)
        self.tiles: set = set()
        self.ops: set = set()

    def _splittable_writer(self, w, rows: int) -> bool:
        if not isinstance(w, ELEMENTWISE):
            return False
        if isinstance(w, ActivationOp) and w.attrs["reduce_res"] is not None:
            return False
        dst = w.access("dst")
        return dst.dims[0].size == rows and dst.dims[0].offset.const == 0 and _columns(dst) is not None

    def _candidate(self, acc: Access, dst: Access, shape) -> bool:
        v = acc.tensor
        return (
            v not in self.tiles
            and isinstance(v.defining_op, AllocOp)
            and v.type.shape == shape
            and v.type.space is MemorySpace.SBUF
            and _columns(acc) == _columns(dst)
            and self._aligned_reads(v)
        )

    def _aligned_reads(self, v) -> bool:
        """Every read of ``v`` covers its reader's own destination columns (a shifted read,
        ``t[:, s:] + t[:, :-s]`` of a prefix sum, would cross the halves)."""
        for r in self.readers.get(v, []):
            if r is self.store or not isinstance(r, ELEMENTWISE):
                continue
            cols = _columns(r.access("dst"))
            for name, _ in r.access_attrs():
                acc = r.access(name)
                if acc.tensor is v and name not in r.writes and _columns(acc) != cols:
                    return False
        return True

    def grow(self, tile) -> bool:
        """Collect the cone of ``tile``; False when a writer cannot be split."""
        shape = tile.type.shape
        self.tiles.add(tile)
        work = [tile]
        while work:
            u = work.pop()
            for w in self.writers.get(u, []):
                if not self._splittable_writer(w, shape[0]):
                    return False
                self.ops.add(w)
                dst = w.access("dst")
                for name, _ in w.access_attrs():
                    acc = w.access(name)
                    if name != "dst" and self._candidate(acc, dst, shape):
                        v = acc.tensor
                        inner = all(self._splittable_writer(x, shape[0]) for x in self.writers.get(v, []))
                        if inner and all(r in self.ops or r is w for r in self.readers.get(v, [])):
                            self.tiles.add(v)
                            work.append(v)
        return all(r is self.store or r in self.ops for t in self.tiles for r in self.readers.get(t, []))


def _last_store(ops: list):
    for o in reversed(ops):
        if isinstance(o, DmaCopyOp):
            dst, src = o.access("dst"), o.access("src")
            if isinstance(dst.tensor.type, HbmType) and isinstance(src.tensor.type, TileType):
                return o
            return None
    return None


def _target_tile(store):
    """The (P, F) SBUF tile the last store writes out whole into a column window, F even."""
    tile = store.access("src").tensor
    if not isinstance(tile.defining_op, AllocOp) or len(tile.type.shape) != 2:
        return None
    rows, width = tile.type.shape
    if width % PIECES or width // PIECES < 2:
        return None
    if store.access("src").shape != (rows, width) or not _last_dim_window(store.access("dst"), width):
        return None
    return tile


def _last_dim_window(acc: Access, width: int) -> bool:
    """The HBM side of the store: any rank (a ``1×128×1024`` output of one row block too), its
    last dim a unit-stride constant window of the tile's ``width`` columns."""
    d = acc.dims[-1]
    return d.stride == 1 and not d.offset.terms and d.size == width


def _piece_tiles(block, cone: _Cone, rows: int, c: int) -> dict:
    piece: dict = {}
    for t in cone.tiles:
        al = t.defining_op
        piece[t] = []
        for j in range(PIECES):
            n = AllocOp([], dict(al.attrs), [TileType((rows, c), t.type.dtype, t.type.space)])
            n.result.name_hint = f"{t.name_hint or 't'}_h{j}"
            n.loc = al.loc
            block.insert_before(al, n)
            piece[t].append(n.result)
    return piece


def _split_writer(block, w, cone: _Cone, piece: dict, c: int) -> None:
    lo, hi = _columns(w.access("dst"))
    for j in range(PIECES):
        a, b = max(lo, j * c), min(hi, (j + 1) * c)
        if a >= b:
            continue
        accs = {}
        for name, _ in w.access_attrs():
            acc = w.access(name)
            if acc.tensor in cone.tiles:
                accs[name] = Access(piece[acc.tensor][j], (acc.dims[0], DimSlice(a - j * c, b - a, 1)))
            elif acc.dims[-1].size == hi - lo:
                accs[name] = _window(acc, a - lo, b - a)
        block.insert_before(w, _rebuild(w, accs))


def _split(block, ops: list) -> bool:
    store = _last_store(ops)
    tile = _target_tile(store) if store is not None else None
    if tile is None:
        return False
    cone = _Cone(ops, store)
    if not cone.grow(tile):
        return False
    rows, width = tile.type.shape
    c = width // PIECES
    piece = _piece_tiles(block, cone, rows, c)
    for w in [o for o in ops if o in cone.ops]:
        _split_writer(block, w, cone, piece, c)
    for j in range(PIECES):
        src = Access.whole(piece[tile][j])
        block.insert_before(
            store, _rebuild(store, {"dst": _window(store.access("dst"), j * c, c), "src": src})
        )
    for o in [o for o in block if o in cone.ops or o is store]:
        o.erase()
    for o in [o for o in block if isinstance(o, DeallocOp) and o.operand(0) in cone.tiles]:
        o.erase()
    for o in [o for o in block if isinstance(o, AllocOp) and o.result in cone.tiles]:
        o.erase()
    return True


def split_last_store(graph, target: Target, insert_deallocs) -> bool:
    """Split the last store's chain by columns (module docstring) when the kernel qualifies and
    its scheduled estimate drops; ``insert_deallocs(block)`` places the new tiles' deallocations."""
    if not _qualifies(graph):
        return False
    block = graph.body
    before = list(block)
    old = ScheduleOracle(graph, target).makespan()
    if not _split(block, before):
        return False
    insert_deallocs(block)
    if ScheduleOracle(graph, target).makespan() < old:
        return True
    kept = set(before)
    for o in reversed(list(block)):
        if o not in kept and not isinstance(o, AllocOp):
            o.erase()
    for o in [o for o in block if o not in kept]:
        o.erase()
    _restore(block, before)
    return False
