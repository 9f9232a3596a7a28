"""The bytes of each input a tensor program must read: the minimum-traffic figure's input side.

``input_read_bytes(graph)`` walks the uses of every input of a tensor-level graph (the traced
program, ``Kernel._source``) and counts the elements the program selects:

- ``tensor.slice`` (static, strided) keeps the selected elements; slices of slices and
  transposes compose (the selection is tracked as one arithmetic progression per input dim);
- ``tensor.gather_rows`` of the selection (data-dependent) counts the gathered rows,
  ``min(number of indices, rows)`` rows of the selection (the rule the NKI-level count of
  indirect gathers uses, ``stats._gathered_bytes``); ``tensor.take_along_axis`` counts one
  element per index, ``tensor.dynamic_slice`` its window (both at most the selection);
- any other use reads the whole selection.

Several uses of one input read the union of their selections: the union of the static boxes is
exact (coordinates compressed per dim by which boxes hold them); a data-dependent selection
among others counts as the largest single selection (a lower bound: it may overlap the rest).
An input nothing uses reads 0 bytes. Outputs always count whole (``stats.min_io_bytes``).
"""

from __future__ import annotations

import itertools
import math

from ..ir.graph import Graph

# tensor ops by name (perf sits below the tensor dialect: tests/test_layering.py)
SLICE, TRANSPOSE = "tensor.slice", "tensor.transpose"
GATHER_ROWS, TAKE_ALONG_AXIS, DYNAMIC_SLICE = (
    "tensor.gather_rows",
    "tensor.take_along_axis",
    "tensor.dynamic_slice",
)

# A selection: per dim of the current value, (input dim, start, step, count) in input coordinates.
# A data-dependent selection is an int (its element count) instead.


def _box_size(box) -> int:
    return math.prod(c for _, _, _, c in box)


def _selections(value, box, out: list) -> None:
    """Append the selections of the root input that the uses of ``value`` (itself the
    selection ``box`` of it) read."""
    if not value.uses:
        return
    for op in value.users:
        if op.name == SLICE and op.operand(0) is value:
            a = op.attrs
            new = []
            for (d, s, st, _), lo, hi, k in zip(box, a["starts"], a["stops"], a["strides"]):
                new.append((d, s + st * lo, st * k, len(range(lo, hi, k))))
            _selections(op.result, tuple(new), out)
        elif op.name == TRANSPOSE and op.operand(0) is value:
            _selections(op.result, tuple(box[p] for p in op.attrs["perm"]), out)
        elif op.name == GATHER_ROWS and op.operand(0) is value and box:
            rows = min(op.operand(1).type.size, box[0][3])
            out.append(rows * _box_size(box[1:]))
        elif op.name == TAKE_ALONG_AXIS and op.operand(0) is value:
            out.append(min(op.operand(1).type.size, _box_size(box)))
        elif op.name == DYNAMIC_SLICE and op.operand(0) is value:
            out.append(min(math.prod(op.attrs["sizes"]), _box_size(box)))
        else:
            out.append(box)


def _ascending(start: int, step: int, count: int) -> tuple[int, int, int]:
    """The progression with a non-negative step (a reversed slice selects the same set)."""
    return (start + step * (count - 1), -step, count) if step < 0 and count else (start, step, count)


def _union_size(boxes: list, shape: tuple) -> int:
    """Elements in the union of boxes (each a tuple of per-input-dim progressions)."""
    per_dim = []
    for d, n in enumerate(shape):
        progs = [next(_ascending(s, st, c) for dd, s, st, c in b if dd == d) for b in boxes]
        sigs: dict = {}
        for i in range(n):  # coordinate compression: group the indices by the boxes holding them
            sig = tuple(
                c > 0 and i >= s and (i - s) % max(st, 1) == 0 and (i - s) // max(st, 1) < c
                for s, st, c in progs
            )
            sigs[sig] = sigs.get(sig, 0) + 1
        per_dim.append(sigs)
    total = 0
    for cell in itertools.product(*(d.items() for d in per_dim)):
        if any(all(sig[b] for sig, _ in cell) for b in range(len(boxes))):
            total += math.prod(n for _, n in cell)
    return total


def input_read_bytes(graph: Graph) -> dict[str, int]:
    """{input name: bytes the program must read of it} (see the module docstring)."""
    out = {}
    for name, v in zip(graph.input_names, graph.inputs):
        shape, item = v.type.shape, v.type.dtype.itemsize
        full = math.prod(shape)
        sels: list = []
        _selections(v, tuple((d, 0, 1, n) for d, n in enumerate(shape)), sels)
        boxes = [b for b in sels if not isinstance(b, int)]
        counts = [b for b in sels if isinstance(b, int)]
        n = 0
        if boxes:
            n = full if any(_box_size(b) == full for b in boxes) else _union_size(boxes, shape)
        out[name] = min(full, max([n, *counts])) * item
    return out
