"""Collective NKI ops: all_reduce, all_gather, reduce_scatter, all_to_all between NeuronCores.

They mirror ``nki.collectives`` (NKI 0.6, facts [NKI-COLL]; nki_isa_constraints.md §9): one
source and one destination HBM tensor per rank, the replica group being all ``world`` ranks
(``ReplicaGroup([[0, ..., world - 1]])``), the collective dimension 0 (the only one documented
for HBM tensors). Every rank runs a kernel reaching the same collectives in the same order.

``nki.all_reduce %dst, %src {world = 2, op = add}`` — rank r's ``dst`` is
``src_0 op src_1 op ... op src_{world-1}``;
``nki.all_gather`` — ``dst = concatenate([src_0, ..., src_{world-1}], 0)``;
``nki.reduce_scatter`` — ``dst = split(reduction, world, 0)[r]``;
``nki.all_to_all`` — ``dst = concatenate([split(src_j, world, 0)[r] for j], 0)``.

``results(srcs, world, op)`` is the NKI interpreter's semantics: reductions fold left to right
in rank order in fp32 (integers exactly) and round once into ``dst``'s dtype, so
every rank gets bit-identical values. The hardware verifier (verify_collective.py) checks the
shapes, memory spaces and placement; they run only at a kernel's top level.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ...ir.attrs import INT, Attr, EnumAttr
from ..access import ACCESS
from .base import NkiOp

REDUCE_OPS = ("add", "maximum", "minimum")
_FOLD = {"add": np.add, "maximum": np.maximum, "minimum": np.minimum}


def _fold(xs: list[np.ndarray], op: str) -> np.ndarray:
    wide = np.int64 if xs[0].dtype.kind in "iub" else np.float32  # bf16 / fp8 are kind "V"
    acc = np.array(xs[0], dtype=wide)
    for x in xs[1:]:
        acc = _FOLD[op](acc, x.astype(wide))
    return acc


class CollectiveOp(NkiOp):
    """Base of the collective NKI ops: ``dst``, ``src`` (whole HBM tensors) and ``world``."""

    writes = ("dst",)
    reduces: ClassVar[bool] = False
    api: ClassVar[str] = ""  # the nki.collectives function

    def dst_shape(self, src_shape: tuple[int, ...]) -> tuple[int, ...]:
        """The destination shape a source of ``src_shape`` gives (dim 0 changes)."""
        return tuple(src_shape)

    @staticmethod
    def results(srcs: list[np.ndarray], world: int, op: str | None) -> list[np.ndarray]:
        """Every rank's destination values, from the ranks' sources in rank order."""
        raise NotImplementedError

    def wire_bytes(self) -> int:
        """Bytes one rank sends over the interconnect (ring algorithm)."""
        raise NotImplementedError

    def src_bytes(self) -> int:
        a = self.access("src")
        return a.size * a.dtype.itemsize


class AllReduceOp(CollectiveOp):
    """``nki.all_reduce dst, src {world, op}``: every rank gets the reduction of all sources."""

    name = "nki.all_reduce"
    attr_spec = (
        Attr("dst", ACCESS),
        Attr("src", ACCESS),
        Attr("world", INT),
        Attr("op", EnumAttr(*REDUCE_OPS)),
    )
    reduces = True
    api = "all_reduce"

    @staticmethod
    def results(srcs, world, op):
        r = _fold(srcs, op)
        return [r] * world

    def wire_bytes(self) -> int:
        n = self.attrs["world"]
        return 2 * (n - 1) * self.src_bytes() // n


class AllGatherOp(CollectiveOp):
    """``nki.all_gather dst, src {world}``: every rank gets the sources stacked along dim 0."""

    name = "nki.all_gather"
    attr_spec = (Attr("dst", ACCESS), Attr("src", ACCESS), Attr("world", INT))
    api = "all_gather"

    def dst_shape(self, src_shape):
        return (src_shape[0] * self.attrs["world"], *src_shape[1:]) if src_shape else src_shape

    @staticmethod
    def results(srcs, world, _op):
        r = np.concatenate(srcs, axis=0)
        return [r] * world

    def wire_bytes(self) -> int:
        return (self.attrs["world"] - 1) * self.src_bytes()


class ReduceScatterOp(CollectiveOp):
    """``nki.reduce_scatter dst, src {world, op}``: rank r gets block r (dim 0) of the reduction."""

    name = "nki.reduce_scatter"
    attr_spec = (
        Attr("dst", ACCESS),
        Attr("src", ACCESS),
        Attr("world", INT),
        Attr("op", EnumAttr(*REDUCE_OPS)),
    )
    reduces = True
    api = "reduce_scatter"

    def dst_shape(self, src_shape):
        return (src_shape[0] // self.attrs["world"], *src_shape[1:]) if src_shape else src_shape

    @staticmethod
    def results(srcs, world, op):
        return np.split(_fold(srcs, op), world, axis=0)

    def wire_bytes(self) -> int:
        n = self.attrs["world"]
        return (n - 1) * self.src_bytes() // n


class AllToAllOp(CollectiveOp):
    """``nki.all_to_all dst, src {world}``: rank r gets block r (dim 0) of every rank's source,
    stacked in rank order."""

    name = "nki.all_to_all"
    attr_spec = (Attr("dst", ACCESS), Attr("src", ACCESS), Attr("world", INT))
    api = "all_to_all"

    @staticmethod
    def results(srcs, world, _op):
        parts = [np.split(x, world, axis=0) for x in srcs]
        return [np.concatenate([parts[j][r] for j in range(world)], axis=0) for r in range(world)]

    def wire_bytes(self) -> int:
        n = self.attrs["world"]
        return (n - 1) * self.src_bytes() // n


COLLECTIVE_OPS = (AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp)
