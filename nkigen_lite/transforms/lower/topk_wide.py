"""fp32 topk with k > 8 on the native path (topk.py), exact for every input: keys with a free
sentinel, and a second selection that places the values the keys merge.

``k > 8`` replaces taken elements by ``-inf`` between max8 rounds, so the keys must lie above
``-inf``, and max8 / find_index8 / match_replace8 refuse NaN. fp32 keys therefore merge two
pairs of values:

- the *main* keys ``where(x != x, +inf, max(x, -FLT_MAX))``: NaN and ``+inf`` both become
  ``+inf`` (the *hi* group), ``-FLT_MAX`` and ``-inf`` both ``-FLT_MAX`` (the *lo* group), every
  other value is its own key. The order of the keys is the order of the values except inside the
  two groups, so the top k of the keys holds the right *number* of hi slots (``c_hi``, first) and
  of lo slots (``c_lo``, last), and the right values and indices everywhere between;
- the *code* keys (``special_codes``): NaN 4, ``+inf`` 3, ``-FLT_MAX`` 2, ``-inf`` 1, anything
  else 0. Their top k by the same rounds (ties to the lower index, as for the main keys) is
  ``S`` = the hi group in its true order (NaN by index, then ``+inf`` by index), then the lo
  group in its true order (``-FLT_MAX`` by index, then ``-inf`` by index).

Slot ``i`` of the hi group takes ``S[i]``; slot ``i`` of the lo group takes ``S[i - n_mid]``
(``n_mid`` the slots between the groups: the lo group starts in ``S`` right after the ``c_hi``
hi entries), picked by a one-hot compare over the k slots (``fix_up``). A code gives the value
(NaN, ``+inf``, ``-FLT_MAX``, ``-inf``) and ``S`` the index. Both selections reuse topk.py's
chunks, folding and merge; the codes double the top-8 passes.
"""

from __future__ import annotations

from ...ir.dtypes import float32, uint8
from .topk_merge import NEG_FLT_MAX, _tile

WIDE_BYTES = 9  # per element besides the keys: the NaN mask (u8), the clamped values, the codes (fp32)
NAN_CODE, INF_CODE, MAX_CODE, NEG_INF_CODE = 4.0, 3.0, 2.0, 1.0


def wide_mode(k: int, dt, target) -> bool:
    """Whether topk(k) of ``dt`` takes this module's two selections (fp32, more than one round)."""
    return dt.name == "f32" and k > target.top8_width


def wide_keys(ctx, tile, p: int, size: int):
    """(main keys, codes) of the fp32 ``tile`` (p, size), both fp32 and NaN-free (module
    docstring). The NaN mask and the codes' sums run on GpSimd, beside VectorE's passes."""
    b = ctx.b
    nan = b.alloc((p, size), uint8, "sbuf", name="nan_mask")
    b.tensor_tensor(dst=nan, data1=tile, data2=tile, op="not_equal", engine="gpsimd")
    clamped = b.alloc((p, size), float32, "sbuf", name="clamped")
    # max's NaN rule is undocumented: whatever it gives at a NaN, the select overwrites it
    b.tensor_scalar(dst=clamped, data=tile, op0="maximum", operand0=NEG_FLT_MAX)
    keys = b.alloc((p, size), float32, "sbuf", name="keys")
    b.select(dst=keys, predicate=nan, on_true=clamped, on_false=float("inf"), reverse_pred=True)
    codes = b.alloc((p, size), float32, "sbuf", name="codes")
    # hi: 3 where the key is +inf (+inf and NaN), plus the NaN mask: NaN 4, +inf 3
    b.tensor_scalar(
        dst=codes, data=keys, op0="equal", operand0=float("inf"), op1="multiply", operand1=INF_CODE
    )
    b.tensor_tensor(dst=codes, data1=codes, data2=nan, op="add", engine="gpsimd")
    # lo: (key == -FLT_MAX) + (x == -FLT_MAX): -FLT_MAX 2, -inf 1
    lo = clamped  # the clamped values are dead once the keys are written
    b.tensor_scalar(dst=lo, data=keys, op0="equal", operand0=NEG_FLT_MAX)
    b.tensor_tensor(dst=codes, data1=codes, data2=lo, op="add", engine="gpsimd")
    b.tensor_scalar(dst=lo, data=tile, op0="equal", operand0=NEG_FLT_MAX)
    b.tensor_tensor(dst=codes, data1=codes, data2=lo, op="add", engine="gpsimd")
    return keys, codes


def fix_up(ctx, mv, mi, sv, si, ov, oi, p: int, k: int) -> None:
    """``ov`` (p, k) fp32 values and ``oi`` (p, k) indices (int32 or fp32) of the top k, from the
    merged main keys ``mv`` / indices ``mi`` and the merged codes ``sv`` / indices ``si`` (all
    (p, k) fp32; module docstring)."""
    b = ctx.b
    hi = b.alloc((p, k), float32, "sbuf", name="hi_slot")
    lo = b.alloc((p, k), float32, "sbuf", name="lo_slot")
    b.tensor_scalar(dst=hi, data=mv, op0="equal", operand0=float("inf"))
    b.tensor_scalar(dst=lo, data=mv, op0="equal", operand0=NEG_FLT_MAX)
    mid = b.alloc((p, 1), float32, "sbuf", name="mid_slots")  # k - n_mid = hi + lo slots
    special = b.alloc((p, k), float32, "sbuf", name="special_slot")
    b.tensor_tensor(dst=special, data1=hi, data2=lo, op="add")
    b.tensor_reduce(dst=mid, op="add", data=special, axis=(1,))
    b.tensor_scalar(dst=mid, data=mid, op0="subtract", operand0=float(k), op1="multiply", operand1=-1.0)
    # the slot of S each slot reads: i - n_mid in the lo group, i elsewhere
    src = b.alloc((p, k, 1), float32, "sbuf", name="s_slot")
    b.tensor_scalar(dst=src, data=lo, op0="multiply", operand0=_tile(mid, p, (0, 1, 1)))
    slot = b.alloc((p, k, 1), float32, "sbuf", name="slot")
    b.iota(dst=slot, pattern=[[1, k], [0, 1]])
    b.tensor_tensor(dst=src, data1=slot, data2=src, op="subtract")
    cols = b.alloc((p, 1, k), float32, "sbuf", name="s_col")
    b.iota(dst=cols, pattern=[[1, k]])
    hot = b.alloc((p, k, k), float32, "sbuf", name="s_onehot")
    b.tensor_tensor(
        dst=hot,
        data1=_tile(cols, p, (0, k, 0), (0, k, 1)),
        data2=_tile(src, p, (0, k, 1), (0, k, 0)),
        op="equal",
    )
    prod = b.alloc((p, k, k), float32, "sbuf", name="s_prod")
    row = b.alloc((p, 1, k), float32, "sbuf", name="s_row")
    code = b.alloc((p, k), float32, "sbuf", name="s_code")
    index = b.alloc((p, k), float32, "sbuf", name="s_index")
    for s, picked in ((sv, code), (si, index)):
        b.tensor_copy(dst=row, src=s)
        b.tensor_tensor(dst=prod, data1=hot, data2=_tile(row, p, (0, k, 0), (0, k, 1)), op="multiply")
        b.tensor_reduce(dst=picked, op="add", data=prod, axis=(2,))
    # index: mi + special * (S's index - mi), exact (every term an integer below 2**24)
    diff = b.alloc((p, k), float32, "sbuf", name="s_diff")
    b.tensor_tensor(dst=diff, data1=index, data2=mi, op="subtract")
    b.tensor_tensor(dst=diff, data1=diff, data2=special, op="multiply")
    b.tensor_tensor(dst=oi, data1=mi, data2=diff, op="add")
    flag = b.alloc((p, k), uint8, "sbuf", name="code_is")
    vals = b.alloc((p, k), float32, "sbuf", name="wide_v")
    b.tensor_tensor(dst=code, data1=code, data2=special, op="multiply")  # 0 outside the groups
    b.tensor_scalar(dst=flag, data=code, op0="equal", operand0=NEG_INF_CODE)
    b.select(dst=vals, predicate=flag, on_true=mv, on_false=float("-inf"), reverse_pred=True)
    b.tensor_scalar(dst=flag, data=code, op0="equal", operand0=NAN_CODE)
    b.select(dst=ov, predicate=flag, on_true=vals, on_false=float("nan"), reverse_pred=True)
