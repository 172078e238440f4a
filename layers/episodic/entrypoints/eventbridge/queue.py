"""The ingestion queue's batch: SQS records, each one EventBridge event, through the
:class:`~episodic.application.usecases.ingestion.EventIngestor` -- the body of the ingestion function
(``functions.events``), and what ``episodic serve --backend aws-local``'s queue poller runs.

Powertools' :class:`BatchProcessor` reports failures per record (``batchItemFailures``), so one
bad record never blocks or drops the others:

* a *rejected* event (unknown source, malformed, tenant override, ...) can never succeed, so it
  is logged with its reason and counts as processed -- retrying would only clog the queue;
* a policy ``deny`` is a decision, already audited by the service, not a failure;
* transient errors (:class:`~episodic.domain.errors.StorageError`,
  :class:`~episodic.domain.errors.WritesDisabledError`) and anything unexpected propagate, so only that
  record is reported and redelivered. Redelivery is safe: the idempotency key comes from the
  EventBridge event id.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from episodic.application.usecases.ingestion import EventIngestor, IngestOutcome
from episodic.domain.errors import EpisodicError
from episodic.logs import service_logger

logger = service_logger("episodic-events")


def process_queue_batch(
    event: dict[str, Any], get_ingestor: Callable[[], EventIngestor], context: Any = None
) -> PartialItemFailureResponse:
    """An SQS batch; ``get_ingestor`` is called only once a record's body parses (a malformed
    body needs no service)."""

    def record_handler(record: SQSRecord) -> str:
        return ingest_record(record, get_ingestor)

    batch = BatchProcessor(event_type=EventType.SQS)
    return process_partial_response(event=event, record_handler=record_handler, processor=batch, context=context)


def ingest_record(record: SQSRecord, get_ingestor: Callable[[], EventIngestor]) -> str:
    """Ingest one SQS record; raise only for errors a redelivery may cure, after logging why."""
    try:
        event = json.loads(record.body)
    except ValueError:
        event = None
    envelope = event if isinstance(event, dict) else {}
    # Identifiers and reason codes only: the payload may hold personal data.
    fields: dict[str, Any] = {
        "message_id": record.message_id,
        "event_id": envelope.get("id"),
        "event_source": envelope.get("source"),
        "detail_type": envelope.get("detail-type"),
    }
    if event is None:
        outcome = IngestOutcome.rejected("malformed:body")
    else:
        try:
            outcome = get_ingestor().ingest(event)
        except EpisodicError as exc:
            logger.warning("event will be retried", extra=fields | {"error": exc.code})
            raise
        except Exception:
            logger.exception("event failed unexpectedly and will be retried", extra=fields)
            raise
    fields["outcome"] = outcome.status
    if outcome.result is None:
        # A warning: the event is dropped for good, and a tenant_override is a security signal.
        logger.warning("event rejected", extra=fields | {"reason": outcome.reason})
    else:
        result = outcome.result
        fields |= {
            "reasons": result.reasons,
            "policy_version": result.policy_version,
            "episode_id": result.event_id,
            "review_id": result.review_id,
        }
        logger.info("event ingested", extra=fields)
    return outcome.status
