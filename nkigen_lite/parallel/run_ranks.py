"""The rank-parallel tensor interpreter: ``run_ranks`` runs one graph per rank in lock step.

Each rank has its own tensor interpreter (same mode). Ranks run independently up to their next
collective; when every rank waits at one, the ranks must agree on it (same op, attributes and
operand type), its ``reference`` computes all ranks' results at once (reductions in the fixed
order rank 0, 1, ..., world - 1, so every rank gets bit-identical values) and the ranks go on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..ir.errors import IndexOutOfRange, InterpretError
from ..ir.graph import Graph, ReturnOp
from ..ir.interpreter import check_inputs
from ..tensor.index_bounds import check_index_inputs, index_bounds
from ..tensor.interpret import TensorInterpreter
from .collective_ops import CollectiveOp


@TensorInterpreter.impl(CollectiveOp)
def _refuse_collective(_it, op, _args):
    world = op.attrs["world"]
    raise InterpretError(
        f"{op.name} is a collective across {world} ranks: nk.run runs a single rank; run the "
        f"rank graphs with nk.run_ranks(graphs, inputs_per_rank, world={world})"
    )


def _graphs(graph_or_graphs, world: int) -> list[Graph]:
    if isinstance(world, bool) or not isinstance(world, int) or world < 1:
        raise InterpretError(f"run_ranks: world must be a positive int, got {world!r}")
    if isinstance(graph_or_graphs, Graph):
        return [graph_or_graphs] * world
    graphs = list(getattr(graph_or_graphs, "graphs", graph_or_graphs))
    if len(graphs) != world or not all(isinstance(g, Graph) for g in graphs):
        raise InterpretError(
            f"run_ranks: expected one Graph or {world} Graphs (one per rank), got {len(graphs)} items"
        )
    return graphs


def _rank_inputs(it: TensorInterpreter, g: Graph, inputs, rank: int) -> list[np.ndarray]:
    try:
        arrays = check_inputs(g, inputs)
        check_index_inputs(index_bounds(g), arrays)  # a bad index input in the user's terms
    except IndexOutOfRange as e:
        raise IndexOutOfRange(f"rank {rank}: {e}") from None
    except InterpretError as e:
        raise InterpretError(f"rank {rank}: {e}") from None
    out = []
    for n, v in zip(g.input_names, g.inputs):
        a = arrays[n]
        out.append(a.astype(np.float64) if (it.mode == "float64" and v.type.dtype.is_float) else a)
    return out


def _advance(it: TensorInterpreter, ops: list, pc: int) -> int:
    """Run ops from ``pc`` up to the next collective (or the end); returns its index."""
    while pc < len(ops) and not isinstance(ops[pc], CollectiveOp):
        it.run_op(ops[pc])
        pc += 1
    return pc


def _signature(op) -> tuple:
    return (op.name, tuple(sorted(op.attrs.items())), str(op.operands[0].type))


def _meet(ops_at: list, world: int) -> None:
    """Check that every rank waits at the same collective; raise naming the first disagreement."""
    first = ops_at[0]
    for r, op in enumerate(ops_at):
        if op is None or first is None:
            if op is not first:
                waiting = op if op is not None else first
                done = r if op is None else 0
                raise InterpretError(
                    f"rank {done} finished while another rank waits at {waiting.name}: every rank "
                    "must reach the same collectives in the same order"
                )
            continue
        if _signature(op) != _signature(first):
            raise InterpretError(
                f"ranks disagree at a collective: rank 0 reached {first.name} {dict(first.attrs)} "
                f"on {first.operands[0].type}, rank {r} reached {op.name} {dict(op.attrs)} on "
                f"{op.operands[0].type}"
            )
    if first is not None and first.attrs["world"] != world:
        raise InterpretError(
            f"{first.name} has world {first.attrs['world']}, but run_ranks runs world={world} ranks"
        )


def _collective(its: list[TensorInterpreter], ops_at: list) -> None:
    op0 = ops_at[0]
    dtype = op0.operands[0].type.dtype
    xs = [it.load(it.read(op.operands[0], op), dtype) for it, op in zip(its, ops_at)]
    with np.errstate(all="ignore"):
        outs = type(op0).reference(xs, **dict(op0.attrs))
    for it, op, y in zip(its, ops_at, outs):
        it.env[op.results[0]] = it.store(y, op.results[0].type.dtype)


def run_ranks(
    graph_or_graphs, inputs_per_rank: Sequence[Mapping[str, np.ndarray]], world: int, mode: str = "faithful"
) -> list[dict[str, np.ndarray]]:
    """Run ``world`` ranks in lock step; returns one ``{output name: array}`` per rank.

    ``graph_or_graphs`` is one Graph (every rank runs it), a list of ``world`` Graphs, or the
    result of ``nk.shard``; ``inputs_per_rank[r]`` are rank r's inputs. ``mode`` is the tensor
    interpreter's (``"faithful"`` or ``"float64"``).
    """
    graphs = _graphs(graph_or_graphs, world)
    if len(inputs_per_rank) != world:
        raise InterpretError(f"run_ranks: expected inputs for {world} ranks, got {len(inputs_per_rank)}")
    its = [TensorInterpreter(mode) for _ in range(world)]
    bodies = []
    for r, (it, g) in enumerate(zip(its, graphs)):
        if g.return_op is None:
            raise InterpretError(f"rank {r}: graph @{g.name} has no outputs")
        body = g.body
        for a, val in zip(body.args, _rank_inputs(it, g, inputs_per_rank[r], r)):
            it.env[a] = val
        bodies.append([op for op in body if not isinstance(op, ReturnOp)])
    pcs = [0] * world
    while True:
        pcs = [_advance(it, ops, pc) for it, ops, pc in zip(its, bodies, pcs)]
        ops_at = [ops[pc] if pc < len(ops) else None for ops, pc in zip(bodies, pcs)]
        _meet(ops_at, world)
        if ops_at[0] is None:
            break
        _collective(its, ops_at)
        pcs = [pc + 1 for pc in pcs]
    return [{name: np.array(it.env[v]) for name, v in g.outputs.items()} for it, g in zip(its, graphs)]
