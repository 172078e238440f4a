"""The ``/v1`` routes: each authenticates the caller, calls one use case of
:class:`~episodic.application.service.MemoryService` and shapes the response. Thin by design: Powertools
validates requests against the pydantic models (422 on schema errors) and builds the OpenAPI
document from these signatures."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Path, Query
from pydantic import Field, StrictBool

from episodic.domain.model import (
    AuditAction,
    AuditRecord,
    AuditVerification,
    Caller,
    CamelModel,
    Decision,
    Episode,
    EpisodeProposal,
    ErasureResult,
    EventType,
    Health,
    Id,
    OperatorOverview,
    RecallRequest,
    RecallResponse,
    RememberResult,
    ReviewStatus,
    ReviewView,
    Status,
    Tag,
    TimelinePage,
    TimelineRequest,
    UtcDatetime,
    WritesStatus,
)
from episodic.domain.model.conversations import TurnsRequest, TurnsResult
from episodic.domain.policy.reasons import denial_message
from episodic.entrypoints.rest.app import app, current_caller, get_service, json_response
from episodic.entrypoints.rest.responses import DENIED, WRITE_RESULTS, errors

SESSION_ID = r"^[A-Za-z0-9][A-Za-z0-9_.:@-]*$"  # episodic.domain.model.Id


def _remember_response(result: RememberResult) -> Response:
    body = result.to_json_dict()
    if result.decision is Decision.ALLOW:
        return json_response(201, body)
    if result.decision is Decision.REVIEW:
        body.pop("episode", None)
        return json_response(202, body)
    body.update(reason=result.reason, message=denial_message(result.reasons))
    return json_response(403, body)


def _batch_item(result: RememberResult) -> dict[str, Any]:
    body = result.to_json_dict()
    body.pop("episode", None)
    if result.decision is Decision.DENY:
        body.update(reason=result.reason, message=denial_message(result.reasons))
    return {k: v for k, v in body.items() if v is not None}


IdempotencyKey = Annotated[
    str | None,
    Header(alias="Idempotency-Key", description="Same key and body: same result, nothing duplicated."),
]
WRITE_RESPONSES = WRITE_RESULTS | errors(401, 409, 413, 415, 503, ok=None, s403=DENIED)


@app.post("/v1/episodes", responses=WRITE_RESPONSES, summary="Propose an episode")
def post_episode(
    proposal: Annotated[EpisodeProposal, Body()], idempotency_key: IdempotencyKey = None
):  # no return annotation: the status (201/202/403) decides the body's shape, see RESULT_RESPONSES
    return _remember_response(get_service().writes.remember(current_caller(), proposal, idempotency_key))


class BatchRequest(CamelModel):
    episodes: Annotated[list[EpisodeProposal], Field(min_length=1, max_length=100)]


class BatchResponse(CamelModel):
    results: list[dict[str, Any]]


@app.post(
    "/v1/episodes/batch",
    responses=errors(401, 403, 409, 413, 415, 422, 503),
    summary="Propose up to 100 episodes, decided independently",
)
def post_batch(request: Annotated[BatchRequest, Body()], idempotency_key: IdempotencyKey = None) -> BatchResponse:
    results = get_service().writes.remember_batch(current_caller(), request.episodes, idempotency_key)
    return BatchResponse(results=[_batch_item(r) for r in results])


@app.get(
    "/v1/episodes/<eventId>",
    responses=errors(401, 404, 422),
    summary="Get one episode (404 for unknown ids and other tenants' ids)",
)
def get_episode(eventId: Annotated[str, Path(max_length=128)]) -> Episode:
    return get_service().reads.get(current_caller(), eventId)


MAX_LIST_FILTER = 16
"""At most this many values per repeated filter (``tag=``, ``eventType=``), as in recall."""


@app.get(
    "/v1/timeline",
    responses=errors(401, 403, 422),
    summary="The timeline ordered by occurredAt, filtered, with cursor paging",
)
def get_timeline(
    actor_id: Annotated[Id | None, Query(alias="actorId")] = None,
    project_id: Annotated[Id | None, Query(alias="projectId")] = None,
    event_type: Annotated[list[EventType] | None, Query(alias="eventType", max_length=MAX_LIST_FILTER)] = None,
    tag: Annotated[list[Tag] | None, Query(max_length=MAX_LIST_FILTER)] = None,
    after: Annotated[UtcDatetime | None, Query(description="occurredAt >= after (timezone required)")] = None,
    before: Annotated[UtcDatetime | None, Query(description="occurredAt < before (timezone required)")] = None,
    status: Annotated[list[Status] | None, Query(max_length=len(Status))] = None,
    order: Annotated[Literal["asc", "desc"], Query()] = "desc",
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
) -> TimelinePage:
    request = TimelineRequest(
        actor_id=actor_id, project_id=project_id, event_types=event_type or [], tags=tag or [],
        occurred_after=after, occurred_before=before, statuses=status or [Status.ACTIVE],
        limit=limit, cursor=cursor, newest_first=order == "desc",
    )  # fmt: skip
    return get_service().reads.timeline(current_caller(), request)


@app.post(
    "/v1/sessions/<sessionId>/turns",
    responses=errors(401, 409, 413, 415, 422, 503),
    summary="Add a conversation's turns: memorable ones are kept as episodes; endSession writes the handoff",
)
def post_turns(
    sessionId: Annotated[str, Path(max_length=128, pattern=SESSION_ID)],
    request: Annotated[TurnsRequest, Body()],
    idempotency_key: IdempotencyKey = None,
) -> TurnsResult:
    return get_service().conversations.add_turns(current_caller(), sessionId, request, idempotency_key)


@app.post(
    "/v1/recall",
    responses=errors(401, 413, 415, 422, 503),
    summary="Scope-first recall with explainable ranking and an evidence block",
)
def post_recall(request: Annotated[RecallRequest, Body()]) -> RecallResponse:
    return get_service().reads.recall(current_caller(), request)


@app.post(
    "/v1/episodes/<eventId>/corrections",
    responses=WRITE_RESPONSES | errors(404, ok=None),
    summary="Write a correction; the old episode becomes superseded atomically",
)
def post_correction(
    eventId: Annotated[str, Path(max_length=128)],
    proposal: Annotated[EpisodeProposal, Body()],
    idempotency_key: IdempotencyKey = None,
):
    return _remember_response(get_service().writes.correct(current_caller(), eventId, proposal, idempotency_key))


@app.delete(
    "/v1/episodes/<eventId>",
    responses=errors(401, 403, 404, 422, 503),
    summary="Erase an episode everywhere, leaving an audit tombstone",
)
def delete_episode(eventId: Annotated[str, Path(max_length=128)]) -> ErasureResult:
    return get_service().erasure.erase(current_caller(), eventId)


class RestoreRequest(CamelModel):
    expires_at: UtcDatetime | None = None


@app.post(
    "/v1/episodes/<eventId>/restore",
    responses=errors(401, 403, 404, 409, 413, 415, 422, 503),
    summary="Restore an archived episode to the timeline (operator)",
)
def post_restore(
    eventId: Annotated[str, Path(max_length=128)],
    request: Annotated[RestoreRequest, Body()],
) -> Episode:
    return get_service().archival.restore(current_caller(), eventId, request.expires_at)


class ActorErasureRequest(CamelModel):
    actor_id: Id
    """An actor id as every stored episode spells it: one that could name no stored episode (a
    typo with a space, say) is refused, not answered with nothing erased."""
    reason: Annotated[str, Field(max_length=500)] | None = None


@app.post(
    "/v1/erasure",
    responses=errors(401, 403, 413, 415, 422, 503),
    summary="Erase every episode of an actor, and what derives from them (operator)",
)
def post_erasure(request: Annotated[ActorErasureRequest, Body()]) -> ErasureResult:
    return get_service().erasure.erase_actor(current_caller(), request.actor_id, request.reason)


class FeedbackRequest(CamelModel):
    helpful: StrictBool
    note: Annotated[str, Field(max_length=2000)] | None = None


@app.post(
    "/v1/episodes/<eventId>/feedback",
    responses=errors(401, 404, 409, 413, 415, 422, 503),
    summary="Agent feedback on a recalled episode",
)
def post_feedback(
    eventId: Annotated[str, Path(max_length=128)],
    request: Annotated[FeedbackRequest, Body()],
) -> Episode:
    return get_service().feedbacks.feedback(current_caller(), eventId, request.helpful, request.note)


class ReviewList(CamelModel):
    items: list[ReviewView]


@app.get("/v1/reviews", responses=errors(401, 403, 422), summary="The review queue (operator)")
def get_reviews(
    status: Annotated[ReviewStatus | None, Query()] = ReviewStatus.PENDING,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> ReviewList:
    return ReviewList(items=get_service().reviews.list_reviews(current_caller(), status, limit))


class ReviewDecisionRequest(CamelModel):
    decision: Literal["approve", "deny"]
    note: Annotated[str, Field(max_length=2000)] | None = None


@app.post(
    "/v1/reviews/<reviewId>/decision",
    responses=errors(401, 403, 404, 409, 413, 415, 422, 503),
    summary="Approve or deny a pending write (operator)",
)
def post_review_decision(
    reviewId: Annotated[str, Path(max_length=128)],
    request: Annotated[ReviewDecisionRequest, Body()],
) -> ReviewView:
    return get_service().reviews.decide_review(current_caller(), reviewId, request.decision == "approve", request.note)


class AuditPage(CamelModel):
    items: list[AuditRecord]
    next_cursor: str | None = None


@app.get("/v1/audit", responses=errors(401, 403, 422), summary="The append-only audit trail (operator)")
def get_audit(
    event_id: Annotated[str | None, Query(alias="eventId", max_length=128)] = None,
    action: Annotated[AuditAction | None, Query()] = None,
    since: Annotated[UtcDatetime | None, Query(description="Only records at or after this time")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
) -> AuditPage:
    items, next_cursor = get_service().admin.audit(
        current_caller(), event_id=event_id, action=action, since=since, limit=limit, cursor=cursor
    )
    return AuditPage(items=items, next_cursor=next_cursor)


@app.get(
    "/v1/admin/audit/verify",
    responses=errors(401, 403),
    summary="Verify this tenant's audit hash chains now (operator); the outcome is audited as audit.verified",
)
def get_audit_verify() -> AuditVerification:
    return get_service().proof.verify(current_caller())


class LastVerification(CamelModel):
    last: AuditRecord | None = None


@app.get(
    "/v1/admin/audit/verification",
    responses=errors(401, 403),
    summary="The tenant's last audit chain verification (operator): its audit.verified record, if any",
)
def get_audit_verification() -> LastVerification:
    return LastVerification(last=get_service().proof.last_verification(current_caller()))


class WritesRequest(CamelModel):
    enabled: StrictBool = Field(description="true or false: a kill-switch reads no 'no', 0 or 'off' as either")
    reason: Annotated[str, Field(max_length=500)] | None = None


@app.put(
    "/v1/admin/writes",
    responses=errors(401, 403, 413, 415, 422, 503),
    summary="The write kill-switch for this tenant (operator)",
)
def put_writes(request: Annotated[WritesRequest, Body()]) -> WritesStatus:
    return get_service().admin.set_writes(current_caller(), request.enabled, request.reason)


@app.get("/v1/admin/writes", responses=errors(401), summary="Whether writes are enabled for this tenant")
def get_writes() -> WritesStatus:
    return get_service().admin.writes_status(current_caller().tenant_id)


@app.get(
    "/v1/admin/overview",
    responses=errors(401, 403, 422),
    summary="The tenant at a glance (operator): decisions by reason and recalls per day, retention, what is due",
)
def get_overview(
    days: Annotated[int, Query(ge=1, le=90, description="How many days back the daily series reach")] = 14,
) -> OperatorOverview:
    return get_service().overviews.overview(current_caller(), days)


@app.get(
    "/v1/whoami",
    responses=errors(401, 403),
    summary="Whom the credential acts as: tenant, role, principal and, for a bound credential, its actors",
)
def get_whoami() -> Caller:
    return current_caller()


@app.get("/v1/health", responses=errors(), summary="Liveness and configuration (no authentication)")
def get_health() -> Health:
    return get_service().admin.health()
