"""The EventBridge ingestion Lambda: EventBridge rule -> SQS queue -> this handler.

The queue sits between EventBridge and the function so that a failing write is retried
per event and, once retries are exhausted, parked in the queue's dead-letter queue instead
of lost. Each SQS record's body is one EventBridge event, as EventBridge delivers it.

Powertools' :class:`BatchProcessor` reports failures per record (``batchItemFailures``;
the event source mapping needs ``ReportBatchItemFailures``), so one bad record never
blocks or drops the others:

* a *rejected* event (unknown source, malformed, tenant override, ...) can never succeed,
  so it is logged with its reason and counts as processed -- retrying would only clog the
  queue and end in the dead-letter queue with nothing to fix there;
* a policy ``deny`` is a decision, already audited by the service, not a failure;
* transient errors (:class:`~episodic.errors.StorageError`,
  :class:`~episodic.errors.WritesDisabledError`) and anything unexpected propagate, so
  only that record is reported and redelivered. Redelivery is safe: the idempotency key
  comes from the EventBridge event id.
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from episodic.errors import EpisodicError
from episodic.ingest import EventIngestor, IngestOutcome, load_mapping

logger = Logger(service="episodic-events")
processor = BatchProcessor(event_type=EventType.SQS)

_ingestor: EventIngestor | None = None


def get_ingestor() -> EventIngestor:
    """The ingestion function's composition root, built on first use from ``EPISODIC_*``
    settings (overridable with :func:`set_ingestor`): the mapping file and the service."""
    global _ingestor
    if _ingestor is None:
        from episodic.adapters.compose import build_service
        from episodic.settings import Settings

        settings = Settings.from_env()
        if settings.ingest_mapping is None:
            raise RuntimeError("EPISODIC_INGEST_MAPPING must name the ingestion mapping file")
        _ingestor = EventIngestor(load_mapping(settings.ingest_mapping), build_service(settings))
    return _ingestor


def set_ingestor(ingestor: EventIngestor | None) -> None:
    global _ingestor
    _ingestor = ingestor


def record_handler(record: SQSRecord) -> str:
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


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
