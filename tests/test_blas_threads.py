"""The suite runs NumPy's bundled OpenBLAS on one thread (tests/conftest.py) unless
OPENBLAS_NUM_THREADS says otherwise."""

from __future__ import annotations

import ctypes
import glob
import os

import numpy as np
import pytest


def test_blas_runs_on_one_thread():
    if "OPENBLAS_NUM_THREADS" in os.environ:
        pytest.skip("OPENBLAS_NUM_THREADS set by the caller")
    libs = glob.glob(os.path.join(os.path.dirname(os.path.dirname(np.__file__)), "numpy.libs", "*openblas*"))
    get = next(
        (
            getattr(ctypes.CDLL(p), n)
            for p in libs
            for n in (
                "scipy_openblas_get_num_threads64_",
                "scipy_openblas_get_num_threads",
                "openblas_get_num_threads",
            )
            if hasattr(ctypes.CDLL(p), n)
        ),
        None,
    )
    if get is None:
        pytest.skip("NumPy bundles no OpenBLAS here")
    assert get() == 1
