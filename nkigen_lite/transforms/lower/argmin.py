"""argmin on the native top-8 path, in one pass: the top-1 index of the negated values.

``np.argmin(x) == np.argmax(-x)`` exactly for every dtype the top-8 path takes: fp32 negation is
exact (bf16 / fp16 / 8- and 16-bit integers are widened to fp32 first, also exactly), equal
values stay equal (ties keep the lower index; ``-0.0 == 0.0``), ``-inf`` becomes the largest
key, and a NaN stays a NaN, which the NaN rule of topk_nan.py makes win as NumPy's argmin does.
So tensor.argmin is lowered by topk.py's kernel with the keys ``-x``: per loaded segment one
ScalarE activation (copy, scale -1) writes the fp32 keys (beside GpSimd's NaN mask of the
segment, which reads ``x``), and max8 / find_index8 read them; the input is read once, as for
argmax. Before, argmin was the two-pass expansion ``first_extreme`` (the minimum, then the lowest
index holding it), which reads the input twice.

decompose keeps an argmin this path takes (capabilities.py asks ``argmin_refusal``) and expands
the others.
"""

from __future__ import annotations

import math

from ...ir.errors import BuildError
from ...tensor.composites_index import ArgminOp
from .context import LowerContext
from .rules import item_rule
from .topk import _emit, _rows_view, topk_refusal
from .views import copy_home


def argmin_refusal(op, target) -> str | None:
    """Why the native path cannot take ``op`` (a tensor.argmin), or None."""
    x = op.operand(0).type
    if x.rank == 0:
        return "a 0-d operand has no axis"
    return topk_refusal(x, 1, op.attrs["axis"] % x.rank, target, negate=True)


@item_rule(ArgminOp)
def lower_argmin(ctx: LowerContext, op: ArgminOp) -> None:
    reason = argmin_refusal(op, ctx.target)
    if reason is not None:  # decompose expands the ops this path does not take
        raise BuildError(f"lowering: {op.name} has no native lowering here ({reason}); decompose expands it")
    x = op.operand(0)
    shape, axis = x.type.shape, op.attrs["axis"] % x.type.rank
    n = shape[axis]
    rows = math.prod(shape) // n
    perm = tuple(d for d in range(len(shape)) if d != axis) + (axis,)
    src, _ = _rows_view(ctx, ctx.home(x), perm, rows, n, copy_in=True)
    home = ctx.home_for_store(op.result)
    out = home.reshape((rows, 1))  # the result's elements are the rows, in order
    back = None
    if out is None:
        out = ctx.alloc_hbm((rows, 1), op.result.type.dtype)
        back = out.reshape(tuple(op.result.type.shape))
    _emit(ctx, src, None, out, n, 1, x.type.dtype, values=False, negate=True)
    if back is not None:
        copy_home(ctx, back, ctx.home(op.result))
