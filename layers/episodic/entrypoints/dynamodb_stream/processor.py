"""What happens after a timeline item or an audit record is written: DynamoDB Streams.

The timeline is the source of truth; everything here follows from its changes
(NEW_AND_OLD_IMAGES):

* INSERT/MODIFY of an episode -> the recall projection (OpenSearch, when configured)
  upserts it, so recall sees status changes, corrections and approvals;
* REMOVE of an episode by **TTL** (``userIdentity.type == "Service"`` and
  ``principalId == "dynamodb.amazonaws.com"``) -> a compressed record of the expired episode
  goes to the S3 cold archive and an audit record says when, why and what it held (type,
  times, content hash, archive key -- never the text), by the same rule as the local sweep
  (:class:`~episodic.application.usecases.expiry.Expiry`); the projection drops it;
* REMOVE by anyone else (erasure, a denied review) -> the projection drops it; the use case
  that deleted it has already written its own audit record and cleaned the archive.

The audit table's stream (NEW_IMAGE) comes to the same function: every new audit record that
is a memory event (:func:`~episodic.domain.model.event_of`) is told to the configured sender
(EventBridge); the audit table is the outbox, and a record whose event could not be told is
reported as failed and delivered again, with the same event id.

The tables' item layouts are the DynamoDB adapter's: readers given by the composition root say
which images are episodes and which are audit records.

Processing is idempotent, because streams deliver at least once: the archive key is fixed
by the episode, and the expiry audit record's id is derived from the stream record's id, so
a redelivered record finds its audit record already written (a create-once conflict) and
stops there.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any, Protocol

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord
from ulid import ULID

from episodic.application.ports import EventSender, RecallProjection, StoredEpisode
from episodic.application.usecases.expiry import Expiry, ExpiryOutcome
from episodic.domain.model import AuditRecord, Episode, SystemActor, event_of
from episodic.domain.model.events import ActorShown
from episodic.logs import service_logger

TTL_PRINCIPAL = "dynamodb.amazonaws.com"

logger = service_logger("episodic-stream")


class PoisonRecordError(ValueError):
    """The record cannot be understood; retrying will not help (reported, never silently dropped)."""


class TimelineImages(Protocol):
    """Reads a stream image: the episode it holds (with its vector), or None for another item.
    Raises ``ValueError`` for an episode item that does not parse."""

    def read(self, image: dict[str, Any] | None) -> StoredEpisode | None: ...


def is_ttl_removal(record: DynamoDBRecord) -> bool:
    identity = record.user_identity or {}
    return identity.get("type") == "Service" and identity.get("principalId") == TTL_PRINCIPAL


class AuditImages(Protocol):
    """Reads a stream image: the audit record it holds, or None for another item. Raises
    ``ValueError`` for an audit item that does not parse."""

    def read(self, image: dict[str, Any] | None) -> AuditRecord | None: ...


class TimelineStreamProcessor:
    def __init__(
        self,
        *,
        images: TimelineImages,
        expiry: Expiry,
        projection: RecallProjection | None = None,
        audit_images: AuditImages | None = None,
        events: EventSender | None = None,
        shown: ActorShown = "pseudonym",
    ) -> None:
        """``audit_images`` and ``events``: tell the audit stream's memory events to ``events``."""
        self.images = images
        self.expiry = expiry
        self.projection = projection
        self.audit_images, self.events, self.shown = audit_images, events, shown

    def _read(self, image: dict[str, Any] | None) -> StoredEpisode | None:
        try:
            return self.images.read(image)
        except ValueError as exc:
            raise PoisonRecordError(str(exc)) from exc

    def process(self, record: DynamoDBRecord) -> str:
        """Handle one stream record; returns what was done (for logs and tests)."""
        stream = record.dynamodb
        if stream is None:
            raise PoisonRecordError("record has no dynamodb section")
        name = record.event_name.name if record.event_name else ""
        if name == "INSERT" and self.audit_images is not None:
            audit = self._audit(stream.new_image)
            if audit is not None:
                return self._tell(audit)
        if name in ("INSERT", "MODIFY"):
            stored = self._read(stream.new_image)
            if stored is None:
                return "ignored"
            if self.projection is not None:
                self.projection.upsert(stored.episode, stored.vector, embedder=stored.embedder)
            return "indexed"
        if name == "REMOVE":
            stored = self._read(stream.old_image)
            if stored is None:
                return "ignored"
            episode = stored.episode
            if self.projection is not None:
                self.projection.remove(episode.tenant_id, episode.event_id)
            if is_ttl_removal(record):
                return self._record_expiry(record, episode)
            return "unindexed"
        raise PoisonRecordError(f"unknown stream event {name!r}")

    def _audit(self, image: dict[str, Any] | None) -> AuditRecord | None:
        assert self.audit_images is not None
        try:
            return self.audit_images.read(image)
        except ValueError as exc:
            raise PoisonRecordError(str(exc)) from exc

    def _tell(self, record: AuditRecord) -> str:
        """The memory event of a new audit record, to the sender (a failure raises: retried)."""
        event = event_of(record, None, self.shown)
        if event is None or self.events is None:
            return "audited"
        self.events.send([event])
        return f"told {event.type.value}"

    def _record_expiry(self, record: DynamoDBRecord, episode: Episode) -> str:
        assert record.dynamodb is not None
        stamp = record.dynamodb.approximate_creation_date_time  # epoch seconds, when TTL removed it
        removed_at = datetime.fromtimestamp(int(stamp), UTC) if stamp is not None else datetime.now(UTC)
        digest = hashlib.sha256(f"expired:{record.event_id}".encode()).digest()[:10]
        audit_id = str(ULID.from_bytes(bytes(ULID.from_datetime(removed_at))[:6] + digest))
        outcome = self.expiry.record_expiry(
            episode, removed_at, by=SystemActor.DYNAMODB_TTL, audit_id=audit_id, removed=True,
            streamEventId=record.event_id or "",
        )  # fmt: skip
        if outcome is ExpiryOutcome.ALREADY_RECORDED:
            logger.info("expiry already recorded", event_id=episode.event_id, stream_event_id=record.event_id)
        return outcome.value


def process_batch(
    event: dict[str, Any], processor: TimelineStreamProcessor, context: Any = None
) -> PartialItemFailureResponse:
    """A Lambda batch of stream records through ``processor``, failed records reported by their
    sequence number so only they are retried: the body of the stream function
    (``functions.stream``), and what ``episodic serve --backend aws-local``'s poller runs."""

    def record_handler(record: DynamoDBRecord) -> str:
        outcome = processor.process(record)
        logger.info(
            "stream record", outcome=outcome, event_name=str(record.event_name), stream_event_id=record.event_id
        )
        return outcome

    batch = BatchProcessor(event_type=EventType.DynamoDBStreams)
    return process_partial_response(event=event, record_handler=record_handler, processor=batch, context=context)
