"""Tile-level lowering of the ops of a fusion group, and the fold plan that maps op chains onto
single NISA instructions:

- ``f(y*s + c)`` (s, c immediates or per-partition columns) -> one ``activation(f, scale, bias)``;
- ``sum_F(f(...))`` -> the activation's fused ``reduce_res``;
- a reduction whose only use is ``y - r`` folded into a bias -> ``tensor_reduce(negate=True)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...ir.errors import BuildError
from ...ir.op import Op
from ...ir.value import Value
from ...nki.types import Access, Affine, DimSlice
from ...tensor import ops as T
from .group_emit import GroupEmitter, immediate_of
from .groups import domain_axes

ACT_FUNC = {
    T.ExpOp: "exp", T.LogOp: "log", T.SqrtOp: "sqrt", T.RsqrtOp: "rsqrt",
    T.ReciprocalOp: "reciprocal", T.TanhOp: "tanh", T.SigmoidOp: "sigmoid", T.SiluOp: "silu",
    T.GeluOp: "gelu", T.SoftplusOp: "softplus", T.ErfOp: "erf", T.SinOp: "sin",
    T.ArctanOp: "arctan", T.ReluOp: "relu", T.AbsOp: "abs", T.SignOp: "sign",
    T.SquareOp: "square", T.NegOp: "copy",
}
ALU = {
    T.AddOp: "add", T.SubOp: "subtract", T.MulOp: "multiply", T.MaximumOp: "maximum",
    T.MinimumOp: "minimum", T.PowOp: "power", T.EqualOp: "equal", T.NotEqualOp: "not_equal",
    T.LessOp: "less", T.LessEqualOp: "less_equal", T.GreaterOp: "greater",
    T.GreaterEqualOp: "greater_equal", T.LogicalAndOp: "logical_and", T.LogicalOrOp: "logical_or",
    T.LogicalXorOp: "logical_xor", T.BitwiseAndOp: "bitwise_and", T.BitwiseOrOp: "bitwise_or",
    T.BitwiseXorOp: "bitwise_xor",
}
REDUCE_ALU = {"sum": "add", "prod": "multiply", "max": "maximum", "min": "minimum",
              "any": "logical_or", "all": "logical_and"}
FLOAT_EXACT_LIMIT = 8388608.0  # 2**23: float32 values at or above this magnitude are integers


@dataclass
class ActSpec:
    """An op emitted as ``activation(func, data*scale + bias)`` (+ optional fused row sum)."""

    func: str
    data: Value
    scale: float | Value = 1.0
    bias: float | Value | None = None
    bias_negate: bool = False
    reduce: Value | None = None


@dataclass
class FoldPlan:
    folded: set = field(default_factory=set)
    act: dict = field(default_factory=dict)
    negated: set = field(default_factory=set)
    aliased: set = field(default_factory=set)   # casts emitted as no instruction (same tile)
    narrowed: dict = field(default_factory=dict)  # producer op -> dtype its tile is written in

    def operands_of(self, op: Op) -> list[Value]:
        """The values an op's emitted instruction(s) read."""
        spec = self.act.get(op)
        if spec is None:
            return list(op.operands)
        out = [spec.data]
        for x in (spec.scale, spec.bias):
            if isinstance(x, Value):
                out.append(x)
        return out

    def const_columns(self) -> list[tuple]:
        keys = []
        for spec in self.act.values():
            if spec.bias is not None and not isinstance(spec.bias, Value):
                k = (-spec.bias if spec.bias_negate else spec.bias, "f32")
                if k not in keys:
                    keys.append(k)
        return keys

    @staticmethod
    def build(em: GroupEmitter) -> FoldPlan:
        fp = FoldPlan()
        escaping = em.keep

        def single_private_use(v: Value) -> Op | None:
            d = v.defining_op
            if d not in em.members or v in escaping or v.num_uses != 1 or d in fp.folded:
                return None
            return d if v.type.dtype.is_float else None

        def scalar_side(op: Op) -> tuple[Value, float | Value] | None:
            """(full operand, immediate or per-partition operand) of a binary op."""
            a, b = op.operands
            for full, other in ((a, b), (b, a)):
                k = immediate_of(other)
                if k is not None and em.ext(full) == em.ext(op.result):
                    return full, float(k)
                if (other.defining_op is not None or other in em.ctx.homes) and \
                        em.per_partition(other) and not em.per_partition(op.result) \
                        and em.ext(full) == em.ext(op.result):
                    return full, other
            return None

        for op in em.g.ops:
            func = ACT_FUNC.get(type(op))
            if func is None or not op.result.type.dtype.is_float:
                continue
            spec = ActSpec(func, op.operand(0), -1.0 if isinstance(op, T.NegOp) else 1.0)
            if func != "copy":
                p = single_private_use(spec.data)
                if isinstance(p, (T.AddOp, T.SubOp)):
                    ss = scalar_side(p)
                    if ss is not None and not (isinstance(p, T.SubOp) and ss[0] is p.operand(1)):
                        spec.data, spec.bias = ss
                        spec.bias_negate = isinstance(p, T.SubOp)
                        fp.folded.add(p)
                        p = single_private_use(spec.data)
                if isinstance(p, T.MulOp):
                    ss = scalar_side(p)
                    if ss is not None:
                        spec.data, spec.scale = ss
                        fp.folded.add(p)
            fp.act[op] = spec
        # a reduction whose only use is subtracted inside an activation bias: negate it in place
        for spec in fp.act.values():
            if spec.bias_negate and isinstance(spec.bias, Value):
                r = spec.bias.defining_op
                if isinstance(r, T.ReduceOp) and r in em.members and spec.bias.num_uses == 1 \
                        and spec.bias not in escaping and r.attrs["kind"] in REDUCE_ALU:
                    fp.negated.add(r)
                    spec.bias_negate = False
        # a row sum of an activation result: fuse it into that activation
        for op in em.g.ops:
            if not isinstance(op, T.ReduceOp) or op.attrs["kind"] != "sum" or op in fp.negated:
                continue
            src = op.operand(0).defining_op
            spec = fp.act.get(src)
            if spec is None or spec.reduce is not None or src in fp.folded:
                continue
            if not em.per_partition(op.result) or not op.result.type.dtype.is_float:
                continue
            if sorted(domain_axes(op, len(em.plan.domain))) != sorted(d for d in em.plan.f_dims
                                                  if em.ext(op.operand(0))[d] > 1):
                continue
            spec.reduce = op.result
            fp.folded.add(op)
        _plan_cast_elision(em, fp)
        return fp


def _exact_widening(src, dst) -> bool:
    """Every value of ``src`` is exactly a value of ``dst`` (engines compute in fp32, so a
    widening cast changes nothing an engine reads)."""
    if dst.name == "f32":
        return src.is_float or src.is_bool or (src.is_int and src.itemsize <= 2)
    return src.is_float and src.itemsize == 1 and dst.name in ("bf16", "f16")


def _plan_cast_elision(em: GroupEmitter, fp: FoldPlan) -> None:
    """Casts that need no instruction: exact widenings read the operand's tile as is; a
    narrowing of an fp32 intermediate used only by the cast is folded into the producer's
    write (one rounding either way)."""
    for op in em.g.ops:
        if not isinstance(op, T.CastOp) or op in fp.folded:
            continue
        src = op.operand(0)
        st, dt = src.type.dtype, op.result.type.dtype
        if em.ext(src) != em.ext(op.result):
            continue
        if _exact_widening(st, dt):
            fp.aliased.add(op)
            continue
        p = src.defining_op
        if (dt.is_float and st.name == "f32" and p in em.members and p not in fp.folded
                and p not in fp.aliased and not isinstance(p, T.CastOp)
                and src.num_uses == 1 and src not in em.keep):
            fp.narrowed[p] = dt
            fp.aliased.add(op)


@dataclass
class Imm:
    value: float | int


def _arg(em: GroupEmitter, u: Value, inst, out_ext) -> Imm | Access:
    k = immediate_of(u)
    if k is not None:
        return Imm(k)
    return em.access(u, inst, out_ext)


def _engine(op: Op, alu: str) -> str:
    dts = [v.type.dtype for v in op.operands] + [op.result.type.dtype]
    if alu == "power":
        return "gpsimd"
    if alu.startswith("bitwise") or alu.startswith("logical"):
        return "vector"
    if all(d.is_int or d.is_bool for d in dts[:-1]) and not dts[-1].is_float:
        return "gpsimd"  # exact integer arithmetic and comparisons
    return "vector"


def emit_op(em: GroupEmitter, op: Op, inst) -> None:
    """Emit the instruction(s) computing ``op`` for one loop-nest instance."""
    if op in em.fold.act:
        return _activation(em, op, inst)
    rule = _RULES.get(type(op))
    if rule is None:
        for cls, r in _RULES.items():
            if isinstance(op, cls):
                rule = r
                break
    if rule is None:
        raise BuildError(f"lowering: no NKI rule for {op.name} inside a fusion group "
                         "(div, floor_divide, mod, cos, mean, var and std are rewritten by the "
                         "decompose pass)")
    rule(em, op, inst)


def _activation(em: GroupEmitter, op: Op, inst) -> None:
    spec: ActSpec = em.fold.act[op]
    v = op.result
    ve = em.ext(v)
    em.new_tile(v, inst)
    data = em.access(spec.data, inst, ve)
    scale = spec.scale if not isinstance(spec.scale, Value) else _fp32_column(em, spec.scale, inst)
    bias = None
    if isinstance(spec.bias, Value):
        bias = em.access(spec.bias, inst)
        if spec.bias_negate:
            t = em.scratch_tile(spec.bias, inst, "f32")
            neg = em.tile_access(t, inst, em.ext(spec.bias))
            em.b.tensor_scalar(dst=neg, data=bias, op0="multiply", operand0=-1.0)
            bias = neg
        else:
            bias = _fp32_column(em, spec.bias, inst)
    elif spec.bias is not None:
        bias = em.const_column(-spec.bias if spec.bias_negate else spec.bias, inst)
    red = None
    if spec.reduce is not None:
        em.new_tile(spec.reduce, inst)
        red = em.access(spec.reduce, inst)
    em.note("scalar", data.free_size)
    em.b.activation(dst=em.access(v, inst), op=spec.func, data=data, bias=bias, scale=scale,
                    reduce_res=red)


def _fp32_column(em: GroupEmitter, v: Value, inst) -> Access:
    """``v``'s per-partition column as fp32 (activation scale / bias operands must be fp32)."""
    acc = em.access(v, inst)
    if em.tiles[v].type.dtype.name == "f32":
        return acc
    t = em.tile_access(em.scratch_tile(v, inst, "f32"), inst, em.ext(v))
    em.b.tensor_copy(dst=t, src=acc)
    return t


WRAPPING = ("add", "subtract", "multiply", "power")
_GPSIMD_OK = ("add", "subtract", "multiply", "maximum", "minimum")  # float ops both engines run


def _wrap_into(em: GroupEmitter, v: Value, inst, emit) -> None:
    """Integer results narrower than 32 bits wrap around in NumPy but saturate on an engine
    write: compute into an int32 scratch with ``emit(dst)``, then wrap it into v's tile."""
    dt = v.type.dtype
    wide = _scratch(em, v, inst, "i32")
    emit(wide)
    dst = em.access(v, inst)
    mask = (1 << dt.bits) - 1
    if not dt.is_signed:
        em.b.tensor_scalar(dst=dst, data=wide, op0="bitwise_and", operand0=mask)
        return
    half = 1 << (dt.bits - 1)
    shifted = _scratch(em, v, inst, "i32")
    em.b.tensor_scalar(dst=shifted, data=wide, op0="add", operand0=float(half), engine="gpsimd")
    masked = _scratch(em, v, inst, "i32")
    em.b.tensor_scalar(dst=masked, data=shifted, op0="bitwise_and", operand0=mask)
    em.b.tensor_scalar(dst=dst, data=masked, op0="subtract", operand0=float(half), engine="gpsimd")


def _widen_bool(em: GroupEmitter, u: Value, x, inst, out_ext, dtype):
    if isinstance(x, Imm) or not u.type.dtype.is_bool:
        return x
    t = em.tile_access(em.scratch_tile(u, inst, dtype), inst, em.ext(u))
    em.b.tensor_copy(dst=t, src=em.access(u, inst))
    return Access(t.tensor, t.dims[:1] + tuple(
        DimSlice(d.offset, n, 0 if (d.size == 1 and n > 1) else d.stride)
        for d, n in zip(t.dims[1:], (x.dims[k + 1].size for k in range(len(t.dims) - 1)))))


def _narrow_int(v: Value) -> bool:
    return v.type.dtype.is_int and v.type.dtype.itemsize < 4


def _binary(em: GroupEmitter, op: Op, inst) -> None:
    v = op.result
    ve = em.ext(v)
    alu = ALU.get(type(op))
    if alu is None:
        raise BuildError(f"lowering: no NKI rule for {op.name} (the decompose pass rewrites it)")
    if alu.startswith("bitwise") and all(u.type.dtype.is_bool for u in op.operands):
        alu = alu.replace("bitwise", "logical")  # on bools the bitwise ops are the logical ones
    a, b = (_arg(em, u, inst, ve) for u in op.operands)
    if alu.startswith("bitwise") and not v.type.dtype.is_bool:
        # the bitvector ALU takes integers only: widen bool operands to the result dtype
        a, b = (_widen_bool(em, u, x, inst, ve, v.type.dtype) for u, x in zip(op.operands, (a, b)))
    em.new_tile(v, inst)
    if _narrow_int(v) and alu in WRAPPING:
        return _wrap_into(em, v, inst, lambda d: _binary_into(em, op, inst, alu, a, b, d))
    _binary_into(em, op, inst, alu, a, b, em.access(v, inst))


def _binary_into(em: GroupEmitter, op: Op, inst, alu: str, a, b, dst) -> None:
    v = op.result
    eng = _engine(op, alu)
    if isinstance(a, Imm) and isinstance(b, Imm):
        val = op.ufunc(np.array(a.value), np.array(b.value))
        em.b.memset(dst=dst, value=v.type.dtype.python_value(val))
        return
    out_pp = em.per_partition(v)
    if isinstance(b, Imm) or (not isinstance(a, Imm) and not out_pp
                              and em.per_partition(op.operand(1)) and not em.per_partition(op.operand(0))):
        data, operand, rev = a, b, False
    elif isinstance(a, Imm) or (not out_pp and em.per_partition(op.operand(0))
                                and not em.per_partition(op.operand(1))):
        data, operand, rev = b, a, True
    else:
        movable = eng == "vector" and alu in _GPSIMD_OK and all(
            x.tensor.type.space.value == "sbuf" for x in (dst, a, b)) and v.type.dtype.is_float
        if movable:
            eng = em.pick_engine(("vector", "gpsimd"), 2 * dst.free_size)
        else:
            em.note(eng, 2 * dst.free_size)
        em.b.tensor_tensor(dst=dst, data1=a, data2=b, op=alu, engine=eng)
        return
    scalar_side = op.operand(0) if rev else op.operand(1)
    if rev and alu in ("add", "multiply", "maximum", "minimum", "equal", "not_equal"):
        rev = False  # commutative: the scalar side does not matter
    if isinstance(operand, Imm):
        imm = operand.value
        operand = imm if alu.startswith("bitwise") else float(imm)
        if alu == "subtract" and not rev:
            alu, operand = "add", -operand
    else:
        operand = em.access(scalar_side, inst)
    if eng == "vector" and alu in ("multiply", "add") and not rev and v.type.dtype.is_float:
        eng = em.pick_engine(("vector", "scalar"), dst.free_size)
    em.b.tensor_scalar(dst=dst, data=data, op0=alu, operand0=operand, reverse0=rev, engine=eng)


def _scratch(em, v, inst, dtype="f32") -> Access:
    return em.tile_access(em.scratch_tile(v, inst, dtype), inst, em.ext(v))


def _floor_like(em: GroupEmitter, x: Access, v: Value, inst, dst: Access, ceil: bool) -> None:
    """floor / ceil of floats from engine casts: r = rne(x); r -/+ (r >/< x); keep x when
    |x| >= 2**23 (already integral), inf or NaN."""
    ri = _scratch(em, v, inst, "i32")
    em.b.tensor_copy(dst=ri, src=x)
    r = _scratch(em, v, inst)
    em.b.tensor_copy(dst=r, src=ri)
    fix = _scratch(em, v, inst)
    em.b.tensor_tensor(dst=fix, data1=r, data2=x, op="less" if ceil else "greater")
    adj = _scratch(em, v, inst)
    em.b.tensor_tensor(dst=adj, data1=r, data2=fix, op="add" if ceil else "subtract")
    small = _scratch(em, v, inst, "u8")
    em.b.tensor_scalar(dst=small, data=x, op0="abs_max", operand0=0.0, op1="less",
                       operand1=FLOAT_EXACT_LIMIT)
    em.b.select(dst=dst, predicate=small, on_true=adj, on_false=x)


def _unary(em: GroupEmitter, op: Op, inst) -> None:
    v = op.result
    x = em.access(op.operand(0), inst, em.ext(v))
    em.new_tile(v, inst)
    dst = em.access(v, inst)
    in_t = op.operand(0).type.dtype
    b = em.b
    if isinstance(op, (T.FloorOp, T.CeilOp)):
        if in_t.is_float:
            return _floor_like(em, x, v, inst, dst, isinstance(op, T.CeilOp))
        return b.tensor_copy(dst=dst, src=x)
    if isinstance(op, T.LogicalNotOp) or (isinstance(op, T.BitwiseNotOp) and in_t.is_bool):
        return b.tensor_scalar(dst=dst, data=x, op0="equal", operand0=0.0)
    if isinstance(op, T.BitwiseNotOp):
        ones = (1 << in_t.bits) - 1 if not in_t.is_signed else -1
        return b.tensor_scalar(dst=dst, data=x, op0="bitwise_xor", operand0=ones)
    # integer forms of neg / abs / relu / square / sign (exact on GpSimd)
    if isinstance(op, (T.NegOp, T.AbsOp, T.SquareOp)) and _narrow_int(v):
        rule = {T.NegOp: lambda d: b.tensor_scalar(dst=d, data=x, op0="multiply", operand0=-1.0,
                                                   engine="gpsimd"),
                T.AbsOp: lambda d: b.tensor_scalar(dst=d, data=x, op0="abs_max", operand0=0.0,
                                                   engine="gpsimd"),
                T.SquareOp: lambda d: b.tensor_tensor(dst=d, data1=x, data2=x, op="multiply",
                                                      engine="gpsimd")}[type(op)]
        return _wrap_into(em, v, inst, rule)
    if isinstance(op, T.NegOp):
        return b.tensor_scalar(dst=dst, data=x, op0="multiply", operand0=-1.0, engine="gpsimd")
    if isinstance(op, T.AbsOp):
        return b.tensor_scalar(dst=dst, data=x, op0="abs_max", operand0=0.0, engine="gpsimd")
    if isinstance(op, T.ReluOp):
        return b.tensor_scalar(dst=dst, data=x, op0="maximum", operand0=0.0, engine="gpsimd")
    if isinstance(op, T.SquareOp):
        return b.tensor_tensor(dst=dst, data1=x, data2=x, op="multiply", engine="gpsimd")
    if isinstance(op, T.SignOp):
        pos = _scratch(em, v, inst, v.type.dtype)
        b.tensor_scalar(dst=pos, data=x, op0="greater", operand0=0.0, engine="gpsimd")
        neg = _scratch(em, v, inst, v.type.dtype)
        b.tensor_scalar(dst=neg, data=x, op0="less", operand0=0.0, engine="gpsimd")
        return b.tensor_tensor(dst=dst, data1=pos, data2=neg, op="subtract", engine="gpsimd")
    raise BuildError(f"lowering: no NKI rule for {op.name} on {in_t.numpy_name} "
                     "(the decompose pass rewrites cos)")


def _cast(em: GroupEmitter, op: Op, inst) -> None:
    v = op.result
    if op in em.fold.aliased:
        em.tiles[v] = em.tiles[op.operand(0)]
        return
    src_t, dst_t = op.operand(0).type.dtype, v.type.dtype
    x = em.access(op.operand(0), inst, em.ext(v))
    em.new_tile(v, inst)
    dst = em.access(v, inst)
    b = em.b
    if dst_t.is_bool:
        return b.tensor_scalar(dst=dst, data=x, op0="not_equal", operand0=0.0)
    if src_t.is_float and dst_t.is_int:
        # NumPy truncates toward zero; engines round to nearest: trunc = sign(x) * floor(|x|)
        a = _scratch(em, v, inst)
        b.activation(dst=a, op="abs", data=x)
        fl = _scratch(em, v, inst)
        _floor_like(em, a, v, inst, fl, ceil=False)
        s = _scratch(em, v, inst)
        b.activation(dst=s, op="sign", data=x)
        t = _scratch(em, v, inst)
        b.tensor_tensor(dst=t, data1=fl, data2=s, op="multiply")
        return b.tensor_copy(dst=dst, src=t)
    eng = "vector"
    if src_t.is_float and dst_t.is_float:
        eng = em.pick_engine(("vector", "scalar"), dst.free_size)
    b.tensor_copy(dst=dst, src=x, engine=eng)


def _where(em: GroupEmitter, op: Op, inst) -> None:
    v = op.result
    ve = em.ext(v)
    c, a, f = (_arg(em, u, inst, ve) for u in op.operands)
    em.new_tile(v, inst)
    dst = em.access(v, inst)
    if isinstance(a, Imm):
        t = _scratch(em, v, inst, v.type.dtype)
        em.b.memset(dst=t, value=v.type.dtype.python_value(a.value))
        a = t
    if isinstance(c, Imm):
        if c.value:
            return em.b.tensor_copy(dst=dst, src=a)
        if isinstance(f, Imm):
            return em.b.memset(dst=dst, value=v.type.dtype.python_value(f.value))
        return em.b.tensor_copy(dst=dst, src=f)
    on_false = f.value if isinstance(f, Imm) else f
    em.b.select(dst=dst, predicate=c, on_true=a, on_false=on_false)


def _reduce(em: GroupEmitter, op: Op, inst) -> None:
    kind = op.attrs["kind"]
    alu = REDUCE_ALU.get(kind)
    if alu is None:
        raise BuildError(f"lowering: tensor.reduce kind {kind!r} is rewritten by decompose first")
    f_dims = list(em.plan.f_dims)
    pos = sorted(1 + f_dims.index(d) for d in domain_axes(op, len(em.plan.domain)) if d in f_dims)
    nfree = max(len(f_dims), 1)
    if pos != list(range(nfree - len(pos) + 1, nfree + 1)):
        raise BuildError(f"lowering: {op.name} over axes {list(op.attrs['axes'])} is not over the "
                         f"trailing free dims of its tile (free dims {f_dims})")
    v = op.result
    x = em.access(op.operand(0), inst)
    negate = op in em.fold.negated
    exact_in_f32 = kind in ("max", "min") and op.operand(0).type.dtype.itemsize <= 4
    em.new_tile(v, inst, "f32" if negate and exact_in_f32 else None)
    if not pos:
        return em.b.tensor_copy(dst=em.access(v, inst), src=x)
    em.b.tensor_reduce(dst=em.access(v, inst), op=alu, data=x, axis=tuple(pos),
                       negate=negate, keepdims=True)


def _iota(em: GroupEmitter, op: Op, inst) -> None:
    v = op.result
    plan = em.plan
    ax = op.attrs["axis"] + len(plan.domain) - v.type.rank
    em.new_tile(v, inst)
    dst = em.access(v, inst)
    free = [d.size for d in dst.dims[1:]]
    steps = [0] * len(free)
    cm = 0
    offset = inst.offsets[ax]
    if ax in plan.f_dims:
        steps[plan.f_dims.index(ax)] = 1
    elif ax in plan.p_dims:
        others = [d for d in plan.p_dims if d != ax and inst.extents[d] > 1]
        if others:
            raise BuildError(f"lowering: tensor.iota along axis {op.attrs['axis']} shares the "
                             "partitions with other dims; only affine partition patterns exist")
        cm = 1
    em.b.iota(dst=dst, pattern=[[s, n] for s, n in zip(steps, free)], offset=offset,
              channel_multiplier=cm)


def _full(em: GroupEmitter, op: Op, inst) -> None:
    em.new_tile(op.result, inst)
    em.b.memset(dst=em.access(op.result, inst), value=immediate_of(op.result))


_RULES = {
    T.BinaryOp: _binary, T.UnaryOp: _unary, T.CastOp: _cast, T.WhereOp: _where,
    T.ReduceOp: _reduce, T.IotaOp: _iota, T.FullOp: _full,
}
