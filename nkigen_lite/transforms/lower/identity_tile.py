"""The [128, 128] identity tile that the attention kernels' TensorE matmuls read as their
stationary operand (mask and sink matmuls accumulated into a PSUM bank)."""

from __future__ import annotations

from ...nki.types import access_of as _acc

P = 128  # partitions


def build_identity(b, dt, name: str = "identity"):
    """Allocate a [P, P] SBUF tile of dtype ``dt`` and fill it with the identity on GpSimd: a
    memset to 1, then an affine_select that keeps the entries where partition p equals column j
    and writes 0 elsewhere. Returns the tile."""
    t = b.alloc((P, P), dt, name=name)
    w = _acc(t, (0, P), (0, P))
    b.memset(dst=w, value=1.0, engine="gpsimd")
    b.affine_select(
        dst=w,
        pattern=[[-1, P]],
        channel_multiplier=1,
        on_true_tile=w,
        on_false_value=0.0,
        cmp_op="equal",
    )
    return t
