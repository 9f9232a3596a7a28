"""A value computed from one NKI op, remembered on the op while its attributes and operands stay
the same objects (the search passes of the lowering cost and schedule the same instructions
again and again: compile time)."""

from __future__ import annotations


def remembered(op, key: str, compute, tag=None):
    """``compute()`` for ``op``, kept in ``op.__dict__[key]`` and returned again while the op's
    attrs, its operands and ``tag`` (compared by identity) are unchanged."""
    memo = getattr(op, "__dict__", None)
    operands = op._operands
    if memo is not None:
        hit = memo.get(key)
        if (
            hit is not None
            and hit[0] is tag
            and hit[1] is op.attrs
            and len(hit[2]) == len(operands)
            and all(a is b for a, b in zip(hit[2], operands))
        ):
            return hit[3]
    out = compute()
    if memo is not None:  # the operands held: no other value takes their identities
        memo[key] = (tag, op.attrs, tuple(operands), out)
    return out
