"""The bytes an in-place update must write: the minimum-traffic figure of an aliased output.

An output that aliases an input (``return cache_out = %c (aliases cache)``) is that input's
buffer, updated in place. When the output is the input carried through shape ops
(``tensor.transpose`` / ``tensor.reshape``) and the base operand of ``tensor.scatter_rows`` /
``tensor.dynamic_update_slice`` only, and no other op reads any value of that chain, a kernel
need not read the buffer nor write its unchanged part: it moves the rows a scatter writes
(``min(number of ids, rows)`` rows) and the windows the updates write, nothing else.
``inplace_written_bytes(graph)`` returns ``{input name: those bytes}`` for such outputs;
any other aliased output counts whole (``stats.min_io_bytes``).
"""

from __future__ import annotations

import math

from ..ir.graph import Graph

# tensor ops by name (perf sits below the tensor dialect: tests/test_layering.py)
SHAPE_OPS = ("tensor.transpose", "tensor.reshape")
SCATTER_ROWS, DYNAMIC_UPDATE_SLICE = "tensor.scatter_rows", "tensor.dynamic_update_slice"


def _written_elements(op) -> int:
    """Elements of the base an update op overwrites (at most the base)."""
    base = op.operand(0).type
    if op.name == SCATTER_ROWS:
        rows = min(op.operand(1).type.size, base.shape[0]) if base.shape else 0
        return rows * math.prod(base.shape[1:])
    return min(op.operand(1).type.size, base.size)


def _chain_bytes(value, source) -> int | None:
    """Bytes written along the in-place chain from ``source`` to ``value``, or None if
    ``value`` is not ``source`` carried only through shape ops and update bases."""
    if value.num_uses != 1:  # the return only
        return None
    written = 0
    while value is not source:
        op = value.defining_op
        if op is None or op.operand(0).num_uses != 1:
            return None
        if op.name in (SCATTER_ROWS, DYNAMIC_UPDATE_SLICE):
            written += _written_elements(op)
        elif op.name not in SHAPE_OPS:
            return None
        value = op.operand(0)
    return written * source.type.dtype.itemsize


def inplace_written_bytes(graph: Graph) -> dict[str, int]:
    """{aliased input name: bytes its in-place update writes} (see the module docstring)."""
    inputs = dict(zip(graph.input_names, graph.inputs))
    out = {}
    for name, alias in graph.aliases.items():
        src, value = inputs.get(alias), graph.outputs.get(name)
        if src is None or value is None:
            continue
        n = _chain_bytes(value, src)
        if n is not None:
            out[alias] = n
    return out
