"""Batched matmuls of small instances (attention scores ``q @ k.transpose(0, 2, 1)``,
``(B, M, K) @ (B, K, N)``) with few, large DMAs.

The general emitter (matmul.py) handles one batch instance per loop iteration with one DMA per
128-row block of each operand (256-byte runs when K is 128 bf16) and one store per M tile. Here,
when every batch instance has one K chunk (K <= 128) — or, B K-major, up to ``MAX_K_CHUNKS``
— M a multiple of 128 (M = 128 r) and N at most ``MAX_N``, a step handles ``G`` instances
with two loads and a store per instance:

- **A** ``(G, M, K)``, K contiguous: one load into ``[128, G, r, K]``, partition ``p`` holding
  rows ``p r ... p r + r - 1`` of each instance (runs of ``r K`` elements). TensorE transposes of
  ``[:, g, j, :]`` give Aᵀ blocks ``[K, 128]`` whose column ``p`` is row ``p r + j``.
- **B** K-major in HBM ``(G, K, N)``: one load into ``[K, G, N]``. N-major (``b.transpose``,
  K contiguous): one load into ``[128, G, s, K]`` (N = 128 s, rows ``p s ... p s + s - 1`` on
  partition ``p``), transposed per ``[:, g, j, :]`` and copied into Bᵀ ``[K, G, N]`` at columns
  ``j, j + s, ...`` (a strided copy), so Bᵀ is in N order.
- K in ``nk > 1`` chunks (B K-major): B is loaded as ``[K / nk, G, nk, N]``, rows
  ``q nk ... q nk + nk - 1`` on partition ``q`` (chunk ``c`` = K indices ``q nk + c``), and A's
  chunk ``c`` is transposed from columns ``c, c + nk, ...``: both operands permute K alike.
- One ``nc_matmul`` per instance, row block ``j``, K chunk and 512-column bank gives rows
  ``p r + j`` of C; the evacuation copy puts them at ``[p, j, :]`` of the instance's
  ``[128, r, N]`` tile, which one DMA stores, each partition writing a run of ``r N``.

Step t + 1's loads are issued before step t's store (the DMA queues issue in program order):
up to ``MAX_STRAIGHT`` steps straight, more in a ``fori_loop`` over step pairs loading into two
top-level tile sets in turn. Evacuations alternate between VectorE and ScalarE (both read
PSUM). Nothing is emitted (the general emitter runs) for other shapes, dtypes that need a cast,
broadcast batch dims, or a C home that is not one contiguous block per instance.
"""

from __future__ import annotations

from ...nki.types import Access, Affine
from ...nki.types import ds as _ds
from ...tensor import ops as T
from .homes import HbmHome

MAX_N = 2048  # columns of C per instance (Bᵀ and the C tile stay in SBUF per instance)
MAX_ROW_BLOCKS = 16  # M / 128
MAX_K_CHUNKS = 8  # K / 128 (B K-major only)
MAX_STRAIGHT = 16  # loop steps emitted straight (skewed); more run in a fori_loop
STEP_BYTES = 16384  # bytes per partition of one step's A, B and C tiles (G instances)


def _flat(h: HbmHome, batch: tuple[int, ...], rows: int, cols: int) -> HbmHome | None:
    """``h`` (batch..., rows, cols) as (B, rows, cols) when its batch dims merge without a copy
    and no batch dim is broadcast (stride 0)."""
    if any(s == 0 and n > 1 for s, n in zip(h.strides[: len(batch)], batch)):
        return None
    total = 1
    for n in batch:
        total *= n
    return h.reshape((total, rows, cols)) if len(batch) != 1 else h


def _group(total: int, instance_bytes: int) -> int:
    """Instances per step: the largest divisor of ``total`` whose tiles (``instance_bytes`` per
    partition each) stay within ``STEP_BYTES`` per partition (at least 1)."""
    best = 1
    for g in range(1, total + 1):
        if total % g == 0 and g * instance_bytes <= STEP_BYTES:
            best = g
    return best


def lower_batched_small(ctx, op: T.MatmulOp) -> bool:
    """Emit ``op`` as described in the module docstring; False (nothing emitted) when it does
    not apply."""
    a_v, b_v = op.operands
    c_v = op.result
    if a_v.type.rank < 3 or b_v.type.rank < 3 or a_v.type.shape[:-2] != b_v.type.shape[:-2]:
        return False
    dt = a_v.type.dtype
    if b_v.type.dtype is not dt or not dt.is_float or dt.itemsize not in (2, 4):
        return False
    if dt.name not in ctx.target.dtypes_of("tensor") or not c_v.type.dtype.is_float:
        return False
    batch = a_v.type.shape[:-2]
    m, k = a_v.type.shape[-2:]
    n = b_v.type.shape[-1]
    p = ctx.partitions
    total = 1
    for e in batch:
        total *= e
    if total < 2 or m % p or m // p > MAX_ROW_BLOCKS or n > MAX_N or n < 2:
        return False
    ha, hb = ctx.home(a_v), ctx.home(b_v)
    if ha.strides[-1] != 1 or m < 2:  # A's K dim contiguous: rows loaded whole
        return False
    b_kmajor = hb.strides[-1] == 1
    if not b_kmajor and (hb.strides[-2] != 1 or n % p):
        return False
    nk = -(-k // p)
    if nk > 1 and (not b_kmajor or k % p or nk > MAX_K_CHUNKS):
        return False
    fa, fb = _flat(ha, batch, m, k), _flat(hb, batch, k, n)
    home = ctx.home_for_store(c_v)
    fc = home.reshape((total, m, n))
    if fa is None or fb is None or fc is None:
        return False
    ctx.at_op(op)
    r = m // p
    item = dt.itemsize
    b_bytes = nk * n * item if b_kmajor else (n // p) * k * item
    g_n = _group(total, r * k * item + b_bytes + r * n * c_v.type.dtype.itemsize)
    # (p, B, r, K): row p r + j of each instance on partition p
    a_view = ctx.view(
        HbmHome(fa.base, fa.offset, (p, total, r, k), (r * fa.strides[1], fa.strides[0], fa.strides[1], 1))
    )
    c_view = ctx.view(
        HbmHome(
            fc.base,
            fc.offset,
            (p, total, r, n),
            (r * fc.strides[1], fc.strides[0], fc.strides[1], fc.strides[2]),
        )
    )
    if b_kmajor:  # (K / nk, B, nk, N): B's rows p nk + c on partition p (chunk c)
        kp, sk = k // nk, fb.strides[1]
        b_view = ctx.view(HbmHome(fb.base, fb.offset, (kp, total, nk, n), (nk * sk, fb.strides[0], sk, 1)))
    else:  # (p, B, s, K): B's rows n = p s + j on partition p
        s = n // p
        b_view = ctx.view(
            HbmHome(
                fb.base, fb.offset, (p, total, s, k), (s * fb.strides[2], fb.strides[0], fb.strides[2], 1)
            )
        )
    steps = total // g_n
    views = (a_view, b_view, c_view)
    args = (r, k, n, b_kmajor)
    if steps > MAX_STRAIGHT:
        _skewed_loop(ctx, views, steps, g_n, args, dt, c_v.type.dtype)
        return True
    # straight, skewed: step t+2's loads are issued before step t's store
    # and step t+1's transposes before step t's matmuls, so VectorE copies them while TensorE
    # runs step t's matmuls instead of after step t's evacuations
    loaded = [_load(ctx, views, t * g_n, g_n, *args, dt) for t in range(min(2, steps))]
    prepared = _prepare(ctx, loaded[0], *args)
    for t in range(steps):
        if t + 2 < steps:
            loaded.append(_load(ctx, views, (t + 2) * g_n, g_n, *args, dt))
        nxt = _prepare(ctx, loaded[t + 1], *args) if t + 1 < steps else None
        _finish(ctx, views, t * g_n, prepared, *args[:3], c_v.type.dtype)
        prepared = nxt
    return True


def _skewed_loop(ctx, views, steps: int, g_n: int, args: tuple, dt, c_dt) -> None:
    """``steps`` steps, loads one step ahead, in a ``fori_loop`` of step pairs: the loads go
    into two top-level tile sets used in turn (slot 0 for even steps, slot 1 for odd ones)."""
    b = ctx.b
    slots = [_alloc_loads(ctx, g_n, *args, dt) for _ in range(2)]
    _load(ctx, views, 0, g_n, *args, dt, into=slots[0])
    pairs = (steps - 1) // 2
    with b.fori_loop(0, pairs) as u:
        t0 = Affine.of(u) * (2 * g_n)
        _load(ctx, views, t0 + g_n, g_n, *args, dt, into=slots[1])
        _compute_store(ctx, views, t0, slots[0], *args, c_dt)
        _load(ctx, views, t0 + 2 * g_n, g_n, *args, dt, into=slots[0])
        _compute_store(ctx, views, t0 + g_n, slots[1], *args, c_dt)
    last = 2 * pairs  # the step slot 0 holds
    if steps - last == 2:
        _load(ctx, views, (last + 1) * g_n, g_n, *args, dt, into=slots[1])
    _compute_store(ctx, views, last * g_n, slots[0], *args, c_dt)
    if steps - last == 2:
        _compute_store(ctx, views, (last + 1) * g_n, slots[1], *args, c_dt)


def _alloc_loads(ctx, g_n: int, r: int, k: int, n: int, b_kmajor: bool, dt) -> tuple:
    """Tiles for the loads of ``g_n`` instances: (A rows, Bᵀ or B rows)."""
    p = ctx.partitions
    a_nat = ctx.b.alloc((p, g_n, r, k), dt, "sbuf", name="a_rows")
    if b_kmajor:
        nk = -(-k // p)
        return a_nat, ctx.b.alloc((k // nk, g_n, nk, n), dt, "sbuf", name="b_t")
    return a_nat, ctx.b.alloc((p, g_n, n // p, k), dt, "sbuf", name="b_rows")


def _load(ctx, views, i0, g_n: int, r: int, k: int, n: int, b_kmajor: bool, dt, into=None) -> tuple:
    """Load ``g_n`` instances from ``i0`` into ``into`` (fresh tiles when None): (A rows, Bᵀ
    or B rows)."""
    a_nat, b_in = into if into is not None else _alloc_loads(ctx, g_n, r, k, n, b_kmajor, dt)
    a_view, b_view, _ = views
    whole = tuple(_ds(0, e) for e in a_nat.type.shape)
    ctx.b.dma_copy(dst=Access(a_nat, whole), src=Access(a_view, (whole[0], _ds(i0, g_n)) + whole[2:]))
    whole = tuple(_ds(0, e) for e in b_in.type.shape)
    ctx.b.dma_copy(dst=Access(b_in, whole), src=Access(b_view, (whole[0], _ds(i0, g_n)) + whole[2:]))
    return a_nat, b_in


def _compute_store(ctx, views, i0, loaded, r: int, k: int, n: int, b_kmajor: bool, c_dt) -> None:
    """Transposes, matmuls, evacuations and stores of the instances ``loaded`` holds (from
    ``i0``)."""
    _finish(ctx, views, i0, _prepare(ctx, loaded, r, k, n, b_kmajor), r, k, n, c_dt)


def _prepare(ctx, loaded, r: int, k: int, n: int, b_kmajor: bool) -> list:
    """Aᵀ and Bᵀ of every instance ``loaded`` holds (TensorE transposes, copies on VectorE):
    per instance (Aᵀ tile, moving(c, n0, w) giving Bᵀ's chunk ``c``, columns ``n0 .. n0 + w``)."""
    b, p = ctx.b, ctx.partitions
    a_nat, b_in = loaded
    g_n, dt = a_nat.type.shape[1], a_nat.type.dtype
    fmax = ctx.target.psum_bank_fmax
    per_bank = max(1, fmax // p)  # 128-column transposes one PSUM tile holds
    nk = -(-k // p)
    kp = k // nk  # K chunk c holds K indices p nk + c
    out = []
    for g in range(g_n):
        # Aᵀ blocks [kp, nk, r, 128]: block (c, j) = rows p r + j, columns q nk + c
        a_t = b.alloc((kp, nk, r, p), dt, "sbuf", name="a_t")
        for c in range(nk):
            for j0 in range(0, r, per_bank):
                nj = min(per_bank, r - j0)
                ps = b.alloc((kp, nj, p), dt, "psum", name="a_ps")
                for j in range(nj):
                    b.nc_transpose(
                        dst=Access(ps, (_ds(0, kp), _ds(j, 1), _ds(0, p))),
                        data=Access(a_nat, (_ds(0, p), _ds(g, 1), _ds(j0 + j, 1), _ds(c, kp, nk))),
                    )
                b.tensor_copy(
                    dst=Access(a_t, (_ds(0, kp), _ds(c, 1), _ds(j0, nj), _ds(0, p))),
                    src=Access(ps, (_ds(0, kp), _ds(0, nj), _ds(0, p))),
                    engine="vector",
                )
        if b_kmajor:

            def moving(c, n0, w, g=g):
                return Access(b_in, (_ds(0, kp), _ds(g, 1), _ds(c, 1), _ds(n0, w)))
        else:
            s = n // p
            bt = b.alloc((k, n), dt, "sbuf", name="b_t")
            for j in range(s):
                ps = b.alloc((k, p), dt, "psum", name="b_ps")
                b.nc_transpose(
                    dst=Access(ps, (_ds(0, k), _ds(0, p))),
                    data=Access(b_in, (_ds(0, p), _ds(g, 1), _ds(j, 1), _ds(0, k))),
                )
                b.tensor_copy(
                    dst=Access(bt, (_ds(0, k), _ds(j, p, s))),
                    src=Access(ps, (_ds(0, k), _ds(0, p))),
                    engine="vector",
                )

            def moving(_c, n0, w, bt=bt):
                return Access(bt, (_ds(0, k), _ds(n0, w)))

        out.append((a_t, moving))
    return out


def _finish(ctx, views, i0, prepared: list, r: int, k: int, n: int, c_dt) -> None:
    """Matmuls, evacuations and stores of the ``prepared`` instances (from ``i0``): one C tile
    and one store per instance, evacuated on ScalarE and VectorE in turn."""
    b, p = ctx.b, ctx.partitions
    fmax = ctx.target.psum_bank_fmax
    nk = -(-k // p)
    kp = k // nk
    for g, (a_t, moving) in enumerate(prepared):
        c_t = b.alloc((p, r, n), c_dt, "sbuf", name="c_rows")
        engine = ("scalar", "vector")[g % 2]
        for j in range(r):
            for n0 in range(0, n, fmax):
                w = min(fmax, n - n0)
                acc = b.alloc((p, fmax), "f32", "psum", name="acc")
                for c in range(nk):
                    b.nc_matmul(
                        dst=Access(acc, (_ds(0, p), _ds(0, w))),
                        stationary=Access(a_t, (_ds(0, kp), _ds(c, 1), _ds(j, 1), _ds(0, p))),
                        moving=moving(c, n0, w),
                        accumulate=c > 0,
                    )
                b.tensor_copy(
                    dst=Access(c_t, (_ds(0, p), _ds(j, 1), _ds(n0, w))),
                    src=Access(acc, (_ds(0, p), _ds(0, w))),
                    engine=engine,
                )
        _, _, c_view = views
        b.dma_copy(
            dst=Access(c_view, (_ds(0, p), _ds(Affine.of(i0) + g, 1), _ds(0, r), _ds(0, n))),
            src=Access(c_t, (_ds(0, p), _ds(0, r), _ds(0, n))),
        )
