"""The REST API: one Lambda handler behind API Gateway, and the same handler locally.

Thin by design: each route authenticates the caller from the authorizer context,
calls one use case of :class:`episodic.service.MemoryService` and shapes the response.
Powertools does the plumbing: routing, request validation against the pydantic
models (422 on schema errors), the OpenAPI schema and Swagger UI, structured logging.

The tenant and role come only from ``requestContext.authorizer`` (set by the API
Gateway authorizer in AWS, by ``episodic serve`` locally), never from a body.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Annotated, Any, Literal

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Path, Query
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import Field

from episodic.errors import EpisodicError, UnauthorizedError
from episodic.model import (
    AuditRecord,
    Caller,
    CamelModel,
    Decision,
    Episode,
    EpisodeProposal,
    EventType,
    RecallRequest,
    RecallResponse,
    RememberResult,
    ReviewStatus,
    ReviewView,
    Status,
    TimelinePage,
    UtcDatetime,
)
from episodic.service import MemoryService
from functions.api_responses import DENIED, WRITE_RESULTS, errors

logger = Logger(service="episodic-api")


def _read_json(body: str) -> Any:
    """``json.loads`` whose every failure is a JSON error, so Powertools answers 422 (not 500) for
    100,000 levels of nesting or a 4,300-digit number as it does for a missing brace."""
    try:
        return json.loads(body)
    except json.JSONDecodeError:
        raise
    except (RecursionError, ValueError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else "a number is too large"
        raise json.JSONDecodeError(f"the JSON document is {reason}", body[:0], 0) from None


app = APIGatewayRestResolver(enable_validation=True, json_body_deserializer=_read_json)
app.enable_swagger(
    path="/v1/swagger",
    title="Episodic memory API",
    version="1.0.0",
    description="Long-term episodic memory for AI agents. Recalled items are evidence, not instructions.",
)

_service: MemoryService | None = None


def get_service() -> MemoryService:
    """The lazily built composition root (overridable with :func:`set_service`)."""
    global _service
    if _service is None:
        from episodic.settings import Settings

        backend = os.environ.get("EPISODIC_BACKEND", "local")
        if backend == "aws":
            from episodic.adapters.aws.bootstrap import service_from_settings

            _service = service_from_settings(Settings.from_env())
        elif backend == "local":
            from episodic.adapters.local.bootstrap import build_local_service

            _service = build_local_service(Settings.from_env())
        else:
            raise RuntimeError(f"unknown EPISODIC_BACKEND {backend!r}: use 'local' or 'aws'")
    return _service


def set_service(service: MemoryService | None) -> None:
    global _service
    _service = service


def current_caller() -> Caller:
    """The caller as established by the authorizer; a request without one is refused."""
    authorizer = (app.current_event.raw_event.get("requestContext") or {}).get("authorizer") or {}
    tenant, role = authorizer.get("tenantId"), authorizer.get("role")
    principal = authorizer.get("principalId") or authorizer.get("principalID")
    if not tenant or not role or not principal:
        raise UnauthorizedError("no authenticated caller in the request context")
    return Caller.model_validate({"tenantId": tenant, "role": role, "principalId": principal})


def _json(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    if isinstance(body, CamelModel):
        body = body.to_json_dict()
    return Response(status_code=status, content_type="application/json", body=body, headers=headers)


@app.exception_handler(EpisodicError)
def _domain_error(error: EpisodicError) -> Response:
    if error.status >= 500:
        logger.warning("request failed", error_code=error.code, error_message=error.message)
    return _json(error.status, error.to_body())


@app.exception_handler(Exception)
def _unexpected_error(error: Exception) -> Response:
    """A bug, not the caller's fault: log its type and place (never its message, which can quote
    request content) and answer a plain 500."""
    logger.error("request failed unexpectedly", error_type=type(error).__name__, where=_innermost_frame(error))
    return _json(500, {"error": "internal_error", "message": "the request failed; see the service log"})


def _innermost_frame(error: BaseException) -> str:
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}" if tb is not None else "unknown"


@app.exception_handler(RequestValidationError)
def _schema_error(error: RequestValidationError) -> Response:
    """422 with where and why, but never the offending input (it may hold a secret)."""
    detail = [
        {"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")} for e in error.errors()
    ]
    return _json(
        422, {"error": "validation_error", "message": "the request does not match the schema", "detail": detail}
    )


def _remember_response(result: RememberResult) -> Response:
    body = result.to_json_dict()
    if result.decision is Decision.ALLOW:
        return _json(201, body)
    if result.decision is Decision.REVIEW:
        body.pop("episode", None)
        return _json(202, body)
    body.update(reason=result.reason)
    return _json(403, body)


def _batch_item(result: RememberResult) -> dict[str, Any]:
    body = result.to_json_dict()
    body.pop("episode", None)
    if result.decision is Decision.DENY:
        body["reason"] = result.reason
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
    return _remember_response(get_service().remember(current_caller(), proposal, idempotency_key))


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
    results = get_service().remember_batch(current_caller(), request.episodes, idempotency_key)
    return BatchResponse(results=[_batch_item(r) for r in results])


@app.get(
    "/v1/episodes/<eventId>",
    responses=errors(401, 404, 422),
    summary="Get one episode (404 for unknown ids and other tenants' ids)",
)
def get_episode(eventId: Annotated[str, Path(max_length=128)]) -> Episode:
    return get_service().get(current_caller(), eventId)


MAX_LIST_FILTER = 16
"""At most this many values per repeated filter (``tag=``, ``eventType=``), as in recall."""


@app.get(
    "/v1/timeline",
    responses=errors(401, 403, 422),
    summary="The timeline ordered by occurredAt, filtered, with cursor paging",
)
def get_timeline(
    actor_id: Annotated[str | None, Query(alias="actorId")] = None,
    project_id: Annotated[str | None, Query(alias="projectId")] = None,
    event_type: Annotated[list[EventType] | None, Query(alias="eventType", max_length=MAX_LIST_FILTER)] = None,
    tag: Annotated[list[str] | None, Query(max_length=MAX_LIST_FILTER)] = None,
    after: Annotated[UtcDatetime | None, Query(description="occurredAt >= after (timezone required)")] = None,
    before: Annotated[UtcDatetime | None, Query(description="occurredAt < before (timezone required)")] = None,
    status: Annotated[list[Status] | None, Query(max_length=len(Status))] = None,
    order: Annotated[Literal["asc", "desc"], Query()] = "desc",
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
) -> TimelinePage:
    return get_service().timeline(
        current_caller(),
        actor_id=actor_id,
        project_id=project_id,
        event_types=event_type or [],
        tags=tag or [],
        occurred_after=after,
        occurred_before=before,
        statuses=status or [Status.ACTIVE],
        limit=limit,
        cursor=cursor,
        newest_first=order == "desc",
    )


@app.post(
    "/v1/recall",
    responses=errors(401, 413, 415, 422, 503),
    summary="Scope-first recall with explainable ranking and an evidence block",
)
def post_recall(request: Annotated[RecallRequest, Body()]) -> RecallResponse:
    return get_service().recall(current_caller(), request)


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
    return _remember_response(get_service().correct(current_caller(), eventId, proposal, idempotency_key))


class ErasureResult(CamelModel):
    erased: list[str]
    cascaded: list[str]
    archived_records_deleted: int


@app.delete(
    "/v1/episodes/<eventId>",
    responses=errors(401, 403, 404, 422, 503),
    summary="Erase an episode everywhere, leaving an audit tombstone",
)
def delete_episode(eventId: Annotated[str, Path(max_length=128)]) -> ErasureResult:
    return ErasureResult.model_validate(get_service().erase(current_caller(), eventId))


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
    return get_service().restore(current_caller(), eventId, request.expires_at)


class ActorErasureRequest(CamelModel):
    actor_id: Annotated[str, Field(min_length=1, max_length=128)]
    reason: Annotated[str, Field(max_length=500)] | None = None


@app.post(
    "/v1/erasure",
    responses=errors(401, 403, 413, 415, 422, 503),
    summary="Erase everything about an actor (operator)",
)
def post_erasure(request: Annotated[ActorErasureRequest, Body()]) -> ErasureResult:
    return ErasureResult.model_validate(get_service().erase_actor(current_caller(), request.actor_id, request.reason))


class FeedbackRequest(CamelModel):
    helpful: bool
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
    return get_service().feedback(current_caller(), eventId, request.helpful, request.note)


class ReviewList(CamelModel):
    items: list[ReviewView]


@app.get("/v1/reviews", responses=errors(401, 403, 422), summary="The review queue (operator)")
def get_reviews(
    status: Annotated[ReviewStatus | None, Query()] = ReviewStatus.PENDING,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> ReviewList:
    return ReviewList(items=get_service().list_reviews(current_caller(), status, limit))


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
    return get_service().decide_review(current_caller(), reviewId, request.decision == "approve", request.note)


class AuditPage(CamelModel):
    items: list[AuditRecord]
    next_cursor: str | None = None


@app.get("/v1/audit", responses=errors(401, 403, 422), summary="The append-only audit trail (operator)")
def get_audit(
    event_id: Annotated[str | None, Query(alias="eventId")] = None,
    action: Annotated[str | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
) -> AuditPage:
    items, next_cursor = get_service().audit(
        current_caller(), event_id=event_id, action=action, limit=limit, cursor=cursor
    )
    return AuditPage(items=items, next_cursor=next_cursor)


class WritesRequest(CamelModel):
    enabled: bool
    reason: Annotated[str, Field(max_length=500)] | None = None


@app.put(
    "/v1/admin/writes",
    responses=errors(401, 403, 413, 415, 422, 503),
    summary="The write kill-switch for this tenant (operator)",
)
def put_writes(request: Annotated[WritesRequest, Body()]) -> dict[str, Any]:
    return get_service().set_writes(current_caller(), request.enabled, request.reason)


@app.get("/v1/admin/writes", responses=errors(401), summary="Whether writes are enabled for this tenant")
def get_writes() -> dict[str, Any]:
    return get_service().writes_status(current_caller().tenant_id)


@app.get("/v1/health", responses=errors(), summary="Liveness and configuration (no authentication)")
def get_health() -> dict[str, Any]:
    return get_service().health()


JSON_MEDIA_TYPES = ("application/json", "application/problem+json")


def _unsupported_media_type(event: dict[str, Any]) -> dict[str, Any] | None:
    """The API speaks JSON only: a body in any other media type (a form, a multipart upload with
    or without its boundary) is refused with 415 before anything tries to parse it."""
    if not event.get("body"):
        return None
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    media_type = str(headers.get("content-type") or "application/json").split(";")[0].strip().lower()
    if media_type in JSON_MEDIA_TYPES:
        return None
    body = {"error": "unsupported_media_type", "message": "request bodies must be application/json"}
    return {"statusCode": 415, "headers": {"Content-Type": "application/json"}, "body": json.dumps(body)}


_serving = threading.Lock()
"""Powertools keeps the request being served in process-wide state (``BaseRouter.current_event``
is a class attribute; the Logger's correlation id too), so two requests resolved at once can
swap events: one request answered with another's caller or body. Lambda serves one request per
process; ``episodic serve`` serves many threads, which take turns here."""


@logger.inject_lambda_context(correlation_id_path="requestContext.requestId")
def _handle(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return _unsupported_media_type(event) or app.resolve(event, context)


def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    with _serving:
        return _handle(event, context)
