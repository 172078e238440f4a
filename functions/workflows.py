"""Lambda entry points behind the Step Functions workflows (statemachines/).

Each handler does the real logic of one task and nothing else: the machines do the waiting,
the fan-out and the retries.

* ``review_requests_handler`` -- consumes the review queue (SQS, batch with partial failures):
  keeps each task token on its review, or completes it at once if the review was decided first.
* ``expire_review_handler`` -- ``ExpireReview``: a review that timed out is denied by default.
* ``find_busy_actors_handler`` / ``summarise_actor_handler`` -- the 24-hour summarisation.
* ``forget_handler`` -- one page of the relevance-decay sweep.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from episodic.ports import Summariser
from functions.api import get_service

logger = Logger(service="episodic-workflows")
review_queue = BatchProcessor(event_type=EventType.SQS)

_summariser: Summariser | None = None


def get_summariser() -> Summariser:
    """Bedrock when ``EPISODIC_SUMMARY_MODEL_ID`` is set (falling back to the extractive summariser
    for any digest that fails its grounding check), else extractive only."""
    global _summariser
    if _summariser is None:
        import os

        from episodic.adapters.local.summariser import ExtractiveSummariser
        from episodic.summaries import GroundedFallbackSummariser

        extractive = ExtractiveSummariser(get_service().embedder)
        model = os.environ.get("EPISODIC_SUMMARY_MODEL_ID")
        if model:
            import boto3

            from episodic.adapters.aws.bedrock_summariser import ConverseSummariser

            _summariser = GroundedFallbackSummariser(
                ConverseSummariser(boto3.client("bedrock-runtime"), model_id=model), extractive
            )
        else:
            _summariser = extractive
    return _summariser


def set_summariser(summariser: Summariser | None) -> None:
    global _summariser
    _summariser = summariser


def _review_request(record: SQSRecord) -> str:
    from episodic.adapters.aws.review_workflow import complete_task

    body = json.loads(record.body)
    service = get_service()
    store = service.store
    if store.attach_review_token(body["tenantId"], body["reviewId"], body["taskToken"]):  # type: ignore[attr-defined]
        logger.info("review waiting", review_id=body["reviewId"], tenant_id=body["tenantId"], reasons=body["reasons"])
        return "waiting"
    review = store.get_review(body["tenantId"], body["reviewId"])
    if review is not None:
        import boto3

        complete_task(boto3.client("stepfunctions"), body["taskToken"], review)
    return "completed"


@logger.inject_lambda_context
def review_requests_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return process_partial_response(
        event=event, record_handler=_review_request, processor=review_queue, context=context
    )


@logger.inject_lambda_context
def expire_review_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    outcome = get_service().expire_review(event["tenantId"], event["reviewId"])
    logger.info("review timeout", review_id=event["reviewId"], outcome=outcome)
    return {"reviewId": event["reviewId"], "outcome": outcome}


@logger.inject_lambda_context
def find_busy_actors_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    now = datetime.fromisoformat(event["now"].replace("Z", "+00:00"))
    return {"actors": get_service().busy_actors(now)}


@logger.inject_lambda_context
def summarise_actor_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    result = get_service().summarise_actor(
        get_summariser(),
        event["tenantId"],
        event["actorId"],
        datetime.fromisoformat(event["windowStart"]),
        datetime.fromisoformat(event["windowEnd"]),
    )
    return {"tenantId": event["tenantId"], "actorId": event["actorId"], "decision": result.decision.value,
            "eventId": result.event_id, "reasons": result.reasons}  # fmt: skip


@logger.inject_lambda_context
def forget_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    report = get_service().forget(dry_run=bool(event.get("dryRun")), cursor=event.get("cursor"))
    logger.info("decay sweep page", examined=report.examined, archived=len(report.archived))
    return {"archived": len(report.archived), "more": report.next_cursor is not None, "cursor": report.next_cursor}
