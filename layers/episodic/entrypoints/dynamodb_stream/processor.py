"""What happens after a timeline item changes: DynamoDB Streams (NEW_AND_OLD_IMAGES).

The timeline is the source of truth; everything here follows from its changes:

* INSERT/MODIFY of an episode -> the recall projection (OpenSearch, when configured)
  upserts it, so recall sees status changes, corrections and approvals;
* REMOVE of an episode by **TTL** (``userIdentity.type == "Service"`` and
  ``principalId == "dynamodb.amazonaws.com"``) -> a compressed record of the expired episode
  goes to the S3 cold archive and an audit record says when, why and what it held (type,
  times, content hash, archive key -- never the text); the projection drops it. A digest is
  not archived (see :mod:`episodic.domain.forgetting.expiry`), only audited;
* REMOVE by anyone else (erasure, a denied review) -> the projection drops it; the use case
  that deleted it has already written its own audit record and cleaned the archive.

Processing is idempotent, because streams deliver at least once: the archive key is fixed
by the episode, and the expiry audit record's id is derived from the stream record's id, so
a redelivered record finds its audit record already written (a create-once conflict) and
stops there.
"""

from __future__ import annotations

import base64
import hashlib
from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord
from ulid import ULID

from episodic.adapters.codec import plain_numbers, unpack_vector
from episodic.adapters.dynamodb.tables import EPISODE_SK
from episodic.application.ports import Changes, ColdArchive, EpisodeStore, RecallProjection
from episodic.domain.errors import ConflictError
from episodic.domain.forgetting.expiry import archived_on_expiry, expiry_detail
from episodic.domain.model import AuditRecord, Episode
from episodic.logs import service_logger

TTL_PRINCIPAL = "dynamodb.amazonaws.com"

logger = service_logger("episodic-stream")


class PoisonRecordError(ValueError):
    """The record cannot be understood; retrying will not help (reported, never silently dropped)."""


def _episode_of(image: dict[str, Any] | None) -> Episode | None:
    if not image or image.get("sk") != EPISODE_SK:
        return None
    try:
        return Episode.model_validate(plain_numbers(image["ep"]))
    except (KeyError, ValueError) as exc:
        raise PoisonRecordError(f"episode image does not parse: {type(exc).__name__}") from exc


def _vector_of(image: dict[str, Any]) -> bytes | None:
    """The stored float32 vector. Lambda delivers binary attributes base64-encoded."""
    raw = image.get("vec")
    if raw is None:
        return None
    if isinstance(raw, str):
        return base64.b64decode(raw)
    return bytes(getattr(raw, "value", raw))


def is_ttl_removal(record: DynamoDBRecord) -> bool:
    identity = record.user_identity or {}
    return identity.get("type") == "Service" and identity.get("principalId") == TTL_PRINCIPAL


class TimelineStreamProcessor:
    def __init__(
        self, *, store: EpisodeStore, archive: ColdArchive, projection: RecallProjection | None = None
    ) -> None:
        self.store = store
        self.archive = archive
        self.projection = projection

    def process(self, record: DynamoDBRecord) -> str:
        """Handle one stream record; returns what was done (for logs and tests)."""
        stream = record.dynamodb
        if stream is None:
            raise PoisonRecordError("record has no dynamodb section")
        name = record.event_name.name if record.event_name else ""
        if name in ("INSERT", "MODIFY"):
            episode = _episode_of(stream.new_image)
            if episode is None:
                return "ignored"
            if self.projection is not None:
                image = stream.new_image or {}
                raw = _vector_of(image)
                vector = None if raw is None else unpack_vector(raw).tolist()
                self.projection.upsert(episode, vector, embedder=image.get("embedder"))
            return "indexed"
        if name == "REMOVE":
            episode = _episode_of(stream.old_image)
            if episode is None:
                return "ignored"
            if self.projection is not None:
                self.projection.remove(episode.tenant_id, episode.event_id)
            if is_ttl_removal(record):
                return self._archive_expired(record, episode)
            return "unindexed"
        raise PoisonRecordError(f"unknown stream event {name!r}")

    def _archive_expired(self, record: DynamoDBRecord, episode: Episode) -> str:
        assert record.dynamodb is not None
        stamp = record.dynamodb.approximate_creation_date_time  # epoch seconds, when TTL removed it
        removed_at = datetime.fromtimestamp(int(stamp), UTC) if stamp is not None else datetime.now(UTC)
        key = self.archive.put(episode, "retention_expired", removed_at) if archived_on_expiry(episode) else None
        digest = hashlib.sha256(f"expired:{record.event_id}".encode()).digest()[:10]
        audit_id = str(ULID.from_bytes(bytes(ULID.from_datetime(removed_at))[:6] + digest))
        audit = AuditRecord(
            audit_id=audit_id,
            tenant_id=episode.tenant_id,
            at=removed_at,
            action="episode.expired",
            principal_id="system:dynamodb-ttl",
            event_id=episode.event_id,
            policy_version=episode.policy_version,
            detail={k: v for k, v in expiry_detail(episode, key).items() if v is not None}
            | {"streamEventId": record.event_id},
        )
        try:
            self.store.apply(Changes(tenant_id=episode.tenant_id, audit=[audit]))
        except ConflictError:
            logger.info("expiry already recorded", event_id=episode.event_id, stream_event_id=record.event_id)
            return "already_archived"
        return "archived" if key is not None else "expired_unarchived"


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
