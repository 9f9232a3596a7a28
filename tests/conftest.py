"""Shared test configuration: hypothesis profiles.

``ci`` (default) is quick and derandomized so CI is reproducible; ``thorough`` runs many more
examples: ``uv run pytest --hypothesis-profile thorough`` or NKIGEN_HYPOTHESIS_PROFILE=thorough.
``long`` runs 10,000 examples per property, meant for the end-to-end properties (about an hour
on 2 cores, one process per property; see README). ``NKIGEN_HYPOTHESIS_EXAMPLES=N`` overrides
the example count of any profile (a shortened long run).
"""

import os

from hypothesis import HealthCheck, settings

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
