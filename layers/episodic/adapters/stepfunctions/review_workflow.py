"""The review workflow in AWS: a Step Functions execution per review, waiting on a task token.

* :meth:`review_requested` starts ``statemachines/review.asl.json`` (execution name = the
  review id, so a retried start is refused as a duplicate rather than run twice). The
  machine sends the review view and its task token to the review queue, whose consumer
  (``functions/workflows.review_requests_handler``) keeps the token on the review item.
* :meth:`review_decided` completes the waiting task once the API has applied the decision:
  ``SendTaskSuccess`` for an approval, ``SendTaskFailure(error="ReviewDenied")`` otherwise.
  With no token yet (the decision beat the queue consumer), the consumer completes the task
  when the token arrives; a token that already timed out is simply stale.

The API applies the decision itself (synchronously, the same code as locally); the machine
only waits, and on timeout its ``ExpireReview`` task denies the write by default.
"""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError

from episodic.application.ports import ReviewTokens
from episodic.domain.model import Episode, Review, ReviewStatus
from episodic.logs import service_logger

STALE_TOKEN_ERRORS = ("TaskTimedOut", "TaskDoesNotExist", "InvalidToken")

logger = service_logger("episodic-review")


def review_view(review: Review, episode: Episode) -> dict[str, Any]:
    """What a reviewer needs to decide, and nothing more (no vectors, no access statistics)."""
    return {
        "eventType": episode.event_type.value,
        "actorId": episode.actor_id,
        "occurredAt": episode.occurred_at.isoformat(),
        "summary": episode.summary,
        "sourceRefs": episode.source_refs,
        "sourceTrust": episode.source_trust.value,
        "proposedBy": episode.proposed_by.value,
        "privacyClass": episode.privacy_class.value,
        "policyVersion": review.policy_version,
    }


class StepFunctionsReviewWorkflow:
    def __init__(self, client: Any, state_machine_arn: str, tokens: ReviewTokens) -> None:
        self.client = client
        self.state_machine_arn = state_machine_arn
        self.tokens = tokens

    def review_requested(self, review: Review, episode: Episode) -> None:
        payload = {
            "tenantId": review.tenant_id,
            "reviewId": review.review_id,
            "eventId": review.event_id,
            "reasons": review.reasons,
            "episode": review_view(review, episode),
        }
        try:
            self.client.start_execution(
                stateMachineArn=self.state_machine_arn, name=review.review_id, input=json.dumps(payload)
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ExecutionAlreadyExists":
                # The review stays pending and listed by GET /v1/reviews; the sweep times it out.
                logger.exception("could not start the review workflow", review_id=review.review_id)

    def review_decided(self, review: Review) -> None:
        token = self.tokens.review_token(review.tenant_id, review.review_id)
        if token is not None:
            complete_task(self.client, token, review)


def complete_task(client: Any, token: str, review: Review) -> None:
    """Finish the waiting task according to the review's outcome; a stale token is fine."""
    try:
        if review.status is ReviewStatus.APPROVED:
            output = {"decision": "approve", "reviewer": review.reviewer, "reviewId": review.review_id}
            client.send_task_success(taskToken=token, output=json.dumps(output))
        else:
            cause = json.dumps({"decision": review.status, "reviewer": review.reviewer, "reviewId": review.review_id})
            client.send_task_failure(taskToken=token, error="ReviewDenied", cause=cause)
    except ClientError as exc:
        if exc.response["Error"]["Code"] not in STALE_TOKEN_ERRORS:
            raise
        logger.info("review task already finished", review_id=review.review_id)
