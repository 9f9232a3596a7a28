"""The rank-parallel NKI interpreter: ``run_ranks(graphs, inputs_per_rank, world)``.

Each rank is its own NKI interpreter (its own HBM, SBUF and PSUM). Ranks run their top-level
ops independently up to their next collective (collectives sit at the top level, a verifier
rule); when every rank waits at one, the ranks must agree on it (same op, world, reduction and
source shape and dtype), ``results`` (nki/ops/collective.py) computes every rank's destination
from the ranks' sources in rank order, and the ranks go on. A single-rank run (``nk.nki.run``)
executes a collective of world 1 as a copy and refuses a larger one, pointing here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..ir.errors import InterpretError
from ..ir.graph import Graph, ReturnOp
from .interpret import NkiInterpreter, finish, start
from .ops.collective import CollectiveOp
from .target import TRN2, Target


@NkiInterpreter.impl(CollectiveOp)
def _single_rank(it: NkiInterpreter, op, args):
    world = op.attrs["world"]
    if world != 1:
        raise it.fail(
            op,
            f"a collective across {world} ranks; nk.nki.run runs one rank: run the rank kernels "
            f"with nk.nki.run_ranks(graphs, inputs_per_rank, world={world}) (compiled Kernels: "
            "nk.run_kernel_ranks)",
        )
    src = it.read_access(op, "src", args)
    (dst,) = type(op).results([np.asarray(src)], 1, op.attrs.get("op"))
    it.write_access(op, "dst", args, dst)


def _signature(op) -> str:
    a = op.access("src")
    how = f", op={op.attrs['op']}" if "op" in op.attrs else ""
    return f"{op.name} (world={op.attrs['world']}{how}) on src {a.shape} {a.dtype}"


def _meet(ops_at: list, world: int) -> None:
    first = ops_at[0]
    for r, op in enumerate(ops_at):
        if (op is None) != (first is None) or (op is not None and _signature(op) != _signature(first)):
            what = [("finished" if o is None else _signature(o)) for o in (first, op)]
            raise InterpretError(f"run_ranks: rank 0 reached {what[0]} but rank {r} reached {what[1]}")
    if first is not None and first.attrs["world"] != world:
        raise InterpretError(
            f"{first.name} has world {first.attrs['world']}, but run_ranks runs world={world} ranks"
        )


def _advance(it: NkiInterpreter, ops: list, pc: int) -> int:
    while pc < len(ops) and not isinstance(ops[pc], CollectiveOp):
        it.run_op(ops[pc])
        pc += 1
    return pc


def run_ranks(
    graphs,
    inputs_per_rank: Sequence[Mapping[str, np.ndarray]],
    world: int,
    target: Target = TRN2,
    verify: bool = True,
) -> list[dict[str, np.ndarray]]:
    """Run ``world`` NKI kernels in lock step (one graph for every rank, or a list of
    ``world``); ``inputs_per_rank[r]`` are rank r's inputs. Returns one
    ``{output name: array}`` per rank."""
    if isinstance(world, bool) or not isinstance(world, int) or world < 1:
        raise InterpretError(f"run_ranks: world must be a positive int, got {world!r}")
    graphs = [graphs] * world if isinstance(graphs, Graph) else list(graphs)
    if len(graphs) != world or not all(isinstance(g, Graph) for g in graphs):
        raise InterpretError(f"run_ranks: expected {world} NKI graphs, got {len(graphs)}")
    if len(inputs_per_rank) != world:
        raise InterpretError(f"run_ranks: expected inputs for {world} ranks, got {len(inputs_per_rank)}")
    its = [start(g, ins, target, verify)[0] for g, ins in zip(graphs, inputs_per_rank)]
    bodies = [[op for op in g.body if not isinstance(op, ReturnOp)] for g in graphs]
    pcs = [0] * world
    with np.errstate(all="ignore"):  # IEEE results (inf, nan) are the data, not errors
        while True:
            pcs = [_advance(it, ops, pc) for it, ops, pc in zip(its, bodies, pcs)]
            ops_at = [ops[pc] if pc < len(ops) else None for ops, pc in zip(bodies, pcs)]
            _meet(ops_at, world)
            if ops_at[0] is None:
                break
            args = [[it.read(v, op) for v in op.operands] for it, op in zip(its, ops_at)]
            srcs = [np.asarray(it.read_access(op, "src", a)) for it, op, a in zip(its, ops_at, args)]
            outs = type(ops_at[0]).results(srcs, world, ops_at[0].attrs.get("op"))
            for it, op, a, y in zip(its, ops_at, args, outs):
                it.write_access(op, "dst", a, y)
            pcs = [pc + 1 for pc in pcs]
    return [finish(it) for it in its]
