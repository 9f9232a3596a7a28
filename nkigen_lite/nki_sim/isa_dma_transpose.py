"""The simulated ``nisa.dma_transpose(dst, src, axes=None, dge_mode=..., oob_mode=..., name=)``
(NKI 0.6 signature, destination first): ``dst = np.transpose(src, axes)`` by the DMA engines,
bit-exact. The simulator checks the documented hardware-DGE rules, the stricter one where two
sources disagree (as nkigen_lite/nki/verify_dma_transpose.py): dst SBUF, src HBM or SBUF, one
2-byte dtype, axes the documented one of the rank ((1, 0), (2, 1, 0), (3, 1, 2, 0)), dst shape
the permuted src shape, ``src.shape[0] == 16``, ``src.shape[-1] == 128`` (a multiple of 128
and at most 128), a contiguous innermost src dim; ``dge_mode`` unknown or hwdge [ISA] [RN]."""

from __future__ import annotations

import numpy as np

from . import enums as E
from .enums import psum, sbuf
from .errors import NkiSimError
from .operands import Instruction, begin, tensor_arg

AXES = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}


def dma_transpose(
    dst, src, axes=None, priority=None, dge_mode=E.dge_mode.unknown, oob_mode=E.oob_mode.error, name=""
):
    """dst (SBUF) = src (HBM or SBUF) with its dims permuted by ``axes`` (module docstring)."""
    where = "nisa.dma_transpose"
    run = begin(where, name)
    dst = tensor_arg(dst, where, "dst")
    src = tensor_arg(src, where, "src")
    if priority is not None:
        raise NkiSimError(f"{where}: priority= is NeuronCore-v4 only; the simulator models trn2 [ISA]")
    if dge_mode not in (E.dge_mode.unknown, E.dge_mode.hwdge):
        raise NkiSimError(
            f"{where}: dge_mode={dge_mode!r}; a direct DMA transpose takes unknown or hwdge [ISA]"
        )
    if oob_mode is not E.oob_mode.error:
        raise NkiSimError(
            f"{where}: oob_mode={oob_mode!r}; only oob_mode.error applies to a direct transpose [ISA]"
        )
    if dst.buffer is not sbuf:
        raise NkiSimError(f"{where}: dst {dst.describe()} must be in SBUF [ISA]")
    if src.buffer is psum:
        raise NkiSimError(f"{where}: src {src.describe()} is in PSUM; the source is HBM or SBUF [ISA]")
    if dst.dtype is not src.dtype or src.dtype.itemsize != 2:
        raise NkiSimError(
            f"{where}: src ({src.dtype.numpy_name}) and dst ({dst.dtype.numpy_name}) "
            "must be one 2-byte dtype [ISA]"
        )
    want = AXES.get(src.ndim)
    if want is None or (axes is not None and tuple(axes) != want):
        raise NkiSimError(
            f"{where}: axes={axes} for a {src.ndim}-D src; supported: (1, 0), (2, 1, 0), (3, 1, 2, 0) [ISA]"
        )
    permuted = tuple(src.shape[a] for a in want)
    if tuple(dst.shape) != permuted:
        raise NkiSimError(
            f"{where}: dst shape {list(dst.shape)} must be the permuted src shape {list(permuted)} [RN]"
        )
    if src.shape[0] != 16 or src.shape[-1] != 128:
        raise NkiSimError(
            f"{where}: src shape {list(src.shape)}; a hardware-DGE transpose needs src.shape[0] == 16 and "
            "src.shape[-1] a multiple of 128 that is at most 128 [ISA] [RN]"
        )
    if src.strides[-1] != 1:
        raise NkiSimError(f"{where}: src innermost stride {src.strides[-1]}; it must be contiguous")
    dst.write(np.transpose(src.read(f"{where} src"), want), where)
    run.count_dma(dst.size * dst.dtype.itemsize)
    return Instruction(where)
