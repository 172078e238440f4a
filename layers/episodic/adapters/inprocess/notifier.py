"""The local review queue's notification: the reviews table is the queue; this tells operators.

In AWS a Step Functions task token carries the review; locally pending reviews live in
SQLite (listed by ``GET /v1/reviews``) and each new one is announced on the server log.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger

from episodic.domain.model import Episode, Review
from episodic.logs import service_logger


class LogReviewNotifier:
    def __init__(self, logger: Logger | None = None) -> None:
        self.logger = logger or service_logger("episodic-review")

    def review_requested(self, review: Review, episode: Episode) -> None:
        self.logger.info(
            "review requested",
            review_id=review.review_id,
            tenant_id=review.tenant_id,
            event_id=episode.event_id,
            reasons=review.reasons,
        )

    def review_decided(self, review: Review) -> None:
        self.logger.info("review closed", review_id=review.review_id, tenant_id=review.tenant_id, status=review.status)
