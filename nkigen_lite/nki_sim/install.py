"""installed(): expose the simulator as the modules ``nki``, ``nki.language``, ``nki.isa`` and
``nki.collectives``.

Only inside the ``with`` block: on exit the previous ``sys.modules`` entries (a real Neuron SDK,
or nothing) are restored, even when the block raises, so the simulator never shadows a real
SDK outside it.
"""

from __future__ import annotations

import contextlib
import sys
import types

from . import collectives as _collectives
from . import isa as _isa
from . import jit as _jit
from . import language as _language

MODULE_NAMES = ("nki", "nki.language", "nki.isa", "nki.collectives")
_modules: dict[str, types.ModuleType] = {}


def _public_module(name: str, source: types.ModuleType, doc: str) -> types.ModuleType:
    mod = types.ModuleType(name, doc)
    for attr in source.__all__:
        setattr(mod, attr, getattr(source, attr))
    mod.__all__ = list(source.__all__)
    return mod


def simulator_modules() -> dict[str, types.ModuleType]:
    """The module objects installed() puts into sys.modules (built once)."""
    if not _modules:
        nl = _public_module("nki.language", _language, "NumPy simulation of nki.language (nkigen_lite).")
        nisa = _public_module("nki.isa", _isa, "NumPy simulation of nki.isa (nkigen_lite).")
        ncc = _public_module(
            "nki.collectives", _collectives, "NumPy simulation of nki.collectives (nkigen_lite)."
        )
        top = types.ModuleType("nki", "NumPy simulation of the nki package (nkigen_lite.nki_sim).")
        top.jit = _jit.jit
        top.simulate = _jit.simulate
        top.language = nl
        top.isa = nisa
        top.collectives = ncc
        top.__all__ = ["jit", "simulate", "language", "isa", "collectives"]
        _modules.update({"nki": top, "nki.language": nl, "nki.isa": nisa, "nki.collectives": ncc})
    return _modules


@contextlib.contextmanager
def installed():
    """Context manager: ``import nki`` (and nki.language / nki.isa) yields the simulator inside it."""
    saved = {name: sys.modules[name] for name in MODULE_NAMES if name in sys.modules}
    try:
        sys.modules.update(simulator_modules())
        yield simulator_modules()["nki"]
    finally:
        for name in MODULE_NAMES:
            if name in saved:
                sys.modules[name] = saved[name]
            else:
                sys.modules.pop(name, None)
