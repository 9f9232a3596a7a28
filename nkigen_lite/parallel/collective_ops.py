"""Collective tensor ops: all_reduce, all_gather, reduce_scatter, all_to_all over a replica group.

Every fact about a collective is on its class, as for every tensor op. The replica group is all
``world`` ranks (0, 1, ..., world - 1), every rank running a graph that reaches the same
collectives in the same order. ``reference(xs, **attrs)`` maps the list of the ranks' operands
(rank order) to the list of their results; reductions fold in the fixed order rank 0, 1, ...,
world - 1, so every rank gets bit-identical values. ``comm_bytes()`` is the bytes one rank sends
under a ring algorithm. ``nk.run`` (one rank) refuses them; ``nk.run_ranks`` runs them.

``nk.compile`` lowers them to the collective NKI ops (transforms/lower/collective.py,
nki/ops/collective.py); the layout solver gives them no tile roles (they move whole HBM tensors).
"""

from __future__ import annotations

import numpy as np

from ..ir.attrs import INT, Attr, EnumAttr
from ..ir.errors import BuildError
from ..ir.traits import SideEffect
from ..tensor.ops.base import TensorOp, tensor_types
from ..tensor.types import TensorType

REDUCE_OPS = ("sum", "max", "min")
_FOLD = {"sum": np.add, "max": np.maximum, "min": np.minimum}


def fold(xs, op: str) -> np.ndarray:
    """``xs[0] op xs[1] op ... op xs[-1]``, left to right (the fixed reduction order)."""
    acc = np.array(xs[0], copy=True)
    for x in xs[1:]:
        acc = _FOLD[op](acc, x)
    return acc


def _blocks(x: np.ndarray, axis: int, world: int) -> list[np.ndarray]:
    return np.split(x, world, axis=axis)


def _axis_divisible(name: str, t: TensorType, axis: int, world: int, what: str = "axis") -> None:
    if not 0 <= axis < t.rank:
        raise BuildError(f"{name}: {what} {axis} out of range for {t} (rank {t.rank})")
    if t.shape[axis] % world:
        raise BuildError(
            f"{name}: {what} {axis} of {t} has size {t.shape[axis]}, not divisible by world {world}"
        )


class CollectiveOp(TensorOp):
    """Base of collective ops: one operand, attribute ``world`` (the replica group size)."""

    traits = frozenset({SideEffect})
    needs = None  # lowered structurally (transforms/lower/collective.py), never decomposed
    dtype_doc = "operand dtype"

    __slots__ = ()

    @classmethod
    def _operand(cls, types, attrs) -> TensorType:
        (x,) = tensor_types(cls.name, types, 1)
        if attrs["world"] < 1:
            raise BuildError(f"{cls.name}: world {attrs['world']} must be at least 1")
        return x

    def operand_bytes(self) -> int:
        return self.operands[0].type.nbytes

    def comm_bytes(self) -> int:
        """Bytes one rank sends for this op under a ring algorithm."""
        raise NotImplementedError


class AllReduceOp(CollectiveOp):
    """Every rank gets the reduction (sum, max or min) of all ranks' operands."""

    name = "tensor.all_reduce"
    attr_spec = (Attr("world", INT), Attr("op", EnumAttr(*REDUCE_OPS), "sum"))
    numpy = "fold(op, [x_0, ..., x_{world-1}]) on every rank"
    builder_names = ("all_reduce",)

    __slots__ = ()

    @staticmethod
    def reference(xs, world, op="sum"):
        r = fold(xs, op)
        return [r.copy() for _ in range(world)]

    @classmethod
    def infer(cls, types, attrs):
        return [cls._operand(types, attrs)]

    def comm_bytes(self) -> int:
        n = self.attrs["world"]
        return 2 * (n - 1) * self.operand_bytes() // n


class AllGatherOp(CollectiveOp):
    """Every rank gets all ranks' operands concatenated along ``axis`` in rank order."""

    name = "tensor.all_gather"
    attr_spec = (Attr("world", INT), Attr("axis", INT))
    numpy = "np.concatenate([x_0, ..., x_{world-1}], axis) on every rank"
    builder_names = ("all_gather",)

    __slots__ = ()

    @staticmethod
    def reference(xs, world, axis):
        r = np.concatenate(xs, axis=axis)
        return [r.copy() for _ in range(world)]

    @classmethod
    def infer(cls, types, attrs):
        x = cls._operand(types, attrs)
        axis = attrs["axis"]
        if not 0 <= axis < x.rank:
            raise BuildError(f"{cls.name}: axis {axis} out of range for {x} (rank {x.rank})")
        shape = list(x.shape)
        shape[axis] *= attrs["world"]
        return [x.with_shape(tuple(shape))]

    def comm_bytes(self) -> int:
        return (self.attrs["world"] - 1) * self.operand_bytes()


class ReduceScatterOp(CollectiveOp):
    """Rank r gets block r (along ``axis``) of the reduction of all ranks' operands."""

    name = "tensor.reduce_scatter"
    attr_spec = (Attr("world", INT), Attr("axis", INT), Attr("op", EnumAttr(*REDUCE_OPS), "sum"))
    numpy = "np.split(fold(op, [x_0, ...]), world, axis)[r] on rank r"
    builder_names = ("reduce_scatter",)

    __slots__ = ()

    @staticmethod
    def reference(xs, world, axis, op="sum"):
        return [b.copy() for b in _blocks(fold(xs, op), axis, world)]

    @classmethod
    def infer(cls, types, attrs):
        x = cls._operand(types, attrs)
        axis, world = attrs["axis"], attrs["world"]
        _axis_divisible(cls.name, x, axis, world)
        shape = list(x.shape)
        shape[axis] //= world
        return [x.with_shape(tuple(shape))]

    def comm_bytes(self) -> int:
        n = self.attrs["world"]
        return (n - 1) * self.operand_bytes() // n


class AllToAllOp(CollectiveOp):
    """Rank r gets block r (along ``split_axis``) of every rank's operand, concatenated along
    ``concat_axis`` in rank order."""

    name = "tensor.all_to_all"
    attr_spec = (Attr("world", INT), Attr("split_axis", INT), Attr("concat_axis", INT))
    numpy = "np.concatenate([np.split(x_j, world, split_axis)[r] for j], concat_axis) on rank r"
    builder_names = ("all_to_all",)

    __slots__ = ()

    @staticmethod
    def reference(xs, world, split_axis, concat_axis):
        parts = [_blocks(x, split_axis, world) for x in xs]
        return [np.concatenate([parts[j][r] for j in range(world)], axis=concat_axis) for r in range(world)]

    @classmethod
    def infer(cls, types, attrs):
        x = cls._operand(types, attrs)
        sa, ca, world = attrs["split_axis"], attrs["concat_axis"], attrs["world"]
        _axis_divisible(cls.name, x, sa, world, "split_axis")
        if not 0 <= ca < x.rank:
            raise BuildError(f"{cls.name}: concat_axis {ca} out of range for {x} (rank {x.rank})")
        shape = list(x.shape)
        shape[sa] //= world
        shape[ca] *= world
        return [x.with_shape(tuple(shape))]

    def comm_bytes(self) -> int:
        n = self.attrs["world"]
        return (n - 1) * self.operand_bytes() // n


COLLECTIVE_OPS: tuple[type[CollectiveOp], ...] = (AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp)
"""The collective tensor ops."""
