"""The governance ports: reviews waiting for a human (and the workflow around them), the
append-only audit log, per-tenant switches and the review workflow's task tokens."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from episodic.domain.chain import Head, Unreadable
from episodic.domain.model import AuditAction, AuditRecord, Episode, Review, ReviewStatus


@dataclass(frozen=True)
class ReviewChange:
    """Closes a review; applies only if it is still pending."""

    review_id: str
    status: ReviewStatus
    decided_at: datetime
    reviewer: str
    note: str | None


@dataclass(frozen=True)
class AuditQuery:
    tenant_id: str
    event_id: str | None = None
    action: AuditAction | None = None
    since: datetime | None = None
    limit: int = 100
    cursor: str | None = None
    newest_first: bool = False


class ReviewQueue(Protocol):
    """Reviews waiting for (or closed by) a human; opened and closed through the store's ``apply``."""

    def get_review(self, tenant_id: str, review_id: str) -> Review | None: ...

    def list_reviews(self, tenant_id: str, status: ReviewStatus | None, limit: int) -> list[Review]: ...

    def reviews_requested_before(self, before: datetime, limit: int) -> list[Review]:
        """Pending reviews of every tenant requested before ``before`` (for the timeout sweep)."""
        ...

    def reviews_of(self, tenant_id: str, event_ids: Collection[str], actor: str | None = None) -> list[Review]:
        """The tenant's reviews, in any status, of these episodes or of writes by ``actor`` (its
        pseudonym), for their erasure. Reviews are made at a human's pace, so a store may read all
        of a tenant's to find them."""
        ...


class AuditLog(Protocol):
    """The append-only record of every decision; appended through the store's ``apply``, which
    links each record into its tenant's hash chain (:mod:`episodic.domain.chain`)."""

    @property
    def chains(self) -> int:
        """How many chains the store keeps per tenant (shards ``0`` to ``chains - 1``)."""
        ...

    def audit(self, query: AuditQuery) -> tuple[list[AuditRecord], str | None]: ...

    def chain(self, tenant_id: str, shard: int) -> Iterator[AuditRecord | Unreadable]:
        """One of the tenant's chains, every record in the order it was stored."""
        ...

    def chain_heads(self, tenant_id: str) -> dict[int, Head]:
        """The newest link of each of the tenant's chains, as the store keeps them (none: no record yet)."""
        ...

    def audited_tenants(self) -> list[str]:
        """Every tenant with at least one audit record or a chain head (for a verification of the
        whole store: a tenant whose records were all removed keeps its head)."""
        ...


class ChainCheckpoints(Protocol):
    """Audit chain heads kept where the service's own roles cannot rewrite them (the AWS
    deployment: an S3 bucket under Object Lock), to verify the chains against."""

    def put(self, heads: Mapping[str, Mapping[int, Head]], at: datetime) -> str:
        """Keep every tenant's chain heads as they are at ``at``; where they were kept."""
        ...

    def latest(self, tenant_id: str) -> dict[int, Head]:
        """The tenant's heads as the newest checkpoint holds them (none kept yet: empty)."""
        ...


class TenantSettings(Protocol):
    """Per-tenant switches an operator flips (today: whether the tenant accepts writes)."""

    def writes_enabled(self, tenant_id: str) -> bool: ...

    def set_writes_enabled(self, tenant_id: str, enabled: bool, audit: AuditRecord) -> None: ...


class ReviewTokens(Protocol):
    """The Step Functions task token a waiting review workflow gave, kept with its review."""

    def attach_review_token(self, tenant_id: str, review_id: str, token: str) -> bool:
        """Store the token; False when the review is no longer pending (nothing waits then)."""
        ...

    def review_token(self, tenant_id: str, review_id: str) -> str | None: ...


class ReviewNotifier(Protocol):
    """The review workflow around the review queue: a Step Functions execution waiting on a
    task token in AWS; the server log locally (the reviews table is the queue itself)."""

    def review_requested(self, review: Review, episode: Episode) -> None: ...

    def review_decided(self, review: Review) -> None:
        """The review was closed (``review.status``): let the waiting workflow finish."""
        ...
