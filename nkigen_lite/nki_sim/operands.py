"""Operand checks shared by the nki.isa instructions, and the instruction handle they return."""

from __future__ import annotations

import numpy as np

from . import limits
from .enums import engine, psum
from .errors import NkiSimError
from .runtime import KernelRun, current_run
from .storage import as_fp32
from .tensor import NkiTensor


class Instruction:
    """Handle returned by every nisa call (NkiInstruction); dependencies are accepted and ignored."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def depends_on(self, *_others) -> Instruction:
        return self

    def __repr__(self) -> str:
        return f"NkiInstruction({self.name})"


def begin(where: str, name: str = "") -> KernelRun:
    """The running kernel call for an instruction; ``name`` is its optional label (a str)."""
    if not isinstance(name, str):
        raise NkiSimError(
            f"{where}: name= labels the instruction and must be a str, got {type(name).__name__}"
        )
    return current_run(where)


def tensor_arg(x, where: str, role: str) -> NkiTensor:
    """Require a live NkiTensor argument."""
    if not isinstance(x, NkiTensor):
        raise NkiSimError(f"{where}: {role} must be a tensor (NkiTensor), got {type(x).__name__}")
    x.check_live(where)
    return x


def tile_arg(x, where: str, role: str) -> NkiTensor:
    """Require an on-chip (SBUF/PSUM) tensor that a compute engine can access."""
    t = tensor_arg(x, where, role)
    if not t.on_chip:
        raise NkiSimError(
            f"{where}: {role} {t.describe()} is in HBM; compute engines access only SBUF and PSUM "
            "(move it with nisa.dma_copy) [MEM]"
        )
    if t.ndim == 0:
        raise NkiSimError(f"{where}: {role} {t.describe()} has no partition dim")
    _check_partition_start(t, where, role)
    return t


def _check_partition_start(t: NkiTensor, where: str, role: str) -> None:
    n, start, q = t.shape[0], t.partition_start, limits.PARTITION_QUADRANT
    if n > 2 * q:
        ok, allowed = start == 0, "0"
    elif n > q:
        ok, allowed = start in (0, 2 * q), f"0 or {2 * q}"
    else:
        ok, allowed = start % q == 0, f"a multiple of {q}"
    if not ok:
        raise NkiSimError(
            f"{where}: {role} {t.describe()} covers {n} partitions starting at partition {start}; "
            f"an engine access of {n} partitions must start at {allowed} [ARCH-T1]"
        )


def in_psum(t) -> bool:
    return isinstance(t, NkiTensor) and t.buffer is psum


def same_layout(where: str, ref_role: str, ref: NkiTensor, **others: NkiTensor) -> None:
    """Require equal partition counts and equal elements per partition (no broadcast)."""
    for role, t in others.items():
        if t.shape[0] != ref.shape[0] or t.free_size != ref.free_size:
            raise NkiSimError(
                f"{where}: {role} {t.describe()} must match {ref_role} {ref.describe()} in partitions "
                f"({t.shape[0]} vs {ref.shape[0]}) and elements per partition ({t.free_size} vs "
                f"{ref.free_size})"
            )


def same_shape(where: str, ref_role: str, ref: NkiTensor, **others: NkiTensor) -> None:
    """Inputs that pair element by element with ``ref`` have its shape, dim by dim (stricter
    than the documented equal partitions and elements per partition: a permuted or re-ranked
    input is refused rather than paired in some order)."""
    same_layout(where, ref_role, ref, **others)
    for role, t in others.items():
        if tuple(t.shape) != tuple(ref.shape):
            raise NkiSimError(
                f"{where}: {role} {t.describe()} has shape {list(t.shape)} but {ref_role} "
                f"{ref.describe()} has shape {list(ref.shape)}; operands pair element by element "
                "in equal shapes (no permuted or re-ranked dims, no broadcast)"
            )


def same_free_dims(where: str, ref_role: str, ref: NkiTensor, **others: NkiTensor) -> None:
    """The data operand of activation / tensor_copy / tensor_scalar pairs with ``ref`` element
    by element: equal partitions and the same free dims in the same order once size-1 dims are
    dropped (stricter than the documented equal elements per partition: a reshaped or
    permuted input is refused rather than paired through a silent reshape)."""
    same_layout(where, ref_role, ref, **others)
    want = [n for n in tuple(ref.shape)[1:] if n != 1]
    for role, t in others.items():
        if [n for n in tuple(t.shape)[1:] if n != 1] != want:
            raise NkiSimError(
                f"{where}: {role} {t.describe()} has shape {list(t.shape)} but {ref_role} "
                f"{ref.describe()} has shape {list(ref.shape)}; they pair element by element, so "
                "their free dims must be equal (size-1 dims aside; no reshaped or permuted dims)"
            )


def pick_engine(where: str, eng, allowed: tuple[engine, ...], default: engine) -> engine:
    """Resolve the engine= argument (engine.unknown picks the default)."""
    if not isinstance(eng, engine):
        raise NkiSimError(f"{where}: engine must be a nisa.engine member, got {eng!r} [MIG]")
    if eng is engine.unknown:
        return default
    if eng not in allowed:
        names = ", ".join(e.name for e in allowed)
        raise NkiSimError(f"{where}: engine {eng.name} cannot run this instruction (allowed: {names})")
    return eng


def check_gpsimd_access(where: str, eng: engine, **tensors) -> None:
    """GpSimd cannot access PSUM."""
    if eng is not engine.gpsimd:
        return
    for role, t in tensors.items():
        if in_psum(t):
            raise NkiSimError(
                f"{where}: {role} {t.describe()} is in PSUM but the instruction runs on GpSimd, "
                "which cannot access PSUM [ARCH-T2] [ISA]"
            )


def check_one_psum_input(where: str, **inputs) -> None:
    """Vector-engine instructions read at most one input from PSUM."""
    in_p = [role for role, t in inputs.items() if in_psum(t)]
    if len(in_p) > 1:
        raise NkiSimError(
            f"{where}: inputs {' and '.join(in_p)} are both in PSUM; a Vector instruction may read "
            "at most one input from PSUM [ARCH-T1] [ISA]"
        )


def is_scalar(x) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def scalar_or_column(x, partitions: int, where: str, role: str, fp32_only: bool = False):
    """A Python scalar as float32, or a (P, 1) tile read as a float32 (P, 1) column."""
    if is_scalar(x):
        return np.float32(x)
    t = tile_arg(x, where, role)
    if t.shape[0] != partitions or t.free_size != 1:
        raise NkiSimError(f"{where}: {role} {t.describe()} must be a scalar or a ({partitions}, 1) tile")
    if fp32_only and t.dtype.numpy_name != "float32":
        raise NkiSimError(f"{where}: {role} tile must be float32, got {t.dtype.numpy_name} [ISA]")
    return as_fp32(t.read(f"{where} {role}")).reshape(partitions, 1)


def rows(t: NkiTensor, where: str, role: str) -> np.ndarray:
    """Values of an on-chip view as float32 [partitions, elements per partition]."""
    return as_fp32(t.read(f"{where} {role}")).reshape(t.shape[0], -1)
