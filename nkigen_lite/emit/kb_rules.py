"""Per-op rules of the Kernel Builder emitter: ``KB_RULES[op class](walker, op)``.

Each rule makes the builder calls for one NKI op; the builder names come from ``kb_table``.
"""

from __future__ import annotations

from ..nki import ops as K
from ..nki.types import HbmType
from . import kb_table as T
from .accesses import is_reshape_view, kernel_shape

KB_RULES: dict = {}


def rule(op_cls):
    def register(fn):
        KB_RULES[op_cls] = fn
        return fn

    return register


@rule(K.AllocOp)
def _alloc(w, op) -> None:
    v = op.result
    t = v.type
    if v in w.outputs:
        w.env[v] = w.tensors[w.outputs[v]]  # outputs are kernel parameters
        return
    dtype = getattr(w.nb, T.DTYPES[t.dtype.numpy_name])
    if isinstance(t, HbmType):
        w.env[v] = getattr(w.nb, T.HBM_ALLOC)(
            kernel_shape(t), dtype, memspace=getattr(w.nb, T.MEMSPACE["hbm"]), name=w.names[v]
        )
    else:
        w.env[v] = T.resolve(w.nb, T.TILE_ALLOC)(
            kernel_shape(t), dtype, space=getattr(w.nb, T.MEMSPACE[t.space.value]), name=w.names[v]
        )


@rule(K.DeallocOp)
def _dealloc(w, op) -> None:
    T.resolve(w.nb, T.TILE_RELEASE)(w.env[op.operand(0)])


@rule(K.HbmViewOp)
def _hbm_view(w, op) -> None:
    w.views[op.result] = op
    root = w.env[op.operand(0)]
    # a reshape is a real view; other views are addressed by .ap() at each access
    w.env[op.result] = root.reshape(kernel_shape(op.result.type)) if is_reshape_view(op) else root


@rule(K.DmaCopyOp)
def _dma_copy(w, op) -> None:
    w.isa_call(T.DMA_COPY, dst=w.access(op, "dst"), src=w.access(op, "src"))


@rule(K.TensorCopyOp)
def _tensor_copy(w, op) -> None:
    w.isa_call(T.TENSOR_COPY, dst=w.access(op, "dst"), src=w.access(op, "src"), engine=w.engine(op))


@rule(K.MemsetOp)
def _memset(w, op) -> None:
    dt = op.access("dst").dtype
    value = op.attrs["value"]
    value = int(value) if (dt.is_int or dt.is_bool) else float(value)
    w.isa_call(T.MEMSET, dst=w.access(op, "dst"), value=value, engine=w.engine(op))


@rule(K.IotaOp)
def _iota(w, op) -> None:
    w.isa_call(
        T.IOTA,
        dst=w.access(op, "dst"),
        pattern=[list(p) for p in op.attrs["pattern"]],
        offset=w.affine(op.affine("offset")),
        channel_multiplier=op.attrs["channel_multiplier"],
    )


@rule(K.MatmulOp)
def _matmul(w, op) -> None:
    w.isa_call(
        T.MATMUL,
        dst=w.access(op, "dst"),
        stationary=w.access(op, "stationary"),
        moving=w.access(op, "moving"),
        accum=bool(op.attrs["accumulate"]),
    )


@rule(K.TransposeOp)
def _transpose(w, op) -> None:
    w.isa_call(T.TRANSPOSE[op.engine], dst=w.access(op, "dst"), src=w.access(op, "data"))


@rule(K.ActivationOp)
def _activation(w, op) -> None:
    isa = w.isa
    kwargs = dict(
        dst=w.access(op, "dst"),
        src=w.access(op, "data"),
        bias=w.access(op, "bias") if op.access("bias") is not None else None,
        scale=w.operand(op, "scale"),
        op=getattr(getattr(isa, T.ACTIVATION_ENUM), op.attrs["op"]),
    )
    if op.access("reduce_res") is not None:
        kwargs.update(
            reduce_op=getattr(getattr(isa, T.ACT_REDUCE_ENUM), T.ACT_REDUCE_ADD),
            reduce_res=w.access(op, "reduce_res"),
            reduce_cmd=getattr(getattr(isa, T.REDUCE_CMD_ENUM), T.RESET_REDUCE),
        )
    w.isa_call(T.ACTIVATION, **kwargs)


@rule(K.TensorTensorOp)
def _tensor_tensor(w, op) -> None:
    name = op.attrs["op"]
    w.isa_call(
        T.TENSOR_TENSOR[T.alu_kind(name)],
        dst=w.access(op, "dst"),
        lhs=w.access(op, "data1"),
        rhs=w.access(op, "data2"),
        op=w.alu(name),
        engine=w.engine(op),
    )


@rule(K.TensorScalarOp)
def _tensor_scalar(w, op) -> None:
    op0 = op.attrs["op0"]
    kwargs = dict(
        dst=w.access(op, "dst"),
        src=w.access(op, "data"),
        op0=w.alu(op0),
        operand0=w.operand(op, "operand0"),
        reverse0=bool(op.attrs["reverse0"]),
    )
    if op.attrs["op1"] is not None:
        kwargs.update(
            op1=w.alu(op.attrs["op1"]),
            operand1=w.operand(op, "operand1"),
            reverse1=bool(op.attrs["reverse1"]),
        )
    w.isa_call(T.TENSOR_SCALAR[T.alu_kind(op0)], engine=w.engine(op), **kwargs)


@rule(K.TensorReduceOp)
def _tensor_reduce(w, op) -> None:
    name = op.attrs["op"]
    w.isa_call(
        T.TENSOR_REDUCE[T.alu_kind(name)],
        dst=w.access(op, "dst"),
        src=w.access(op, "data"),
        op=w.alu(name),
        num_r_dim=len(op.attrs["axis"]),
        negated=bool(op.attrs["negate"]),
    )


@rule(K.SelectOp)
def _select(w, op) -> None:
    kw = {"reverse_pred": True} if op.attrs["reverse_pred"] else {}
    if op.access("reduce_res") is not None:
        isa = w.isa
        kw.update(
            reduce_res=w.access(op, "reduce_res"),
            reduce_cmd=getattr(getattr(isa, T.REDUCE_CMD_ENUM), T.RESET_REDUCE),
        )  # reduce_op: the default, max (the only one select_reduce has)
    w.isa_call(
        T.SELECT,
        dst=w.access(op, "dst"),
        predicate=w.access(op, "predicate"),
        on_true=w.access(op, "on_true"),
        on_false=w.operand(op, "on_false"),
        **kw,
    )


@rule(K.AffineSelectOp)
def _affine_select(w, op) -> None:
    w.isa_call(
        T.AFFINE_SELECT,
        dst=w.access(op, "dst"),
        on_true_tile=w.access(op, "on_true_tile"),
        pattern=[list(p) for p in op.attrs["pattern"]],
        channel_multiplier=op.attrs["channel_multiplier"],
        offset=w.affine(op.affine("offset")),
        cmp_op=w.alu(op.attrs["cmp_op"]),
        on_false_value=float(op.attrs["on_false_value"]),
    )


@rule(K.ForiLoopOp)
def _loop(w, op) -> None:
    lo, step = op.attrs["lower"], op.attrs["step"]

    def body(k):
        w.env[op.index] = k if (lo, step) == (0, 1) else k * step + lo
        w.block(op.body)

    getattr(w.nb, T.FORI_LOOP)(op.trip_count, body, **{T.FORI_LOOP_UNROLL: w.unroll})


from . import kb_bn, kb_collective, kb_dma_transpose, kb_indirect, kb_scan, kb_shuffle, kb_top8  # noqa: E402, F401  (their rules)
