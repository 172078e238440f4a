"""Lambda entry point for the timeline's DynamoDB stream.

Powertools' BatchProcessor reports partial failures, so one bad record is retried (and,
with bisect-on-error and an on-failure destination, isolated) without blocking or
dropping the others.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.typing import LambdaContext

from episodic.entrypoints.dynamodb_stream.processor import TimelineStreamProcessor, process_batch

logger = Logger(service="episodic-stream")

_stream_processor: TimelineStreamProcessor | None = None


def get_stream_processor() -> TimelineStreamProcessor:
    """The stream function's composition root, built on first use from ``EPISODIC_*`` settings
    (overridable with :func:`set_stream_processor`)."""
    global _stream_processor
    if _stream_processor is None:
        from episodic.application.settings import Settings
        from episodic.bootstrap.aws import stream_processor_from_settings

        _stream_processor = stream_processor_from_settings(Settings.from_env())
    return _stream_processor


def set_stream_processor(stream_processor: TimelineStreamProcessor | None) -> None:
    global _stream_processor
    _stream_processor = stream_processor


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return process_batch(event, get_stream_processor(), context)
