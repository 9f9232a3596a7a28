"""Which kernel lowers a ``tensor.causal_attention``: causal_attention.py's up to
``causal_attention_long.KEY_BLOCK`` keys (a query tile's scores in PSUM), causal_attention_long.py's
online softmax over key blocks beyond. Shapes neither takes are refused with one ``BuildError``
naming the op, the shapes and the rule broken. Also the ``supported`` test
canonical/causal_attention.py asks before forming the op."""

from __future__ import annotations

from ...ir.errors import BuildError
from ...nki.target import TRN2
from ...tensor.composites_causal_attention import CausalAttentionOp
from . import causal_attention as short
from . import causal_attention_long as long
from .context import LowerContext
from .rules import item_rule


def is_long(k_shape) -> bool:
    """More keys than one block: the online-softmax kernel's."""
    return len(k_shape) >= 2 and k_shape[-2] > long.KEY_BLOCK


def refusal(q_shape, k_shape, v_shape, dtype, mask_value, target=TRN2) -> str | None:
    """Why neither kernel takes the shapes (the rule broken, with the numbers), or None."""
    if is_long(k_shape):
        return long.long_refusal(q_shape, k_shape, v_shape, dtype, mask_value, target)
    if short.supported(q_shape, k_shape, v_shape, dtype, mask_value):
        return None
    return (
        f"the kernel takes q (..., H, M, D), k (..., G, N, D), v (..., G, N, Dv) of one dtype "
        f"({'/'.join(short.DTYPES)}), equal leading dims, G dividing H, {short.MIN_KEYS} <= M == N, "
        f"D <= {short.MAX_HEAD_DIM}, Dv <= {short.MAX_VALUE_DIM} and mask_value <= {short.SKIP_MASK}"
    )


def supported(q_shape, k_shape, v_shape, dtype, mask_value) -> bool:
    """Shapes one of the kernels handles on trn2 (``refusal`` gives none)."""
    return refusal(q_shape, k_shape, v_shape, dtype, mask_value) is None


@item_rule(CausalAttentionOp)
def lower_causal_attention(ctx: LowerContext, op) -> None:
    q, k, v = op.operands
    why = refusal(q.type.shape, k.type.shape, v.type.shape, q.dtype, op.attrs["mask_value"], ctx.target)
    if why is None and not (q.dtype is k.dtype is v.dtype):
        why = "operand dtypes differ"
    if why is not None:
        shapes = ", ".join(f"{n} {x.type}" for n, x in zip("qkv", op.operands))
        raise BuildError(f"tensor.causal_attention ({shapes}, mask_value {op.attrs['mask_value']}): {why}")
    (long.LongEmitter if is_long(k.type.shape) else short._Emitter)(ctx, op).emit()
