"""Accumulating reductions: reductions over partition dims or loop-iterated dims.

Per loop-nest instance the operand is reduced over its free dims into a partial column, which
is combined into an fp32 accumulator that lives outside the loops over the reduced dims (those
loops run innermost). After the loops the accumulator is finished: across partitions with a
ones-vector matmul (sum) or a TensorE transpose plus a free-dim reduce (max, min, prod, any,
all), then cast to the result dtype. The result is only complete after the loop nest, so it
ends its fusion group (``groups.form_groups`` treats it as a barrier).
"""

from __future__ import annotations

from ...ir.errors import BuildError
from ...nki.types import Access
from ...nki.types import ds as _ds
from ...tensor import ops as T
from .groups import domain_axes
from .limits import LoweringLimit
from .online import combine_running_max, rescale_running_sum

IDENTITY = {"sum": 0.0, "prod": 1.0, "max": float("-inf"), "min": float("inf"), "any": 0.0, "all": 1.0}
COMBINE = {
    "sum": "add",
    "prod": "multiply",
    "max": "maximum",
    "min": "minimum",
    "any": "maximum",
    "all": "minimum",
}


def _p_reduced(em, op) -> bool:
    axes = domain_axes(op, len(em.plan.domain))
    return any(d in axes and em.plan.domain[d] > 1 for d in em.plan.p_dims)


def start_accumulator(em, op: T.ReduceOp, inst) -> None:
    """Allocate the fp32 accumulator of ``op`` for this instance and fill it with the identity."""
    kind = op.attrs["kind"]
    if kind not in IDENTITY:
        raise BuildError(f"lowering: tensor.reduce kind {kind!r} is rewritten by decompose first")
    shape = (inst.rows(),) + inst.free(em.ext(op.result))
    t = em.b.alloc(shape, "f32", "sbuf", name="acc")
    em.b.memset(dst=t, value=IDENTITY[kind])
    em.accumulators[op] = t


def combine_accumulator(em, op: T.ReduceOp, inst) -> None:
    """acc[rows] = combine(acc[rows], reduce over the free dims of this instance's operand)."""
    kind = op.attrs["kind"]
    x_v = op.operand(0)
    x = em.access(x_v, inst)
    if kind in ("any", "all") and not x_v.type.dtype.is_bool:
        nz = em.tile_access(em.scratch_tile(x_v, inst, "f32"), inst, em.ext(x_v))
        em.b.tensor_scalar(dst=nz, data=x, op0="not_equal", operand0=0.0)
        x = nz
    f_dims = list(em.plan.f_dims)
    pos = [1 + f_dims.index(d) for d in domain_axes(op, len(em.plan.domain)) if d in f_dims]
    acc_t = em.accumulators[op]
    acc = em.tile_access(acc_t, inst, em.ext(op.result))
    if pos and op in em.fold.folded:  # a row sum fused into the activation producing x
        x = em.access(op.result, inst)
    elif pos:
        nfree = len(f_dims)
        if sorted(pos) != list(range(nfree - len(pos) + 1, nfree + 1)):
            raise LoweringLimit(
                f"lowering: {op.name} reduces free dims {sorted(pos)} of {nfree} that are not "
                "the trailing ones; tensor_reduce reduces trailing free axes",
                op,
            )
        part_dtype = _partial_dtype(em, kind, x)
        part = em.tile_access(em.scratch_tile(op.result, inst, part_dtype), inst, em.ext(op.result))
        em.b.tensor_reduce(dst=part, op=COMBINE[kind], data=x, axis=tuple(sorted(pos)), keepdims=True)
        x = part
    if op in em.online:
        if _p_reduced(em, op):
            raise BuildError(
                f"lowering: running max {op.name} reduces partitions (an internal planning error)"
            )
        em.rescale[em.online[op]] = combine_running_max(em, op, acc, x, inst)
        return
    if op in em.rescale:
        rescale_running_sum(em, acc, em.rescale.pop(op))
    em.b.tensor_tensor(dst=acc, data1=acc, data2=x, op=COMBINE[kind])


def _partial_dtype(em, kind: str, x: Access) -> str:
    """The dtype of an instance's partial reduction: the data's own dtype for a max / min the
    engine reduces at its fast rate in that dtype (bf16 in and out: N/2 cycles instead of N;
    exact, a max or min is one of its inputs), else fp32."""
    t = em.ctx.target
    name = x.tensor.type.dtype.name
    if (
        kind in ("max", "min")
        and name in t.vector_fast_reduce_dtypes
        and COMBINE[kind] in t.vector_fast_reduce_ops
    ):
        return name
    return "f32"


def finish_accumulator(em, op: T.ReduceOp, inst) -> None:
    """Reduce the accumulator across partitions if needed and write the result tile."""
    kind = op.attrs["kind"]
    v = op.result
    acc_t = em.accumulators.pop(op)
    rows = acc_t.type.shape[0]
    free = acc_t.type.shape[1:]
    if not _p_reduced(em, op):
        em.new_tile(v, inst)
        em.b.tensor_copy(dst=em.access(v, inst), src=em.tile_access(acc_t, inst, em.ext(v)))
        return
    n = 1
    for f in free:
        n *= f
    out = em.b.alloc((1,) + tuple(free), v.type.dtype, "sbuf", name=v.name_hint or "red")
    em.tiles[v] = out
    flat_acc = Access(acc_t, (_ds(0, rows),) + tuple(_ds(0, f) for f in free))
    if kind == "sum":
        ones = em.b.alloc((rows, 1), "f32", "sbuf", name="ones")
        em.b.memset(dst=ones, value=1.0)
        if len(free) != 1:
            raise LoweringLimit(
                f"lowering: {op.name}: a partition sum keeps free dims {tuple(free)}; the "
                "ones-vector matmul reduces partitions into one free dim (moving tile 2-D)",
                op,
            )
        fmax = em.ctx.target.psum_bank_fmax
        for j in range(0, n, fmax):
            w = min(fmax, n - j)
            ps = em.b.alloc((1, fmax), "f32", "psum", name="psum_red")
            em.b.nc_matmul(
                dst=Access(ps, (_ds(0, 1), _ds(0, w))),
                stationary=ones,
                moving=Access(acc_t, (_ds(0, rows), _ds(j, w))),
            )
            em.b.tensor_copy(dst=Access(out, (_ds(0, 1), _ds(j, w))), src=Access(ps, (_ds(0, 1), _ds(0, w))))
        return
    if n != 1:
        if len(free) != 1:
            raise LoweringLimit(
                f"lowering: {op.name}: a partition reduction keeps free dims {tuple(free)}; "
                "nc_transpose moves one free dim onto the partitions (2-D tiles)",
                op,
            )
        return _finish_by_transposes(em, kind, acc_t, out, rows, n)
    ps = em.b.alloc((1, rows), "f32", "psum", name="psum_t")
    em.b.nc_transpose(dst=ps, data=flat_acc)
    em.b.tensor_reduce(
        dst=Access(out, (_ds(0, 1),) + tuple(_ds(0, 1) for _ in free)),
        op=COMBINE[kind],
        data=ps,
        axis=(1,),
        keepdims=True,
    )


def _finish_by_transposes(em, kind: str, acc_t, out, rows: int, n: int) -> None:
    """Reduce an accumulator (rows, n) over its partitions for a non-sum kind: per block of up
    to 128 columns, transpose it on TensorE (columns onto partitions), reduce along the free
    dim, and transpose the resulting column back into the output row."""
    p = em.ctx.partitions
    for j in range(0, n, p):
        w = min(p, n - j)
        pt = em.b.alloc((w, rows), "f32", "psum", name="psum_t")
        em.b.nc_transpose(dst=pt, data=Access(acc_t, (_ds(0, rows), _ds(j, w))))
        col = em.b.alloc((w, 1), "f32", "sbuf", name="col")
        em.b.tensor_reduce(dst=col, op=COMBINE[kind], data=pt, axis=(1,), keepdims=True)
        back = em.b.alloc((1, w), "f32", "psum", name="psum_row")
        em.b.nc_transpose(dst=back, data=col)
        em.b.tensor_copy(dst=Access(out, (_ds(0, 1), _ds(j, w))), src=back)
