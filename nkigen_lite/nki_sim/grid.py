"""Launch grids: ``kernel[2](...)`` runs a kernel on the two physical cores of an LNC=2 logical
NeuronCore (facts §1.2: the bracket holds one integer, 1 or 2).

Each core runs the kernel function once with its own ``nl.program_id(0)`` (0, 1) and
``nl.num_programs() == 2``, its own SBUF / PSUM and its own copy of the inputs; the outputs it
returns are shared HBM in NKI, so the simulator combines the cores' outputs element by element.
Stricter than the chip: two cores writing one output element is a race and raises, an element
no core writes raises, and a core cannot read what the other writes (no barrier is simulated).
The cores run one after the other on the calling thread (order does not matter: they share
nothing they may both touch).
"""

from __future__ import annotations

import threading

import numpy as np

from .errors import NkiSimError

_local = threading.local()
LNC_DEGREES = (1, 2)


def core() -> tuple[int, int]:
    """(program id, number of programs) of the calling thread's kernel call."""
    return getattr(_local, "core", (0, 1))


def run_grid(name: str, lnc, call) -> object:
    """Run ``call(core)`` for every core of a launch of ``lnc`` cores; ``call`` returns
    (the kernel returned a tuple, [(values, written mask) per output]). Returns the combined
    NumPy outputs (one array or a tuple, as the kernel returns them)."""
    if isinstance(lnc, tuple) and len(lnc) == 1:
        lnc = lnc[0]
    if isinstance(lnc, bool) or lnc not in LNC_DEGREES:
        raise NkiSimError(
            f"kernel {name}[{lnc!r}]: the launch bracket holds one integer, the LNC degree 1 or 2 [LNC]"
        )
    parts = []
    for c in range(lnc):
        _local.core = (c, lnc)
        try:
            parts.append(call(c))
        finally:
            _local.core = (0, 1)
    multi = parts[0][0]
    outs = []
    for i in range(len(parts[0][1])):
        got = [p[1][i] for p in parts]
        count = sum(w.astype(np.int8) for _, w in got)
        where = f"kernel {name}[{lnc}] output {i}"
        if (count > 1).any():
            at = [int(x) for x in np.argwhere(count > 1)[0]]
            raise NkiSimError(f"{where}: element {at} is written by more than one core (a race)")
        if (count == 0).any():
            at = [int(x) for x in np.argwhere(count == 0)[0]]
            raise NkiSimError(f"{where}: {int((count == 0).sum())} elements no core writes (first at {at})")
        data = got[0][0]
        for d, w in got[1:]:
            data = np.where(w, d, data)
        outs.append(data)
    return tuple(outs) if multi else outs[0]
