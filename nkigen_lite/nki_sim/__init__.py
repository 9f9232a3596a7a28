"""NumPy simulator of the NKI 0.6 subset nkigen_lite emits (``nki``, ``nki.language``, ``nki.isa``).

An independent implementation from the NKI interpreter (nkigen_lite/nki), derived from the
documented NKI semantics, so the two check each other. See docs/nki_sim.md.

    with nkigen_lite.nki_sim.installed():      # `import nki` now gives the simulator
        ...
    outputs = nkigen_lite.nki_sim.simulate(source_text, {"x": x})   # {"y": array}
"""

from .errors import NkiSimError
from .install import installed
from .runner import SimResult, simulate, simulate_detailed
from .runtime import SimStats

__all__ = ["NkiSimError", "installed", "simulate", "simulate_detailed", "SimResult", "SimStats"]
