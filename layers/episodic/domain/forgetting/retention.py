"""The retention score (0-10): how much an episode still deserves its place in memory.

Weights follow the design: access frequency 40%, tag weight 30%, age 20%, agent
feedback 10%. The relevance-decay sweep archives low scorers; recall and feedback keep
the score current.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime

from episodic.domain.model import Episode

ACCESS_SATURATION = 20
"""Accesses at which the access-frequency component reaches 1.0."""
AGE_HALF_LIFE_DAYS = 30.0


def retention_score(episode: Episode, now: datetime, tag_weights: Mapping[str, float] | None = None) -> float:
    access = min(math.log1p(episode.access_count) / math.log1p(ACCESS_SATURATION), 1.0)
    # A weight that is not a number (NaN) would make the score NaN: it counts as no weight.
    weights = [w for t in episode.tags if (w := (tag_weights or {}).get(t)) is not None and not math.isnan(w)]
    tag = max(weights) if weights else episode.importance
    age_days = max((now - episode.occurred_at).total_seconds(), 0.0) / 86400.0
    age = 0.5 ** (age_days / AGE_HALF_LIFE_DAYS)
    feedback = (episode.feedback_score + 1.0) / 2.0
    score = 10.0 * (0.4 * access + 0.3 * min(max(tag, 0.0), 1.0) + 0.2 * age + 0.1 * feedback)
    return round(min(max(score, 0.0), 10.0), 4)
