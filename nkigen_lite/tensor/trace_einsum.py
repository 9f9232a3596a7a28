"""np.einsum on traced arrays, for the contractions that map onto a (batched) matmul:

- one operand: a transpose and a sum over the letters the output drops (``"ij->ji"``,
  ``"ij->j"``, ``"ij->"``);
- two operands: letters in both operands and the output are batch dims, letters in both
  operands only are contracted, letters of one operand in the output are its free dims, letters
  of one operand only are summed out first. The operands are transposed to ``(batch, free,
  contracted)`` / ``(batch, contracted, free)``, reshaped to 3-D, multiplied with one
  ``tensor.matmul`` and the result reshaped and transposed to the output's letter order.

Repeated letters within one operand (diagonals), ``...`` and more than two operands are
TraceErrors naming the subscripts.
"""

from __future__ import annotations

import math

import numpy as np

from .trace_array import TracedArray
from .trace_functions import implements, require, value


def _parse(subscripts: str, n_ops: int, w: str):
    s = subscripts.replace(" ", "")
    require("." not in s, w, f"'...' in subscripts {subscripts!r} is not supported when tracing")
    if "->" in s:
        lhs, out = s.split("->")
    else:
        lhs = s
        letters = lhs.replace(",", "")
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    ins = lhs.split(",")
    require(len(ins) == n_ops, w, f"{subscripts!r} names {len(ins)} operands, got {n_ops}")
    for term in (*ins, out):
        require(term.isalpha() or term == "", w, f"subscripts {subscripts!r} must be letters")
        require(len(set(term)) == len(term), w, f"repeated letter in {term!r} (a diagonal) is not supported")
    require(set(out) <= set("".join(ins)), w, f"output letters {out!r} do not all appear in the inputs")
    return ins, out


def _sum_out(b, v, term: str, keep: set):
    """Sum ``v`` (letters ``term``) over the letters not in ``keep``; returns (value, term)."""
    drop = [i for i, c in enumerate(term) if c not in keep]
    if not drop:
        return v, term
    return b.sum(v, axis=tuple(drop)), "".join(c for c in term if c in keep)


@implements(np.einsum)
def einsum(b, subscripts, *operands, out=None, dtype=None, order="K", casting="safe", optimize=False):
    w = "numpy.einsum"
    require(out is None and dtype is None, w, "out= and dtype= are not supported when tracing")
    require(order == "K" and casting == "safe", w, "order= and casting= are not supported when tracing")
    # optimize= only picks NumPy's contraction order; two operands have one order
    require(optimize in (False, True, "greedy", "optimal"), w, f"optimize={optimize!r} is not one of NumPy's")
    require(isinstance(subscripts, str), w, "the first argument must be a subscripts string")
    require(len(operands) in (1, 2), w, f"{len(operands)} operands: only one or two are supported")
    vals = [value(b, x, w) for x in operands]
    ins, out = _parse(subscripts, len(vals), w)
    sizes: dict[str, int] = {}
    for v, term in zip(vals, ins):
        require(v.ndim == len(term), w, f"operand of shape {v.shape} does not match subscripts {term!r}")
        for c, n in zip(term, v.shape):
            require(sizes.setdefault(c, n) == n, w, f"letter {c!r} has sizes {sizes[c]} and {n}")
    if len(vals) == 1:
        v, term = _sum_out(b, vals[0], ins[0], set(out))
        return TracedArray(b.transpose(v, [term.index(c) for c in out]))
    (va, vb), (ta, tb) = vals, ins
    va, ta = _sum_out(b, va, ta, set(tb) | set(out))
    vb, tb = _sum_out(b, vb, tb, set(ta) | set(out))
    batch = [c for c in ta if c in tb and c in out]
    contr = [c for c in ta if c in tb and c not in out]
    free_a = [c for c in ta if c not in tb]
    free_b = [c for c in tb if c not in ta]

    def size(letters):
        return math.prod(sizes[c] for c in letters)

    a3 = b.reshape(
        b.transpose(va, [ta.index(c) for c in batch + free_a + contr]),
        (size(batch), size(free_a), size(contr)),
    )
    b3 = b.reshape(
        b.transpose(vb, [tb.index(c) for c in batch + contr + free_b]),
        (size(batch), size(contr), size(free_b)),
    )
    r = b.matmul(a3, b3)
    have = batch + free_a + free_b
    r = b.reshape(r, tuple(sizes[c] for c in have))
    return TracedArray(b.transpose(r, [have.index(c) for c in out]))
