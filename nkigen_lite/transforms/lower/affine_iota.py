"""An int32 chain ``Σ iota_d · a_d + c`` of a fusion group becomes one GpSimd ``iota`` per tile.

Computed op by op, ``iota(128, 1) * 4096`` (a gather's row offsets, built on chip by
affine_constants.py) is an ``iota`` and a multiply per tile, and ``+ c`` one more. ``nki.iota``
computes ``offset + channel_multiplier·p + Σ step·f`` in int32 itself, so the chain is one
instruction: a coefficient of the partition dim goes into the channel multiplier, one of a
free dim into that dim's pattern step, and ``c`` plus ``a_d`` times the instance's offsets into
the offset. Matched chains: int32 ``add`` / ``subtract`` of such chains, ``multiply`` by an int
immediate, int immediates and int32 iotas of the group, every inner value made in the group
and read only by the chain, every iota of the root's shape. The values are the same: the
chain's int32 values are the constant values the instruction writes.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ir.dtypes import int32
from ...ir.value import Value
from ...nki.types import Affine
from ...tensor import ops as T
from .frame import TileFrame, immediate_of

INT32_MAX = (1 << 31) - 1


@dataclass
class AffineIota:
    """The root op's value as ``c + Σ coefs[d] · index_d`` over the group's domain dims."""

    c: int
    coefs: dict  # domain dim -> coefficient
    iotas: tuple  # the iota values (their levels bound the instruction's level)
    folded: tuple  # the inner ops the instruction replaces


def _form(em: TileFrame, v: Value, shape, folded: list, iotas: list):
    """(c, coefs) of ``v`` or None; appends the inner ops and iotas it uses."""
    k = immediate_of(v)
    if k is not None:
        return (k, {}) if isinstance(k, int) and abs(k) <= INT32_MAX else None
    op = v.defining_op
    if (
        op not in em.members
        or v in em.keep
        or v.num_uses != 1
        or v.type.dtype is not int32
        or tuple(v.type.shape) != shape
    ):
        return None
    if isinstance(op, T.IotaOp):
        folded.append(op)
        iotas.append(v)
        return 0, {op.attrs["axis"] + len(em.plan.domain) - v.type.rank: 1}
    parts = _binary_form(em, op, shape, folded, iotas)
    if parts is not None:
        folded.append(op)
    return parts


def _binary_form(em: TileFrame, op, shape, folded: list, iotas: list):
    if not isinstance(op, (T.AddOp, T.SubOp, T.MulOp)):
        return None
    x, y = op.operands
    if isinstance(op, T.MulOp):
        kx, ky = immediate_of(x), immediate_of(y)
        k, other = (kx, y) if kx is not None else (ky, x)
        if not isinstance(k, int):
            return None
        f = _form(em, other, shape, folded, iotas)
        if f is None:
            return None
        return f[0] * k, {d: a * k for d, a in f[1].items()}
    fx = _form(em, x, shape, folded, iotas)
    fy = _form(em, y, shape, folded, iotas) if fx is not None else None
    if fy is None:
        return None
    s = -1 if isinstance(op, T.SubOp) else 1
    coefs = dict(fx[1])
    for d, a in fy[1].items():
        coefs[d] = coefs.get(d, 0) + s * a
    return fx[0] + s * fy[0], coefs


def match_affine_iota(em: TileFrame, op) -> AffineIota | None:
    """The one-instruction form of int32 add / subtract / multiply ``op``, else None."""
    v = op.result
    if (
        not isinstance(op, (T.AddOp, T.SubOp, T.MulOp))
        or v.type.dtype is not int32
        or em.plan.split is not None
    ):
        return None
    folded: list = []
    iotas: list = []
    f = _binary_form(em, op, tuple(v.type.shape), folded, iotas)
    if f is None or not iotas:
        return None
    c, coefs = f
    coefs = {d: a for d, a in sorted(coefs.items()) if a}
    plan = em.plan
    p_moving = [d for d in coefs if d in plan.p_dims]
    p_wide = [d for d in plan.p_dims if plan.domain[d] > 1]
    if p_moving and p_wide != p_moving:
        return None  # the partition index is not one domain dim: not one channel multiplier
    if len(p_moving) > 1 or any(
        d not in plan.p_dims and d not in plan.f_dims and d not in plan.i_dims for d in coefs
    ):
        return None
    bound = abs(c) + sum(abs(a) * (plan.domain[d] - 1) for d, a in coefs.items())
    if bound > INT32_MAX or any(abs(a) > INT32_MAX for a in coefs.values()):
        return None  # the chain's own int32 arithmetic would wrap: keep it op by op
    return AffineIota(c, coefs, tuple(iotas), tuple(folded))


def plan_affine_iotas(em: TileFrame, fp) -> None:
    """Record the group's affine iota chains in the fold plan (``fp.iotas``) and fold their
    inner ops (the longest chain first: a chain's inner ops are private to it)."""
    done: set = set(fp.folded)
    for op in reversed(em.g.ops):
        if op in done:
            continue
        spec = match_affine_iota(em, op)
        if spec is None or any(f in done for f in spec.folded):
            continue
        fp.iotas[op] = spec
        fp.folded.update(spec.folded)
        done.update(spec.folded)
        done.add(op)


def emit_affine_iota(em: TileFrame, op, inst) -> None:
    """One ``iota`` writing the chain's values for this instance."""
    spec: AffineIota = em.fold.iotas[op]
    plan = em.plan
    v = op.result
    em.new_tile(v, inst)
    dst = em.access(v, inst)
    steps = [0] * len(dst.dims[1:])
    cm = 0
    offset = Affine.of(spec.c)
    for d, a in spec.coefs.items():
        offset = offset + Affine.of(inst.offsets[d]) * a
        if d in plan.f_dims:
            steps[plan.f_dims.index(d)] = a
        elif d in plan.p_dims:
            cm = a
    free = [s.size for s in dst.dims[1:]]
    em.b.iota(dst=dst, pattern=[[s, n] for s, n in zip(steps, free)], offset=offset, channel_multiplier=cm)
