"""Fixtures for the NKI simulator tests: the simulated modules, installed for one test."""

import pytest

from nkigen_lite.nki_sim import installed


@pytest.fixture
def nk():
    """(nki, nki.language, nki.isa) of the simulator, installed for the duration of the test."""
    with installed():
        import nki
        import nki.isa as nisa
        import nki.language as nl

        yield nki, nl, nisa
