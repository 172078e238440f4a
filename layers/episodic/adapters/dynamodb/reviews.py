""":class:`~episodic.application.ports.ReviewQueue` and :class:`~episodic.application.ports.ReviewTokens` on DynamoDB.

Reviews are opened and closed through :meth:`~episodic.application.ports.EpisodeStore.apply` (see
:mod:`~episodic.adapters.dynamodb.items`); here they are read -- by id, by status
(``by_review_status``), pending past a time (``pending_reviews``, every tenant) -- and the
Step Functions task token of a waiting review workflow is kept on the review item.
"""

from __future__ import annotations

import sys
from collections.abc import Collection
from datetime import datetime

from botocore.exceptions import ClientError

from episodic.adapters.dynamodb import tables as t
from episodic.adapters.dynamodb.database import Database, condition_failed, review_of, storage_errors, to_item
from episodic.domain.errors import StorageError
from episodic.domain.model import Review, ReviewStatus

REVIEW_STATUSES = tuple(ReviewStatus)


class ReviewReads:
    """The review queue and the review workflow's task tokens."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @storage_errors("read")
    def get_review(self, tenant_id: str, review_id: str) -> Review | None:
        response = self.db.client.get_item(TableName=self.db.table, Key=to_item(t.review_key(tenant_id, review_id)))
        item = response.get("Item")
        return review_of(item) if item else None

    @storage_errors("read")
    def list_reviews(self, tenant_id: str, status: ReviewStatus | None, limit: int) -> list[Review]:
        reviews: list[Review] = []
        for state in [status] if status else REVIEW_STATUSES:
            query = {
                "IndexName": t.BY_REVIEW_STATUS.name,
                "KeyConditionExpression": f"{t.BY_REVIEW_STATUS.pk} = :pk",
                "ExpressionAttributeValues": to_item({":pk": t.review_status_pk(tenant_id, state)}),
            }
            for item in self.db.query(**query):
                reviews.append(review_of(item))
                if len(reviews) >= limit and status:
                    break
        reviews.sort(key=lambda r: r.requested_at)
        return reviews[:limit]

    @storage_errors("read")
    def reviews_of(self, tenant_id: str, event_ids: Collection[str], actor: str | None = None) -> list[Review]:
        wanted = set(event_ids)
        reviews = self.list_reviews(tenant_id, None, sys.maxsize)
        return [r for r in reviews if r.event_id in wanted or (actor is not None and r.actor == actor)]

    @storage_errors("read")
    def reviews_requested_before(self, before: datetime, limit: int) -> list[Review]:
        query = {
            "IndexName": t.PENDING_REVIEWS.name,
            "KeyConditionExpression": f"{t.PENDING_REVIEWS.pk} = :pk AND {t.PENDING_REVIEWS.sk} < :before",
            "ExpressionAttributeValues": to_item({":pk": t.PENDING_REVIEWS_PK, ":before": t.iso(before)}),
        }
        reviews = []
        for item in self.db.query(**query):
            reviews.append(review_of(item))
            if len(reviews) == limit:
                break
        return reviews

    @storage_errors("write")
    def attach_review_token(self, tenant_id: str, review_id: str, token: str) -> bool:
        """Keep the Step Functions task token on the review so the decision can complete it.
        False when the review is no longer pending (the token is then of no use)."""
        try:
            self.db.client.update_item(
                TableName=self.db.table,
                Key=to_item(t.review_key(tenant_id, review_id)),
                UpdateExpression="SET taskToken = :t",
                ConditionExpression="st = :pending",
                ExpressionAttributeValues=to_item({":t": token, ":pending": ReviewStatus.PENDING}),
            )
            return True
        except ClientError as exc:
            if condition_failed(exc):
                return False
            raise StorageError("could not record the review task token") from exc

    @storage_errors("read")
    def review_token(self, tenant_id: str, review_id: str) -> str | None:
        response = self.db.client.get_item(TableName=self.db.table, Key=to_item(t.review_key(tenant_id, review_id)))
        return response.get("Item", {}).get("taskToken", {}).get("S")
