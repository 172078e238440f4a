"""The two hypothesis tiers every property-based and fuzzing test shares.

``make test`` runs the default profile: derandomized, bounded, no example database on disk.
``make test-fuzz`` sets ``HYPOTHESIS_PROFILE=fuzz`` and runs the ``fuzz``-marked tests with
fresh randomness. Neither shrinks: shrinking replays whole worlds through the real model
(minutes per step), so failures are collected with their exact reproducer instead.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)
_COMMON = {
    "database": None,
    "deadline": None,
    "print_blob": True,
    "phases": NO_SHRINK,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
}
settings.register_profile("e2e-default", derandomize=True, **_COMMON)
settings.register_profile("fuzz", derandomize=False, **_COMMON)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "e2e-default")
settings.load_profile(PROFILE)
FUZZ_SELECTED = PROFILE == "fuzz"
