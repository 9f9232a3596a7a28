"""How the data operand of a single-input elementwise NKI instruction (activation,
tensor_copy, tensor_scalar) pairs with its destination: the one rule both the verifier
(verify_ops.py) and the interpreter (interpret_compute.py) apply.

NKI documents "the same partitions and the same number of elements per partition" (NKI 0.6
``nki.isa.activation`` / ``tensor_copy`` / ``tensor_scalar``); the hardware walks each access
pattern in its own order, so two different free shapes of one element count would pair
elements through a silent reshape. The rule here is stricter than the chip: the same
partitions and the same free dims in the same order once size-1 dims are dropped (a size-1
dim does not change the pairing; [P, 6] against [P, 2, 3] and [P, 2, 3] against [P, 3, 2]
are refused).
"""

from __future__ import annotations

PAIRED_SINGLE_INPUT = {"nki.activation": "data", "nki.tensor_copy": "src", "nki.tensor_scalar": "data"}
"""Instruction -> its data operand, paired element by element with ``dst``."""


def free_dims(shape) -> list[int]:
    """The free dims of an access shape (partition dim first) without its size-1 dims."""
    return [int(n) for n in tuple(shape)[1:] if n != 1]


def pairing_error(op_name: str, name: str, shape, dst_shape) -> str | None:
    """The message naming ``op_name``, ``name`` / ``dst`` and the rule when the two access
    shapes do not pair element by element (None when they do)."""
    shape, dst_shape = tuple(shape), tuple(dst_shape)
    if shape[:1] == dst_shape[:1] and free_dims(shape) == free_dims(dst_shape):
        return None
    short = op_name.removeprefix("nki.")
    return (
        f"{name} access shape {list(shape)} does not pair with dst access shape "
        f"{list(dst_shape)}: {short} pairs {name} and dst element by element, so they need the "
        "same partitions and the same free dims in the same order (size-1 dims aside; no "
        "reshaped or permuted dims, even with equal element counts)"
    )
