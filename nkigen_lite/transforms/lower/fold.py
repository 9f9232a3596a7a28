"""The fold plan of a fusion group: which op chains become single NISA instructions.

- ``f(y*s + c)`` (s, c immediates or per-partition columns) -> one ``activation(f, scale, bias)``;
- ``sum_F(f(...))`` -> the activation's fused ``reduce_res``;
- ``sum_F(float(a) * s)`` of an integer ``a`` fp32 holds exactly (a digit plane of an exact
  integer sum, decomposition/digit_planes.py) -> ``activation(copy, a, scale=s)`` with
  ``reduce_res`` on ScalarE (no separate cast, scale or VectorE reduction pass);
- a reduction whose only use is ``y - r`` folded into a bias -> ``tensor_reduce(negate=True)``;
- a centred value ``c = y - m`` (m a per-partition column) read only by activations and by
  multiplies with a column or an immediate is never materialised: each activation takes ``-m``
  as its bias and each multiply becomes one two-op ``tensor_scalar((y - m) * r)`` (centred.py);
- exact widening casts read their operand's tile; a narrowing of an fp32 intermediate used only
  by the cast is folded into the producer's write;
- a band mask ``where(cmp(iota_col - iota_row, k), a, b)`` -> one ``affine_select`` (affine_mask.py);
- an int32 chain ``Σ iota_d · a_d + c`` -> one ``iota`` (affine_iota.py);
- a row mean and the mean of the squared deviations from it -> ``bn_stats`` per chunk and one
  ``bn_aggr`` (moments.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ...ir.op import Op
from ...ir.value import Value
from ...tensor import ops as T
from ..float_integral import pow2_multiple
from ..int_range import int_range
from .affine_iota import plan_affine_iotas
from .affine_mask import mask_operands, plan_masks
from .centred import plan_centred
from .frame import TileFrame, immediate_of
from .groups import domain_axes
from .moments import plan_moments
from .tile_common import ACT_FUNC, REDUCE_ALU

F32_EXACT_BITS = 24  # fp32 holds every integer m * 2**t with |m| <= 2**24


@dataclass
class ActSpec:
    """An op emitted as ``activation(func, data*scale + bias)`` (+ optional fused row sum)."""

    func: str
    data: Value
    scale: float | Value = 1.0
    bias: float | Value | None = None
    bias_negate: bool = False
    reduce: Value | None = None
    inplace: bool = False  # dst is data's own tile (an integer plane read by nothing else)


@dataclass
class FoldPlan:
    folded: set = field(default_factory=set)
    act: dict = field(default_factory=dict)
    negated: set = field(default_factory=set)
    aliased: set = field(default_factory=set)  # casts emitted as no instruction (same tile)
    narrowed: dict = field(default_factory=dict)  # producer op -> dtype its tile is written in
    masks: dict = field(default_factory=dict)  # where op -> MaskSpec (affine_mask.py)
    iotas: dict = field(default_factory=dict)  # chain root op -> AffineIota (affine_iota.py)
    centred: dict = field(default_factory=dict)  # multiply op -> CentredMul (centred.py)
    centred_subs: set = field(default_factory=set)  # the subtractions those fold away
    moments: dict = field(default_factory=dict)  # row sum op -> Moments (moments.py)
    bit_consts: dict = field(default_factory=dict)  # (value, dtype, extents) -> like: GpSimd bitwise operands

    def operands_of(self, op: Op) -> list[Value]:
        """The values an op's emitted instruction(s) read."""
        if op in self.masks:
            return mask_operands(self.masks[op])
        if op in self.iotas:
            return list(self.iotas[op].iotas)
        if op in self.centred:
            return self.centred[op].operands()
        spec = self.act.get(op)
        if spec is None:
            return list(op.operands)
        out = [spec.data]
        for x in (spec.scale, spec.bias):
            if isinstance(x, Value):
                out.append(x)
        return out

    def const_tiles(self) -> list[tuple]:
        """(value, dtype name, result) of the masks whose on_true is an immediate: one tile of
        that value, filled once before the loops (affine_mask.py)."""
        return [
            (spec.on_true, op.result.type.dtype.name, op.result)
            for op, spec in self.masks.items()
            if not isinstance(spec.on_true, Value)
        ]

    def const_columns(self) -> list[tuple]:
        keys = []
        for spec in self.act.values():
            if spec.bias is not None and not isinstance(spec.bias, Value):
                k = (-spec.bias if spec.bias_negate else spec.bias, "f32")
                if k not in keys:
                    keys.append(k)
        return keys

    @staticmethod
    def build(em: TileFrame) -> FoldPlan:
        fp = FoldPlan()
        plan_moments(em, fp)
        plan_masks(em, fp)
        plan_affine_iotas(em, fp)
        plan_centred(em, fp)
        _fold_activation_operands(em, fp)
        _negate_bias_reductions(em, fp)
        _fuse_row_sums(em, fp)
        _fuse_int_row_sums(em, fp)
        _plan_cast_elision(em, fp)
        _plan_bit_consts(em, fp)
        return fp


def _exact_widening(src, dst) -> bool:
    """Every value of ``src`` is exactly a value of ``dst`` (engines compute in fp32, so a
    widening cast changes nothing an engine reads)."""
    if dst.name == "f32":
        return src.is_float or src.is_bool or (src.is_int and src.itemsize <= 2)
    return src.is_float and src.itemsize == 1 and dst.name in ("bf16", "f16")


def _plan_cast_elision(em: TileFrame, fp: FoldPlan) -> None:
    """Casts that need no instruction: exact widenings read the operand's tile as is; a
    narrowing of an fp32 intermediate used only by the cast is folded into the producer's
    write (one rounding either way)."""
    for op in em.g.ops:
        if not isinstance(op, T.CastOp) or op in fp.folded or op.result in em.resident_values:
            continue
        src = op.operand(0)
        st, dt = src.type.dtype, op.result.type.dtype
        if em.ext(src) != em.ext(op.result):
            continue
        if _exact_widening(st, dt):
            fp.aliased.add(op)
            continue
        p = src.defining_op
        if (
            dt.is_float
            and st.name == "f32"
            and p in em.members
            and p not in fp.folded
            and p not in fp.aliased
            and not isinstance(p, T.CastOp)
            and src.num_uses == 1
            and src not in em.keep
        ):
            fp.narrowed[p] = dt
            fp.aliased.add(op)


def _single_private_use(em: TileFrame, fp: FoldPlan, v: Value) -> Op | None:
    """The float op of the group defining ``v`` when ``v`` has no other use and does not escape."""
    d = v.defining_op
    if d not in em.members or v in em.keep or v.num_uses != 1 or d in fp.folded:
        return None
    return d if v.type.dtype.is_float else None


def _scalar_side(em: TileFrame, op: Op) -> tuple[Value, float | Value] | None:
    """(full operand, immediate or per-partition operand) of a binary op."""
    a, b = op.operands
    for full, other in ((a, b), (b, a)):
        if immediate_of(full) is not None:
            continue  # a constant has no tile to be the activation's data
        k = immediate_of(other)
        if k is not None and em.ext(full) == em.ext(op.result):
            return full, float(k)
        if (
            (other.defining_op is not None or other in em.ctx.homes)
            and em.per_partition(other)
            and not em.per_partition(op.result)
            and em.ext(full) == em.ext(op.result)
        ):
            return full, other
    return None


def _fold_activation_operands(em: TileFrame, fp: FoldPlan) -> None:
    """Each activation absorbs a private add/sub of a scalar (its bias) and then a private
    multiply by a scalar (its scale) that produce its data."""
    for op in em.g.ops:
        func = ACT_FUNC.get(type(op))
        if func is None or not op.result.type.dtype.is_float or op in fp.folded:
            continue
        spec = ActSpec(func, op.operand(0), -1.0 if isinstance(op, T.NegOp) else 1.0)
        if func != "copy":
            p = _single_private_use(em, fp, spec.data)
            if spec.data.defining_op in fp.centred_subs:  # a centred value read by several ops
                sub = spec.data.defining_op
                spec.data, spec.bias, spec.bias_negate = sub.operand(0), sub.operand(1), True
                p = None
            if isinstance(p, (T.AddOp, T.SubOp)):
                ss = _scalar_side(em, p)
                if ss is not None and not (isinstance(p, T.SubOp) and ss[0] is p.operand(1)):
                    spec.data, spec.bias = ss
                    spec.bias_negate = isinstance(p, T.SubOp)
                    fp.folded.add(p)
                    p = _single_private_use(em, fp, spec.data)
            if isinstance(p, T.MulOp):
                ss = _scalar_side(em, p)
                if ss is not None:
                    spec.data, spec.scale = ss
                    fp.folded.add(p)
        fp.act[op] = spec


def _negate_bias_reductions(em: TileFrame, fp: FoldPlan) -> None:
    """A reduction whose only use is subtracted inside an activation bias is negated in place."""
    for spec in fp.act.values():
        if spec.bias_negate and isinstance(spec.bias, Value):
            r = spec.bias.defining_op
            if (
                isinstance(r, T.ReduceOp)
                and r in em.members
                and spec.bias.num_uses == 1
                and not any(spec.bias is s.operand(1) for s in fp.centred_subs)
                and spec.bias not in em.keep
                and r.attrs["kind"] in REDUCE_ALU
            ):
                fp.negated.add(r)
                spec.bias_negate = False


def _fuse_row_sums(em: TileFrame, fp: FoldPlan) -> None:
    """A row sum of an activation result is fused into that activation (not one that starts
    a mean / variance pair: bn_stats computes it, moments.py)."""
    for op in em.g.ops:
        if (
            not isinstance(op, T.ReduceOp)
            or op.attrs["kind"] != "sum"
            or op in fp.negated
            or op in fp.moments
        ):
            continue
        src = op.operand(0).defining_op
        spec = fp.act.get(src)
        if spec is None or spec.reduce is not None or src in fp.folded:
            continue
        if not em.per_partition(op.result) or not op.result.type.dtype.is_float:
            continue
        if sorted(domain_axes(op, len(em.plan.domain))) != sorted(
            d for d in em.plan.f_dims if em.ext(op.operand(0))[d] > 1
        ):
            continue
        spec.reduce = op.result
        fp.folded.add(op)


def exact_int_to_f32(v: Value) -> bool:
    """Whether every element of the integer value ``v`` is exactly an fp32 number: a multiple
    of ``2**t`` (float_integral) of magnitude at most ``2**(24 + t)`` (int_range)."""
    if not v.type.dtype.is_int:
        return False
    t = pow2_multiple(v)
    lo, hi = int_range(v)
    return t is not None and max(-lo, hi) <= 1 << (F32_EXACT_BITS + t)


def _fuse_int_row_sums(em: TileFrame, fp: FoldPlan) -> None:
    """A row sum of ``float(a)`` or ``float(a) * s`` (``a`` an integer fp32 holds exactly, the
    cast and the product read by nothing else) becomes one ScalarE ``activation(copy, a,
    scale=s)`` with ``reduce_res``: the activation reads the integer tile as fp32 exactly, and
    writes its (unread) result over that tile when nothing else reads it (no second tile)."""
    for op in em.g.ops:
        if not isinstance(op, T.ReduceOp) or op.attrs["kind"] != "sum" or op in fp.folded or op in fp.negated:
            continue
        if op in fp.moments or not em.per_partition(op.result) or op.result.type.dtype.name != "f32":
            continue
        if sorted(domain_axes(op, len(em.plan.domain))) != sorted(
            d for d in em.plan.f_dims if em.ext(op.operand(0))[d] > 1
        ):
            continue
        src = op.operand(0).defining_op
        scale = 1.0
        if isinstance(src, T.MulOp) and _private(em, fp, op.operand(0)):
            ss = _scalar_side(em, src)
            if ss is None or isinstance(ss[1], Value):
                continue
            top, scale = src, ss[1]
            cast_v = ss[0]
        else:
            top, cast_v = src, op.operand(0)
        cast = cast_v.defining_op
        if not isinstance(cast, T.CastOp) or not _private(em, fp, cast_v) or cast_v.type.dtype.name != "f32":
            continue
        a = cast.operand(0)
        if not exact_int_to_f32(a) or em.ext(a) != em.ext(cast_v):
            continue
        private = a.defining_op in em.members and a not in em.keep and a.num_uses == 1
        fp.act[top] = ActSpec("copy", a, scale, reduce=op.result, inplace=private)
        fp.folded.add(op)
        if top is not cast:
            fp.folded.add(cast)


def _private(em: TileFrame, fp: FoldPlan, v: Value) -> bool:
    """``v`` is made in the group, read once, does not escape and is not folded elsewhere."""
    d = v.defining_op
    return d in em.members and v not in em.keep and v.num_uses == 1 and d not in fp.folded and d not in fp.act


BIT_CONST_MIN = 512
"""Elements per partition from which a 32-bit bitwise op with a constant may run on GpSimd
(elementwise._bits_on_gpsimd), its constant tile then filled once before the loops."""


def _plan_bit_consts(em: TileFrame, fp: FoldPlan) -> None:
    """The constants of 32-bit integer bitwise ops over at least BIT_CONST_MIN elements per
    partition: GpSimd has no bitwise ``tensor_scalar``, so if the balance moves such an op there
    it reads a tile of the constant, filled once for the group (group_emit.py)."""
    for op in em.g.ops:
        if not isinstance(op, (T.BitwiseAndOp, T.BitwiseOrOp, T.BitwiseXorOp)) or op in fp.folded:
            continue
        dt = op.result.type.dtype
        if not dt.is_int or dt.bits != 32 or not all(u.type.dtype == dt for u in op.operands):
            continue
        ext = em.ext(op.result)
        if math.prod(ext[d] for d in em.plan.f_dims) < BIT_CONST_MIN:
            continue
        for full, other in (op.operands, reversed(op.operands)):
            k = immediate_of(other)
            if k is not None and immediate_of(full) is None and em.ext(full) == ext:
                fp.bit_consts.setdefault((k, dt.name, tuple(ext)), op.result)
                break
