"""NumPy simulation of ``nki.collectives`` (NKI 0.6 [C6]): all_reduce, all_gather, reduce_scatter,
all_to_all and ReplicaGroup, for kernels run as simulated ranks (ranks.py).

Simulated: one source and one destination tensor per call (coalesced lists of several are not),
both private HBM (``nl.hbm``: at LNC 1 sources must be private, and shared destinations need an
opt-in the simulator does not model [C6]), the collective dimension 0, one replica group holding
every rank. Reductions fold in rank order (rank 0 first) in fp32 (integers exactly) and round
once into the destination dtype, so every rank gets bit-identical values. Outside a rank-parallel
run, a replica group of one rank copies; a larger one raises.
"""

from __future__ import annotations

import numpy as np

from .enums import private_hbm
from .errors import NkiSimError
from .operands import begin, tensor_arg
from .operators import AluOp
from .ranks import rank_context
from .storage import round_to

_REDUCE = ("add", "maximum", "minimum")


class ReplicaGroup:
    """The ranks a collective runs on, as a list of disjoint rank lists."""

    def __init__(self, rank_lists):
        lists = [list(r) for r in rank_lists]
        flat = [r for lst in lists for r in lst]
        if not lists or not all(lists) or not all(isinstance(r, int) for r in flat):
            raise NkiSimError(
                f"ncc.ReplicaGroup({rank_lists!r}): expected a list of non-empty lists of ranks"
            )
        if len(set(flat)) != len(flat):
            raise NkiSimError(f"ncc.ReplicaGroup({rank_lists!r}): a rank appears in two rank lists")
        self.rank_lists = lists

    def __repr__(self) -> str:
        return f"ReplicaGroup({self.rank_lists!r})"


def _one(x, where: str, role: str):
    if not isinstance(x, (list, tuple)) or len(x) != 1:
        raise NkiSimError(f"{where}: {role} must be a list of one tensor (coalesced lists are not simulated)")
    t = tensor_arg(x[0], where, role)
    if t.buffer is not private_hbm:
        raise NkiSimError(
            f"{where}: {role} {t.describe()} is in {t.buffer.name}; simulated collectives move "
            "private HBM tensors (nl.hbm) [C6]"
        )
    return t


def _start(where, srcs, dsts, replica_group, name, priority):
    begin(where, name)
    if priority is not None:
        raise NkiSimError(f"{where}: priority= is NeuronCore-v4+ only [C6]; trn2 is NeuronCore-v3")
    src, dst = _one(srcs, where, "srcs"), _one(dsts, where, "dsts")
    if src.dtype is not dst.dtype:
        raise NkiSimError(f"{where}: srcs dtype {src.dtype.numpy_name} != dsts dtype {dst.dtype.numpy_name}")
    if not isinstance(replica_group, ReplicaGroup):
        raise NkiSimError(
            f"{where}: replica_group must be an ncc.ReplicaGroup, got {type(replica_group).__name__}"
        )
    ctx = rank_context()
    rank, world = (ctx[0], ctx[1]) if ctx else (0, 1)
    if replica_group.rank_lists != [list(range(world))]:
        raise NkiSimError(
            f"{where}: replica group {replica_group.rank_lists} is not the one group of all "
            f"{world} simulated rank(s) [[0..{world - 1}]]"
            + ("" if ctx else "; run rank kernels with nk.simulate_ranks")
        )
    return src, dst, rank, world, ctx


def _swap(ctx, rank, key, value) -> list[np.ndarray]:
    return [value] if ctx is None else ctx[2].exchange(rank, key, value)


def _fold(values: list[np.ndarray], op, where: str) -> np.ndarray:
    if not isinstance(op, AluOp) or op.name not in _REDUCE:
        raise NkiSimError(f"{where}: op must be nl.add, nl.maximum or nl.minimum, got {op!r}")
    wide = np.int64 if values[0].dtype.kind in "iub" else np.float32
    acc = values[0].astype(wide)
    for v in values[1:]:
        acc = op.apply(acc, v.astype(wide)).astype(wide)
    return acc


def _dim0(where, src, dst, want_src0_div: int | None, want_dst):
    if not src.shape:
        raise NkiSimError(f"{where}: srcs tensor has rank 0; the collective dim 0 needs rank >= 1")
    if want_src0_div and src.shape[0] % want_src0_div:
        raise NkiSimError(f"{where}: srcs dim 0 ({src.shape[0]}) is not divisible by {want_src0_div} ranks")
    if tuple(dst.shape) != tuple(want_dst):
        raise NkiSimError(f"{where}: dsts shape {tuple(dst.shape)} != {tuple(want_dst)}")


def _check_dim(where, collective_dim):
    if collective_dim != 0:
        raise NkiSimError(
            f"{where}: collective_dim={collective_dim!r}; HBM collectives support dim 0 only [C6]"
        )


def all_reduce(srcs, dsts, replica_group, op, priority=None, name=""):
    """Every rank's dsts[0] = the reduction (rank order) of all ranks' srcs[0]."""
    where = "ncc.all_reduce"
    src, dst, rank, world, ctx = _start(where, srcs, dsts, replica_group, name, priority)
    if tuple(dst.shape) != tuple(src.shape):
        raise NkiSimError(f"{where}: dsts shape {tuple(dst.shape)} != srcs shape {tuple(src.shape)}")
    values = _swap(ctx, rank, f"{where} {src.shape} {src.dtype.numpy_name}", np.array(src.read(where)))
    dst.write(round_to(_fold(values, op, where), dst.dtype).reshape(dst.shape), where)


def all_gather(srcs, dsts, replica_group, collective_dim, priority=None, name=""):
    """Every rank's dsts[0] = all ranks' srcs[0] concatenated along dim 0 in rank order."""
    where = "ncc.all_gather"
    src, dst, rank, world, ctx = _start(where, srcs, dsts, replica_group, name, priority)
    _check_dim(where, collective_dim)
    _dim0(where, src, dst, None, (src.shape[0] * world, *src.shape[1:]) if src.shape else ())
    values = _swap(ctx, rank, f"{where} {src.shape} {src.dtype.numpy_name}", np.array(src.read(where)))
    dst.write(np.concatenate(values, axis=0), where)


def reduce_scatter(srcs, dsts, replica_group, collective_dim, op, priority=None, name=""):
    """Rank r's dsts[0] = block r (dim 0) of the reduction of all ranks' srcs[0]."""
    where = "ncc.reduce_scatter"
    src, dst, rank, world, ctx = _start(where, srcs, dsts, replica_group, name, priority)
    _check_dim(where, collective_dim)
    _dim0(where, src, dst, world, (src.shape[0] // world, *src.shape[1:]) if src.shape else ())
    values = _swap(ctx, rank, f"{where} {src.shape} {src.dtype.numpy_name}", np.array(src.read(where)))
    block = np.split(_fold(values, op, where), world, axis=0)[rank]
    dst.write(round_to(block, dst.dtype), where)


def all_to_all(srcs, dsts, replica_group, collective_dim, priority=None, name=""):
    """Rank r's dsts[0] = block r (dim 0) of every rank's srcs[0], in rank order along dim 0."""
    where = "ncc.all_to_all"
    src, dst, rank, world, ctx = _start(where, srcs, dsts, replica_group, name, priority)
    _check_dim(where, collective_dim)
    _dim0(where, src, dst, world, src.shape)
    values = _swap(ctx, rank, f"{where} {src.shape} {src.dtype.numpy_name}", np.array(src.read(where)))
    dst.write(np.concatenate([np.split(v, world, axis=0)[rank] for v in values], axis=0), where)


__all__ = ["ReplicaGroup", "all_reduce", "all_gather", "reduce_scatter", "all_to_all"]
