"""State of one simulated kernel call: live on-chip memory, accumulator registers, statistics.

Liveness model: an SBUF/PSUM tensor is live from ``nl.ndarray()`` until the last Python
reference to it (or to any view of it) is dropped, or the kernel returns. Re-binding a name in
a loop therefore keeps the old and the new tile live for a moment (like double buffering), and
``del t`` releases a tile explicitly. Each PSUM tensor occupies one whole bank, because PSUM
tensors start on a bank boundary [MIG].
"""

from __future__ import annotations

import collections
import dataclasses
import threading
import weakref

import numpy as np

from . import limits
from .enums import Buffer, psum, sbuf
from .errors import NkiSimError


@dataclasses.dataclass(frozen=True)
class SimStats:
    """Counts from one simulated kernel call (per-partition byte figures for on-chip memory)."""

    instructions: dict[str, int]
    dma_count: int
    dma_bytes: int
    peak_sbuf_bytes: int
    peak_psum_banks: int

    @property
    def instructions_total(self) -> int:
        return sum(self.instructions.values())


class Accumulators:
    """Per-partition fp32 accumulator registers of one engine (fused reductions).

    ``reset`` sets the registers to the reduce op's identity, ``reduce`` folds a row result in
    (the registers must hold a value), ``reset_reduce`` stores the row result, ``idle`` leaves
    them alone. Reading registers that were never set raises.
    """

    def __init__(self, engine_name: str):
        self.engine_name = engine_name
        self.values = np.zeros(limits.PARTITIONS, np.float32)
        self.valid = np.zeros(limits.PARTITIONS, bool)

    def update(self, cmd, op, row_result: np.ndarray, p0: int, where: str) -> None:
        """Apply a reduce command for partitions p0.. with per-partition results row_result."""
        rows = slice(p0, p0 + row_result.shape[0])
        if cmd.name == "idle":
            return
        if cmd.name == "reset":
            self.values[rows] = np.float32(
                0.0 if op.name == "add" else (-np.inf if op.name == "maximum" else np.inf)
            )
        elif cmd.name == "reset_reduce":
            self.values[rows] = row_result.astype(np.float32)
        elif cmd.name == "reduce":
            self._require_valid(rows, where)
            self.values[rows] = op.apply(self.values[rows], row_result.astype(np.float32))
        else:
            raise NkiSimError(f"{where}: reduce_cmd={cmd.name} is not simulated")
        self.valid[rows] = True

    def read(self, p0: int, count: int, where: str) -> np.ndarray:
        """Register values of partitions p0..p0+count-1 (must have been set)."""
        rows = slice(p0, p0 + count)
        self._require_valid(rows, where)
        return self.values[rows].copy()

    def _require_valid(self, rows: slice, where: str) -> None:
        if not self.valid[rows].all():
            raise NkiSimError(
                f"{where}: {self.engine_name} engine accumulator registers of partitions "
                f"{rows.start}..{rows.stop - 1} were never reset (use reduce_cmd=reset_reduce)"
            )


class KernelRun:
    """Everything one kernel call owns while it runs."""

    def __init__(self, kernel_name: str):
        self.kernel_name = kernel_name
        self.active = True
        self._live: dict[int, tuple[Buffer, int, str]] = {}
        self._next_key = 0
        self.sbuf_bytes = 0
        self.psum_banks = 0
        self.peak_sbuf_bytes = 0
        self.peak_psum_banks = 0
        self.instructions: collections.Counter[str] = collections.Counter()
        self.dma_count = 0
        self.dma_bytes = 0
        self.scalar_acc = Accumulators("scalar")
        self.vector_acc = Accumulators("vector")

    def allocate(self, storage, where: str) -> None:
        """Account an on-chip allocation, raising if SBUF or PSUM capacity would be exceeded."""
        buf = storage.buffer
        if buf is sbuf:
            need = self.sbuf_bytes + storage.bytes_per_partition
            if need > limits.SBUF_BYTES_PER_PARTITION:
                raise NkiSimError(
                    f"{where}: SBUF capacity exceeded allocating {storage.label()}: live SBUF "
                    f"tensors would need {need} B per partition > {limits.SBUF_BYTES_PER_PARTITION} B "
                    f"[KLR]; live: {self._live_summary(sbuf)} (a tensor stays live until its last "
                    "reference is dropped; `del` releases it)"
                )
            self.sbuf_bytes = need
            self.peak_sbuf_bytes = max(self.peak_sbuf_bytes, need)
            amount = storage.bytes_per_partition
        elif buf is psum:
            if self.psum_banks + 1 > limits.PSUM_BANKS:
                raise NkiSimError(
                    f"{where}: PSUM capacity exceeded allocating {storage.label()}: each PSUM tensor "
                    f"takes one {limits.PSUM_BANK_BYTES} B bank and all {limits.PSUM_BANKS} banks are "
                    f"live [ARCH-T2] [MIG]; live: {self._live_summary(psum)}"
                )
            self.psum_banks += 1
            self.peak_psum_banks = max(self.peak_psum_banks, self.psum_banks)
            amount = 1
        else:
            return
        key = self._next_key
        self._next_key += 1
        self._live[key] = (buf, amount, storage.label())
        weakref.finalize(storage, self._release, key)

    def _release(self, key: int) -> None:
        entry = self._live.pop(key, None)
        if entry is None:
            return
        buf, amount, _ = entry
        if buf is sbuf:
            self.sbuf_bytes -= amount
        else:
            self.psum_banks -= amount

    def _live_summary(self, buf: Buffer) -> str:
        labels = [label for b, _, label in self._live.values() if b is buf]
        shown = "; ".join(labels[:8]) if labels else "none"
        return shown + (f"; ... ({len(labels)} tensors)" if len(labels) > 8 else "")

    def count(self, engine_name: str) -> None:
        """Record one instruction issued on an engine."""
        self.instructions[engine_name] += 1

    def count_dma(self, nbytes: int) -> None:
        """Record one DMA moving nbytes."""
        self.instructions["dma"] += 1
        self.dma_count += 1
        self.dma_bytes += nbytes

    def finish(self) -> SimStats:
        """End the run (its tensors become unusable) and return its statistics."""
        self.active = False
        self._live.clear()
        return SimStats(
            dict(sorted(self.instructions.items())),
            self.dma_count,
            self.dma_bytes,
            self.peak_sbuf_bytes,
            self.peak_psum_banks,
        )


_local = threading.local()  # each thread (a simulated rank or core) runs its own kernel call


def _current() -> list[KernelRun]:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def current_run(where: str) -> KernelRun:
    """The running kernel call; NKI calls are only legal inside one."""
    if not _current():
        raise NkiSimError(f"{where}: called outside a running @nki.jit kernel")
    return _current()[-1]


def start_run(kernel_name: str) -> KernelRun:
    """Begin a kernel call; nested kernel calls are rejected (sub-kernels must not be @nki.jit)."""
    if _current():
        raise NkiSimError(
            f"@nki.jit kernel {kernel_name!r} called from inside kernel {_current()[-1].kernel_name!r}: "
            "sub-kernels must be plain functions, not @nki.jit [MIG]"
        )
    run = KernelRun(kernel_name)
    _current().append(run)
    return run


def end_run(run: KernelRun) -> SimStats:
    """Finish the given kernel call."""
    _current().remove(run)
    return run.finish()
