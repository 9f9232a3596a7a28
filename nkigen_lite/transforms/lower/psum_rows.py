"""Broadcast rows read where they are cheap: a VectorE ``tensor_tensor`` reading a broadcast
weight row (``ones[1,P]ᵀ · w`` on TensorE, copied out of PSUM into an SBUF tile) may read the
PSUM banks instead.

A weight vector read by a row-wise group (LayerNorm's ``w`` and ``b``) is broadcast to all
partitions by ones-matmuls, one PSUM bank per 512 fp32 columns, and copied into one SBUF tile
``W``. A VectorE ``tensor_tensor`` with both inputs in SBUF streams two inputs through one
memory (2N cycles); with one input in PSUM it streams both at once (N cycles, facts §7.2,
docs/costmodel.md). GpSimd cannot read PSUM, so it keeps reading ``W``. ``psum_variant`` gives,
for a float ``tensor_tensor`` reading ``W``, the pieces that read the PSUM banks instead — one
VectorE instruction per bank the access crosses, each on the matching columns of the other
input and of ``dst`` — and the engine search of a straight-line kernel (engine_balance.py) takes
them where the scheduled time drops; copies of a row nothing reads any more are dropped.
Same bits: the same fp32 values are read from PSUM or from their SBUF copy.

The copy may cast to the row's own dtype (a bf16 ``w``: the fp32 bank holds ``1.0 · w`` exactly,
so its bf16 copy changes no bit; ``_exact_cast``). Only when every PSUM tile of the kernel
fits the banks at once (the banks then stay live to their last reader without crowding out any
other PSUM tile) and ``W`` is written only by whole-bank copies of PSUM tiles that one matmul
each writes.
"""

from __future__ import annotations

from ...nki.access import pack
from ...nki.ops import AllocOp, DeallocOp, MatmulOp, MemsetOp, TensorCopyOp, TensorTensorOp
from ...nki.types import Access, Affine, DimSlice, MemorySpace

_ALU = ("add", "subtract", "multiply", "maximum", "minimum")


def _const(d: DimSlice) -> int | None:
    """The constant offset of a dim slice, else None."""
    return d.offset.const if d.offset.is_const else None


def _plain_2d(acc: Access) -> tuple[int, int] | None:
    """(column start, width) of a 2-D access with unit column stride and constant offsets."""
    if len(acc.dims) != 2 or acc.dims[1].stride != 1:
        return None
    p0, c0 = _const(acc.dims[0]), _const(acc.dims[1])
    if p0 != 0 or c0 is None:
        return None
    return c0, acc.dims[1].size


def broadcast_rows(instrs: list, target) -> dict:
    """``{W: [(c0, c1, P), ...]}``: SBUF tiles written only by copies of whole PSUM tiles ``P``
    (each written by one matmul) into columns ``c0:c1``, covering ``W``'s columns exactly."""
    psum = list(
        dict.fromkeys(
            op.access(n).tensor
            for op in instrs
            if hasattr(op, "access_attrs")
            for n, _ in op.access_attrs()
            if op.access(n) is not None and op.access(n).space is MemorySpace.PSUM
        )
    )
    banks = sum(-(-_bytes(v) // target.psum_bank_bytes) for v in psum)
    if not psum or banks > target.psum_num_banks:
        return {}
    writers: dict = {}
    for op in instrs:
        for name in getattr(op, "writes", ()):
            acc = op.access(name)
            if acc is not None:
                writers.setdefault(acc.tensor, []).append(op)
    rows: dict = {}
    for w, ops in writers.items():
        if w.type.space is not MemorySpace.SBUF or len(w.type.shape) != 2:
            continue
        pieces = _copied_pieces(w, ops, writers)
        if pieces is None:
            continue
        pieces.sort(key=lambda t: t[0])
        cols = [c for a, b, _ in pieces for c in (a, b)]
        if pieces and cols[0] == 0 and cols[-1] == w.type.shape[1]:
            if all(cols[2 * k + 1] == cols[2 * k + 2] for k in range(len(pieces) - 1)):
                rows[w] = pieces
    return rows


def _copied_pieces(w, ops: list, writers: dict) -> list | None:
    """``[(c0, c1, P), ...]`` when every writer of the 2-D SBUF tile ``w`` copies a whole PSUM
    tile ``P`` written by one matmul (an exact cast allowed) into columns ``c0:c1`` of all its
    partitions; None when one does not."""
    pieces = []
    for op in ops:
        if not isinstance(op, TensorCopyOp):
            return None
        src, dst = op.access("src"), op.access("dst")
        p = src.tensor
        if p.type.space is not MemorySpace.PSUM or len(p.type.shape) != 2:
            return None
        if src.dtype != dst.dtype and not _exact_cast(writers.get(p, []), dst.dtype, writers):
            return None
        if _plain_2d(src) != (0, p.type.shape[1]) or src.dims[0].size != w.type.shape[0]:
            return None
        if [type(o) for o in writers.get(p, [])] != [MatmulOp]:
            return None
        win = _plain_2d(dst)
        if win is None or win[1] != p.type.shape[1] or dst.dims[0].size != w.type.shape[0]:
            return None
        pieces.append((win[0], win[0] + win[1], p))
    return pieces


def _exact_cast(psum_writers: list, dtype, writers: dict) -> bool:
    """The one matmul writing a PSUM tile broadcasts a row of ``dtype`` (``ones[1,P]ᵀ · row``:
    one partition of contraction against a tile set to 1.0 by one memset), so every fp32 value
    in the bank is exactly a ``dtype`` value and a copy casting it to ``dtype`` changes no bit:
    reading the bank instead of the copy gives the reader the same numbers."""
    if len(psum_writers) != 1 or not isinstance(psum_writers[0], MatmulOp):
        return False
    mm = psum_writers[0]
    st, mv = mm.access("stationary"), mm.access("moving")
    if st.dims[0].size != 1 or mv.dtype != dtype:
        return False
    ones = writers.get(st.tensor, [])
    return len(ones) == 1 and isinstance(ones[0], MemsetOp) and float(ones[0].attrs["value"]) == 1.0


def _bytes(v) -> int:
    n = v.type.dtype.itemsize
    for s in v.type.shape[1:]:
        n *= s
    return n


def _cols(acc: Access, start: int, width: int) -> Access:
    d = acc.dims[1]
    return Access(acc.tensor, (acc.dims[0], DimSlice(d.offset + start, width, 1)))


def psum_variant_possible(op, rows: dict) -> bool:
    """``psum_variant`` would give pieces for ``op`` (without building them)."""
    pieces = psum_variant(op, rows)
    for p in pieces or ():
        p.drop_operand_uses()
    return bool(pieces)


def psum_variant(op, rows: dict) -> list | None:
    """The VectorE pieces of a float ``tensor_tensor`` reading a broadcast row from its PSUM
    banks instead of ``W`` (unplaced ops), or None when ``op`` does not qualify."""
    if not isinstance(op, TensorTensorOp) or op.attrs["op"] not in _ALU:
        return None
    accs = {n: op.access(n) for n in ("dst", "data1", "data2")}
    if not all(a.dtype.is_float for a in accs.values()):
        return None
    side = [n for n in ("data1", "data2") if accs[n].tensor in rows]
    if len(side) != 1:
        return None
    row, other = side[0], "data2" if side[0] == "data1" else "data1"
    if accs[other].space is not MemorySpace.SBUF or accs["dst"].space is not MemorySpace.SBUF:
        return None
    win = _plain_2d(accs[row])
    if win is None or any(_plain_2d(accs[n]) is None for n in ("dst", other)):
        return None
    if accs[other].dims[1].size != win[1] or accs["dst"].dims[1].size != win[1]:
        return None
    a, b = win[0], win[0] + win[1]
    out = []
    for c0, c1, p in rows[accs[row].tensor]:
        lo, hi = max(a, c0), min(b, c1)
        if lo >= hi:
            continue
        bank = Access(p, (accs[row].dims[0], DimSlice(Affine.of(lo - c0), hi - lo, 1)))
        pieces = {
            "dst": _cols(accs["dst"], lo - a, hi - lo),
            other: _cols(accs[other], lo - a, hi - lo),
            row: bank,
        }
        items = [(a.name, pieces.get(a.name, op.attrs[a.name])) for a in op.attr_spec]
        items = [(n, "vector") if n == "engine" else (n, v) for n, v in items]
        operands, attrs = pack(items)
        new = TensorTensorOp(operands, attrs)
        new.loc = op.loc
        out.append(new)
    return out


def drop_unread_rows(block, rows: dict) -> None:
    """Erase the copies, allocation and deallocation of a broadcast row no instruction reads
    any more."""
    read = set()
    for op in block:
        if not hasattr(op, "access_attrs"):
            continue
        for name, _ in op.access_attrs():
            if name not in op.writes and op.access(name) is not None:
                read.add(op.access(name).tensor)
    for w in rows:
        if w in read:
            continue
        for op in list(block):
            if isinstance(op, TensorCopyOp) and op.access("dst").tensor is w:
                op.erase()
            elif isinstance(op, DeallocOp) and op.operand(0) is w:
                op.erase()
        for op in list(block):
            if isinstance(op, AllocOp) and op.result is w and not w.has_uses:
                op.erase()
