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
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from episodic.application.ports import ReviewTokens
from episodic.application.service import MemoryService

logger = Logger(service="episodic-workflows")
review_queue = BatchProcessor(event_type=EventType.SQS)


@dataclass(frozen=True)
class WorkflowRoot:
    """What the workflow functions use: the service, the review tokens kept with the reviews,
    and the Step Functions client that completes a waiting review."""

    service: MemoryService
    review_tokens: ReviewTokens
    stepfunctions: Any


_root: WorkflowRoot | None = None


def get_root() -> WorkflowRoot:
    """The workflow functions' composition root, built on first use from ``EPISODIC_*``
    settings (overridable with :func:`set_root`). The workflows run in AWS only."""
    global _root
    if _root is None:
        import boto3

        from episodic.application.settings import Settings
        from episodic.bootstrap.aws import review_tokens_from_settings, service_from_settings

        settings = Settings.from_env()
        _root = WorkflowRoot(
            service=service_from_settings(settings),
            review_tokens=review_tokens_from_settings(settings),
            stepfunctions=boto3.client("stepfunctions", region_name=settings.aws_region),
        )
    return _root


def set_root(root: WorkflowRoot | None) -> None:
    global _root
    _root = root


def _review_request(record: SQSRecord) -> str:
    from episodic.adapters.stepfunctions.review_workflow import complete_task

    body = json.loads(record.body)
    root = get_root()
    if root.review_tokens.attach_review_token(body["tenantId"], body["reviewId"], body["taskToken"]):
        logger.info("review waiting", review_id=body["reviewId"], tenant_id=body["tenantId"], reasons=body["reasons"])
        return "waiting"
    review = root.service.deps.reviews.get_review(body["tenantId"], body["reviewId"])
    if review is not None:
        complete_task(root.stepfunctions, body["taskToken"], review)
    return "completed"


@logger.inject_lambda_context
def review_requests_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return process_partial_response(
        event=event, record_handler=_review_request, processor=review_queue, context=context
    )


@logger.inject_lambda_context
def expire_review_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    outcome = get_root().service.reviews.expire_review(event["tenantId"], event["reviewId"])
    logger.info("review timeout", review_id=event["reviewId"], outcome=outcome)
    return {"reviewId": event["reviewId"], "outcome": outcome}


@logger.inject_lambda_context
def find_busy_actors_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    now = datetime.fromisoformat(event["now"].replace("Z", "+00:00"))
    return {
        "actors": [a.model_dump(mode="json", by_alias=True) for a in get_root().service.summarisation.busy_actors(now)]
    }


@logger.inject_lambda_context
def summarise_actor_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    result = get_root().service.summarisation.summarise_actor(
        event["tenantId"],
        event["actorId"],
        datetime.fromisoformat(event["windowStart"]),
        datetime.fromisoformat(event["windowEnd"]),
    )
    return {"tenantId": event["tenantId"], "actorId": event["actorId"], "decision": result.decision.value,
            "eventId": result.event_id, "reasons": result.reasons}  # fmt: skip


@logger.inject_lambda_context
def forget_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    report = get_root().service.archival.forget(dry_run=bool(event.get("dryRun")), cursor=event.get("cursor"))
    logger.info("decay sweep page", examined=report.examined, archived=len(report.archived))
    return {"archived": len(report.archived), "more": report.next_cursor is not None, "cursor": report.next_cursor}


@logger.inject_lambda_context
def audit_checkpoint_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Keep every tenant's audit chain heads in the Object Lock bucket (the schedule calls it)."""
    key = get_root().service.proof.checkpoint()
    logger.info("audit chain heads kept", key=key)
    return {"key": key}
