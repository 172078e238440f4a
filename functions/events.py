"""The EventBridge ingestion Lambda: EventBridge rule -> SQS queue -> this handler.

The queue sits between EventBridge and the function so that a failing write is retried
per event and, once retries are exhausted, parked in the queue's dead-letter queue instead
of lost. Each SQS record's body is one EventBridge event, as EventBridge delivers it. The
batch's body, and what a rejected event, a denial or a transient error each lead to, is
:func:`episodic.entrypoints.eventbridge.queue.process_queue_batch` (the event source mapping needs
``ReportBatchItemFailures``).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.typing import LambdaContext

from episodic.application.usecases.ingestion import EventIngestor, load_mapping
from episodic.entrypoints.eventbridge.queue import process_queue_batch

logger = Logger(service="episodic-events")

_ingestor: EventIngestor | None = None


def get_ingestor() -> EventIngestor:
    """The ingestion function's composition root, built on first use from ``EPISODIC_*``
    settings (overridable with :func:`set_ingestor`): the mapping file and the service."""
    global _ingestor
    if _ingestor is None:
        from episodic.application.settings import Settings
        from episodic.bootstrap.compose import build_service

        settings = Settings.from_env()
        if settings.ingest_mapping is None:
            raise RuntimeError("EPISODIC_INGEST_MAPPING must name the ingestion mapping file")
        _ingestor = EventIngestor(load_mapping(settings.ingest_mapping), build_service(settings))
    return _ingestor


def set_ingestor(ingestor: EventIngestor | None) -> None:
    global _ingestor
    _ingestor = ingestor


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return process_queue_batch(event, get_ingestor, context)
