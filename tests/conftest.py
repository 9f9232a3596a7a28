"""Shared test configuration: hypothesis profiles.

``ci`` (default) is quick and derandomized so CI is reproducible; ``thorough`` runs many more
examples: ``uv run pytest --hypothesis-profile thorough`` or NKIGEN_HYPOTHESIS_PROFILE=thorough.
``long`` runs 10,000 examples per property, meant for the end-to-end properties (about an hour
on 2 cores, one process per property; see README). ``NKIGEN_HYPOTHESIS_EXAMPLES=N`` overrides
the example count of any profile (a shortened long run).
"""

import ctypes
import glob
import os

import numpy as np
from hypothesis import HealthCheck, settings


def _blas_threads(n: int) -> bool:
    """Set the thread count of NumPy's bundled OpenBLAS (the interpreters' small matmuls:
    (128, 128) by (128, 512) products take ~2 ms on one thread and ~30 ms on several when the
    cores are shared); NumPy is already imported (pyproject's filterwarnings imports
    nkigen_lite), so the OPENBLAS_NUM_THREADS variable comes too late. False when NumPy
    bundles no OpenBLAS with that entry point. The split over threads never changes a product
    (OpenBLAS splits the output, not the sums)."""
    libs = os.path.join(os.path.dirname(os.path.dirname(np.__file__)), "numpy.libs", "*openblas*")
    for path in glob.glob(libs):
        lib = ctypes.CDLL(path)
        for name in (
            "scipy_openblas_set_num_threads64_",
            "scipy_openblas_set_num_threads",
            "openblas_set_num_threads",
        ):
            fn = getattr(lib, name, None)
            if fn is not None:
                fn(n)
                return True
    return False


if "OPENBLAS_NUM_THREADS" not in os.environ:
    _blas_threads(1)

settings.register_profile(
    "ci",
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "thorough",
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "long",
    max_examples=10_000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
_profile = os.environ.get("NKIGEN_HYPOTHESIS_PROFILE", "ci")
if os.environ.get("NKIGEN_HYPOTHESIS_EXAMPLES"):
    settings.register_profile(
        "override", settings.get_profile(_profile), max_examples=int(os.environ["NKIGEN_HYPOTHESIS_EXAMPLES"])
    )
    _profile = "override"
settings.load_profile(_profile)


def pytest_collection_modifyitems(config, items):
    """Tests marked ``slow`` (model-scale runs on the interpreters, tens of seconds each) run
    only with NKIGEN_SLOW=1 or the ``thorough`` profile: ``NKIGEN_SLOW=1 uv run pytest -m slow``."""
    if os.environ.get("NKIGEN_SLOW") == "1" or os.environ.get("NKIGEN_HYPOTHESIS_PROFILE") == "thorough":
        return
    import pytest

    skip = pytest.mark.skip(reason="slow: set NKIGEN_SLOW=1 to run")
    for item in items:
        if item.get_closest_marker("slow") is not None:
            item.add_marker(skip)


def pytest_sessionfinish(session, exitstatus):
    """The shared workload kernels (tests/workload_kernels.py) were only read: a test that
    changed one fails the session."""
    import sys

    mod = sys.modules.get("tests.workload_kernels")
    if mod is not None and mod.changed():
        print(f"\nshared workload kernels changed by a test: {mod.changed()} (tests/workload_kernels.py)")
        session.exitstatus = 1
