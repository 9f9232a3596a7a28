"""Dense int32 constants that are affine in their indices are built on chip, not read from HBM.

Folding leaves small index tables as ``tensor.constant`` (the row offsets ``iota(128, 1) * 4096``
of ``np.take(x, ids, axis=1)``, ``take_along_axis``, the top-k gather, MoE routing): lowered as
they are, each is an extra HBM kernel input ``const0``, ... and costs a DMA. Before the fusion
groups are formed, a top-level int32 constant whose values are exactly

    c0 + Σ_d a_d · index_d      (every partial sum inside the int32 range)

and whose users are all ops a fusion group computes is rewritten, for each use, to ``iota`` ops
along the dims with ``a_d ≠ 0``, multiplied by ``a_d`` and added up (plus ``c0``). The consumer group then
computes the values with one GpSimd ``iota`` per tile (sources.py folds the ``· a_d + c0``
into the instruction's pattern step, channel multiplier and offset). Constants read by other
ops (gathers, matmuls, outputs) stay kernel inputs: building them on chip would mean a store and
a load instead of one load.
"""

from __future__ import annotations

import numpy as np

from ...ir.dtypes import int32
from ...ir.graph import Graph, ReturnOp
from ...ir.rewrite import Rewriter
from ...tensor import ops as T
from ...tensor.types import TensorType
from ..match import full, make
from .groups import is_fusible

INT32_MAX = (1 << 31) - 1


def affine_form(arr: np.ndarray) -> tuple[int, tuple[int, ...]] | None:
    """(c0, per-dim coefficients) when ``arr[i] == c0 + Σ a_d · i_d`` exactly and every partial
    sum of that expression fits int32, else None."""
    if arr.size == 0 or arr.ndim == 0:
        return None
    a = arr.astype(np.int64)
    c0 = int(a.reshape(-1)[0])
    coefs = []
    for d, n in enumerate(a.shape):
        if n == 1:
            coefs.append(0)
            continue
        at = [0] * a.ndim
        at[d] = 1
        coefs.append(int(a[tuple(at)]) - c0)
    last = c0 + sum(c * (n - 1) for c, n in zip(coefs, a.shape))
    if int(a.reshape(-1)[-1]) != last:
        return None  # cheap early answer for big tables that are not affine
    expect = np.full(a.shape, c0, np.int64)
    for d, c in enumerate(coefs):
        if c:
            shape = [1] * a.ndim
            shape[d] = a.shape[d]
            expect = expect + c * np.arange(a.shape[d], dtype=np.int64).reshape(shape)
    if not np.array_equal(expect, a):
        return None
    bound = abs(c0) + sum(abs(c) * (n - 1) for c, n in zip(coefs, a.shape))
    if bound > INT32_MAX:
        return None
    return c0, tuple(coefs)


def _onchip_candidate(op) -> tuple[int, tuple[int, ...]] | None:
    v = op.result
    if v.type.dtype is not int32 or not v.has_uses:
        return None
    if any(
        isinstance(u.op, ReturnOp) or u.op.parent is not op.parent or not is_fusible(u.op) for u in v.uses
    ):
        return None
    form = affine_form(np.asarray(op.attrs["value"].array))
    if form is None or not any(form[1]):
        return None  # uniform constants are tensor.full already (canonicalize)
    return form


def _build(rw: Rewriter, c0: int, coefs: tuple[int, ...], t: TensorType):
    """``Σ iota_d · a_d + c0`` of type ``t`` at the rewriter's insertion point."""
    acc = None
    for d, c in enumerate(coefs):
        if not c:
            continue
        term = make(rw, T.IotaOp, [], {"axis": d}, TensorType(t.shape, t.dtype))
        if c != 1:
            term = make(rw, T.MulOp, [term, full(rw, c, t.dtype, t.shape)])
        acc = term if acc is None else make(rw, T.AddOp, [acc, term])
    if c0:
        acc = make(rw, T.AddOp, [acc, full(rw, c0, t.dtype, t.shape)])
    return acc


def build_affine_constants(graph: Graph) -> int:
    """Rewrite the affine int32 constants of ``graph``'s top block (see module docstring) in
    place, one chain of ops per use, right before the user (so each consumer's fusion group
    computes its own copy instead of reading another group's through HBM); returns how many
    constants were rewritten."""
    rw = Rewriter()
    n = 0
    for op in list(graph.body):
        if not isinstance(op, T.ConstantOp):
            continue
        form = _onchip_candidate(op)
        if form is None:
            continue
        for use in list(op.result.uses):
            rw.set_insertion_point_before(use.op)
            rw.loc = op.loc
            use.op.set_operand(use.index, _build(rw, *form, op.result.type))
        rw.erase_op(op)
        n += 1
    return n
