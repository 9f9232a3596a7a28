"""Tensor parallelism: collective tensor ops, the rank-parallel interpreter (``run_ranks``) and
Megatron-style sharding of a graph into one graph per rank (``shard``); docs/parallel.md."""

from .collective_ops import (
    COLLECTIVE_OPS,
    AllGatherOp,
    AllReduceOp,
    AllToAllOp,
    CollectiveOp,
    ReduceScatterOp,
)
from .run_ranks import run_ranks
from .shard import PARTIAL, ShardedGraph, shard

__all__ = [
    "COLLECTIVE_OPS",
    "AllGatherOp",
    "AllReduceOp",
    "AllToAllOp",
    "CollectiveOp",
    "ReduceScatterOp",
    "run_ranks",
    "PARTIAL",
    "ShardedGraph",
    "shard",
]
