"""The in-process sweep: forget what retention says must go and time out stale reviews.

The local service runs it on a schedule; in AWS, DynamoDB TTL (through the stream) and the
review workflow's timeout do the same work."""

from __future__ import annotations

from datetime import timedelta

from episodic.application.usecases.archival import Archival
from episodic.application.usecases.deps import Deps
from episodic.application.usecases.reviews import Reviews
from episodic.domain.model import SweepReport


class Sweep:
    def __init__(self, deps: Deps, archival: Archival, reviews: Reviews) -> None:
        self.deps, self.archival, self.reviews = deps, archival, reviews

    def sweep(self, limit: int = 500) -> SweepReport:
        """Expire up to ``limit`` episodes and deny up to ``limit`` reviews pending longer than
        the settings' review timeout (default: deny)."""
        now = self.deps.clock.now()
        expired = self.archival.expire(now, limit)
        stale_before = now - timedelta(days=self.deps.settings.review_timeout_days)
        return SweepReport(expired=expired, reviews_timed_out=self.reviews.time_out(stale_before, limit))
