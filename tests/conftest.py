"""Shared test configuration: hypothesis profiles.

``ci`` (default) is quick and derandomized so CI is reproducible; ``thorough`` runs many more
examples: ``uv run pytest --hypothesis-profile thorough`` or NKIGEN_HYPOTHESIS_PROFILE=thorough.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=25, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "thorough", max_examples=400, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("NKIGEN_HYPOTHESIS_PROFILE", "ci"))
