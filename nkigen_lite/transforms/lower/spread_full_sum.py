"""The full sum of a spread reduction (``x.sum()`` of a kernel input seen as ``[P, F]``), shaped
for a short tail after the last byte arrives.

The input is loaded in chunks along ``F`` (``plan_full_sum``): first a few large *bulk* chunks,
each summed per partition by VectorE (``tensor_reduce``) and ScalarE (the ``copy`` activation's
``reduce_res``) side by side, then a few small *tail* chunks that TensorE sums over the
partitions directly (ones-vector matmuls of up to ``PSUM_WIDTH`` columns). Every per-partition
partial joins one PSUM accumulation row ``[1, PSUM_WIDTH]`` through a ones-matmul of its own, and
TensorE's matmuls are emitted in the order their inputs are estimated to be ready
(spread_timing.py), so TensorE never waits for a partial while a later chunk is ready. When the
last chunk arrives only its ones-matmul, one ``tensor_reduce`` of the PSUM row and the store are
left. The plan is the candidate (bulk sizes, tail sizes) whose estimated last matmul ends first.
"""

from __future__ import annotations

from ...nki.types import Access
from ...nki.types import ds as _ds
from ...perf.latency import dependency_latency
from .spread_timing import EngineClock, arrivals

PSUM_WIDTH = 64  # columns of the PSUM row (64 = the matmul's minimum moving size)
BULK_RATIOS = (1.0, 0.8, 0.6, 0.4)
TAIL_BYTES = ((), (256,), (256, 256), (512, 256), (768, 256), (1024, 256), (512, 512, 256), (1024, 512, 256))


def _split_share(target, cnt: int) -> int:
    """Elements of a bulk chunk VectorE sums (the rest: ScalarE), by their clocks; all of a
    chunk too small to share."""
    if cnt < 4 * target.min_ii_cycles:
        return cnt
    v, s = 1.0 / target.vector_clock_hz, 1.0 / target.scalar_clock_hz
    return round(cnt * s / (v + s))


def _vector_ns(target, n: int, itemsize: int) -> float:
    fast = 2 if itemsize == 2 else 1  # bf16 add-reduce runs at 2 elements per cycle
    return max(target.min_ii_cycles, n / fast) * 1e9 / target.vector_clock_hz


def _scalar_ns(target, n: int) -> float:
    return (max(target.min_ii_cycles, n) + target.min_ii_cycles) * 1e9 / target.scalar_clock_hz


def _matmul_ns(target, w: int, itemsize: int) -> float:
    rate = target.matmul_fp32_factor if itemsize == 4 else 1
    return max(w, target.min_ii_cycles) * rate * 1e9 / target.tensor_clock_hz


def _matmuls(target, plan, itemsize: int, partitions: int) -> list[tuple[float, int, tuple]]:
    """(estimated ready ns, sequence, what) of every ones-matmul of ``plan``: ``what`` is
    ("v" | "s", chunk) for a partial or ("x", chunk, column0, width) for a tail piece."""
    arr = arrivals(target, partitions, [c * itemsize for c, _ in plan])
    vec, act = EngineClock(target, "vector"), EngineClock(target, "scalar")
    to_pe = {e: dependency_latency(e, "tensor", target) for e in ("vector", "scalar", "dma")}
    out = []
    for k, ((cnt, route), at) in enumerate(zip(plan, arr)):
        if route == "tensor":
            for c0 in range(0, cnt, PSUM_WIDTH):
                out.append((at + to_pe["dma"], len(out), ("x", k, c0, min(PSUM_WIDTH, cnt - c0))))
            continue
        nv = _split_share(target, cnt)
        end = vec.run(at, "dma", _vector_ns(target, nv, itemsize))
        out.append((end + to_pe["vector"], len(out), ("v", k)))
        if nv < cnt:
            end = act.run(at, "dma", _scalar_ns(target, cnt - nv))
            out.append((end + to_pe["scalar"], len(out), ("s", k)))
    return sorted(out)


def _last_matmul_end(target, plan, itemsize: int, partitions: int) -> float:
    t = 0.0
    for ready, _, what in _matmuls(target, plan, itemsize, partitions):
        w = what[3] if what[0] == "x" else 1
        t = max(t, ready) + _matmul_ns(target, w, itemsize)
    return t


def _candidates(n: int, itemsize: int):
    """Plans of ``n`` elements per partition: bulk chunks (each at most a fixed fraction of the
    one before) followed by tail chunks for TensorE."""
    seen = set()
    for tail_bytes in TAIL_BYTES:
        tail = [b // itemsize for b in tail_bytes]
        rest = n - sum(tail)
        if rest < PSUM_WIDTH:
            continue
        for nb in (1, 2, 3, 4):
            for r in BULK_RATIOS:
                weights = [r**i for i in range(nb)]
                sizes = [int(rest * w / sum(weights)) // 32 * 32 for w in weights]
                sizes[0] += rest - sum(sizes)
                if min(sizes) < PSUM_WIDTH:
                    continue
                plan = tuple([(c, "split") for c in sizes] + [(c, "tensor") for c in tail])
                if plan not in seen:
                    seen.add(plan)
                    yield list(plan)


def plan_full_sum(target, n: int, itemsize: int, partitions: int) -> list[tuple[int, str]]:
    """(elements, "split" | "tensor") per chunk: the candidate whose last ones-matmul is
    estimated to end first (ties: fewer chunks, then the earlier candidate)."""
    best = None
    for plan in _candidates(n, itemsize):
        key = (round(_last_matmul_end(target, plan, itemsize, partitions), 3), len(plan))
        if best is None or key < best[0]:
            best = (key, plan)
    return best[1] if best else [(n, "split")]


def emit_full_sum(ctx, sr, yv, n: int, load_chunks) -> None:
    """Emit the sum of the input (``n`` elements per partition) into ``yv`` ([1, 1] view of the
    output); ``load_chunks(spans)`` emits one SBUF tile and DMA per (start, count) span of the
    ``[P, n]`` input."""
    b, p, dt, tg = ctx.b, ctx.partitions, sr.x.type.dtype, ctx.target
    plan = plan_full_sum(tg, n, dt.itemsize, p)
    spans, s0 = [], 0
    for c, _ in plan:
        spans.append((s0, c))
        s0 += c
    w_ps = PSUM_WIDTH if any(r == "tensor" for _, r in plan) else 1
    ones = b.alloc((p, 1), "f32", "sbuf", name="ones")
    b.memset(dst=ones, value=1.0)
    ones_x = ones
    if dt.itemsize != 4 and any(r == "tensor" for _, r in plan):
        ones_x = b.alloc((p, 1), dt, "sbuf", name="ones_x")
        b.memset(dst=ones_x, value=1.0)
    zeros = b.alloc((p, w_ps), "f32", "sbuf", name="zeros")
    b.memset(dst=zeros, value=0.0)
    tiles = load_chunks(spans)
    ctx.at_op(sr.op)
    ps = b.alloc((1, w_ps), "f32", "psum", name="psum_red")
    b.nc_matmul(dst=ps, stationary=ones, moving=zeros)  # opens the accumulation group
    partial = {}
    for k, (t, (cnt, route)) in enumerate(zip(tiles, plan)):
        if route != "split":
            continue
        nv = _split_share(tg, cnt)
        pv = partial["v", k] = b.alloc((p, 1), "f32", "sbuf", name="partial")
        b.tensor_reduce(dst=pv, op="add", data=Access(t, (_ds(0, p), _ds(0, nv))), axis=(1,), keepdims=True)
        if nv < cnt:
            junk = b.alloc((p, cnt - nv), "f32", "sbuf", name="copyout")
            pa = partial["s", k] = b.alloc((p, 1), "f32", "sbuf", name="partial_act")
            b.activation(dst=junk, op="copy", data=Access(t, (_ds(0, p), _ds(nv, cnt - nv))), reduce_res=pa)
    for _, _, what in _matmuls(tg, plan, dt.itemsize, p):
        if what[0] == "x":
            _, k, c0, w = what
            moving, stationary = Access(tiles[k], (_ds(0, p), _ds(c0, w))), ones_x
        else:
            w, moving, stationary = 1, partial[what], ones
        b.nc_matmul(
            dst=Access(ps, (_ds(0, 1), _ds(0, w))), stationary=stationary, moving=moving, accumulate=True
        )
    out = b.alloc((1, 1), sr.op.result.type.dtype, "sbuf", name=sr.op.result.name_hint or "red")
    b.tensor_reduce(dst=out, op="add", data=ps, axis=(1,), keepdims=True)
    ctx.at(f"store {ctx.name(sr.op.result)}")
    b.dma_copy(dst=Access(yv, (_ds(0, 1), _ds(0, 1))), src=Access(out, (_ds(0, 1), _ds(0, 1))))
