"""Running a kernel launched on several physical cores (LNC=2, ``nki.program_id``).

Each core runs the whole program with its own id, SBUF, PSUM and private HBM; the kernel's
inputs and outputs are shared HBM. Stricter than the chip: no core may read an output element
another core writes (there is no synchronisation between them in the IR), two cores writing the
same output element is a race and raises, and every output element must be written by exactly one
core. ``nk.nki.run`` delegates here when the kernel has an ``nki.program_id`` of lnc > 1.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..ir.errors import InterpretError
from .interpret import NkiInterpreter, start
from .ops.program import ProgramIdOp, lnc_of
from .target import Target


@NkiInterpreter.impl(ProgramIdOp)
def _program_id(it: NkiInterpreter, _op, _args):
    return [getattr(it, "program_id", 0)]


def run_cores(graph, inputs: Mapping[str, np.ndarray], target: Target, verify: bool) -> dict[str, np.ndarray]:
    """Run every core's program in turn and combine the outputs each core wrote."""
    lnc = lnc_of(graph)
    parts = []
    for core in range(lnc):
        it, args = start(graph, inputs, target, verify and core == 0)
        it.program_id = core
        it.iteration.append(("core", core))
        with np.errstate(all="ignore"):
            it.run_block(graph.body, args)
        if it.live:
            buf, op = next(iter(it.live.values()))
            raise it.fail(op, f"{buf.label} is still allocated at kernel end on core {core}")
        parts.append({n: (it.env[v].data.copy(), it.env[v].written.copy()) for n, v in graph.outputs.items()})
    out = {}
    for name in graph.outputs:
        count = sum(w.astype(np.int8) for _, w in (p[name] for p in parts))
        if (count > 1).any():
            at = [int(i) for i in np.argwhere(count > 1)[0]]
            cores = [c for c, p in enumerate(parts) if p[name][1][tuple(at)]]
            raise InterpretError(
                f"output {name}: element {at} is written by cores {cores}; the physical cores of a "
                "logical core must write disjoint parts of an output (a race on the chip)"
            )
        if (count == 0).any():
            at = [int(i) for i in np.argwhere(count == 0)[0]]
            raise InterpretError(
                f"output {name} has {int((count == 0).sum()):,} elements no core writes (first at {at})"
            )
        data = parts[0][name][0]
        for d, w in (p[name] for p in parts[1:]):
            data = np.where(w, d, data)
        out[name] = data
    return out
