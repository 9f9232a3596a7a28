"""Memory buffers (nl.sbuf, ...) and the nki.isa enums (engine, reduce_cmd, dge_mode, ...)."""

from __future__ import annotations

import enum


class Buffer:
    """A memory a tensor lives in: nl.sbuf, nl.psum, nl.private_hbm (= nl.hbm), nl.shared_hbm."""

    __slots__ = ("name", "on_chip")

    def __init__(self, name: str, on_chip: bool):
        self.name = name
        self.on_chip = on_chip

    @property
    def is_hbm(self) -> bool:
        return not self.on_chip

    def __repr__(self) -> str:
        return f"nl.{self.name}"


sbuf = Buffer("sbuf", True)
psum = Buffer("psum", True)
private_hbm = Buffer("private_hbm", False)
hbm = private_hbm
shared_hbm = Buffer("shared_hbm", False)
BUFFERS = (sbuf, psum, private_hbm, shared_hbm)


class engine(enum.Enum):
    """Compute engine selector (nisa.engine)."""

    unknown = 0
    tensor = 1
    scalar = 2
    gpsimd = 3
    dma = 4
    vector = 5
    sync = 6


class reduce_cmd(enum.Enum):
    """Accumulator-register command of fused reductions (nisa.reduce_cmd)."""

    idle = 0
    reset = 1
    reduce = 2
    reset_reduce = 3
    load_reduce = 4


class dge_mode(enum.Enum):
    """DMA descriptor generation mode (nisa.dge_mode)."""

    unknown = 0
    swdge = 1
    hwdge = 2
    none = 3


class oob_mode(enum.Enum):
    """Out-of-bounds behaviour of DMA accesses (nisa.oob_mode)."""

    error = 0
    skip = 1


class matmul_perf_mode(enum.Enum):
    """nc_matmul performance mode (nisa.matmul_perf_mode)."""

    none = 0
    double_row = 1


class nc_version(enum.Enum):
    """NeuronCore generation (nisa.nc_version); the simulator models gen3 (trn2)."""

    gen2 = 2
    gen3 = 3
    gen4 = 4
