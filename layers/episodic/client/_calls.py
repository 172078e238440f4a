"""Every ``/v1`` operation as data: what to send and how to read the answer.

The sync and async clients share these builders, so an operation is described once and only
the sending differs. Reading an answer is also shared: a policy denial (``403`` with a
``decision``) is an ordinary result, any other status from 400 up is an :class:`ApiError`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar
from urllib.parse import quote

from pydantic import BaseModel

from episodic.client.errors import ApiError
from episodic.domain.model import (
    AuditRecord,
    Caller,
    CamelModel,
    Episode,
    EpisodeProposal,
    ErasureResult,
    Health,
    OperatorOverview,
    RecallRequest,
    RecallResponse,
    RememberResult,
    ReviewView,
    TimelinePage,
    WritesStatus,
)
from episodic.domain.model.conversations import Turn, TurnsRequest, TurnsResult

T = TypeVar("T")


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request and the reader of its answer. ``retry_safe``: sending it twice changes
    nothing (a read, or a write carrying an Idempotency-Key)."""

    method: str
    path: str
    read: Callable[[int, Any], T]
    json: Any = None
    params: Mapping[str, Any] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    retry_safe: bool = True


@dataclass(frozen=True)
class AuditPage:
    items: list[AuditRecord]
    next_cursor: str | None


def _model(cls: type[BaseModel]) -> Callable[[int, Any], Any]:
    return lambda status, body: cls.model_validate(body)


def _wire(value: CamelModel | Mapping[str, Any], cls: type[CamelModel]) -> dict[str, Any]:
    """A request body: models as their wire form; plain dicts checked against the model first,
    so a mistake is a local ``ValidationError``, not a round trip."""
    model = value if isinstance(value, cls) else cls.model_validate(value)
    return {k: v for k, v in model.to_json_dict().items() if v is not None}


def _write_result(status: int, body: Any) -> RememberResult:
    body = dict(body)
    for said_for_people in ("reason", "message"):  # the reasons joined, and in words
        body.pop(said_for_people, None)
    return RememberResult.model_validate(body)


def _idempotent(key: str | None) -> dict[str, str]:
    """Writes always carry a key (the caller's, or a fresh one), so a retry never writes twice."""
    return {"Idempotency-Key": key or f"sdk-{uuid.uuid4()}"}


def read_answer(call: Call[T], status: int, body: Any) -> T:
    """The call's result, or the :class:`ApiError` the answer stands for."""
    if status == 403 and isinstance(body, dict) and "decision" in body:
        return call.read(status, body)  # a policy denial is a decision, not a failure
    if status >= 400:
        raise ApiError.from_answer(status, body)
    return call.read(status, body)


def remember(proposal: EpisodeProposal | Mapping[str, Any], key: str | None) -> Call[RememberResult]:
    body = _wire(proposal, EpisodeProposal)
    return Call("POST", "/v1/episodes", _write_result, json=body, headers=_idempotent(key))


def remember_batch(
    proposals: Sequence[EpisodeProposal | Mapping[str, Any]], key: str | None
) -> Call[list[RememberResult]]:
    body = {"episodes": [_wire(p, EpisodeProposal) for p in proposals]}
    return Call(
        "POST",
        "/v1/episodes/batch",
        lambda status, answer: [_write_result(status, r) for r in answer["results"]],
        json=body,
        headers=_idempotent(key),
    )


def add_turns(
    session_id: str,
    turns: Sequence[Turn | Mapping[str, Any]],
    *,
    end_session: bool,
    project_id: str | None,
    key: str | None,
) -> Call[TurnsResult]:
    request = TurnsRequest(
        turns=[t if isinstance(t, Turn) else Turn.model_validate(t) for t in turns],
        end_session=end_session,
        project_id=project_id,
    )
    return Call(
        "POST",
        f"/v1/sessions/{_segment(session_id)}/turns",
        _model(TurnsResult),
        json=_wire(request, TurnsRequest),
        headers=_idempotent(key),
    )


def recall_request(query: str | RecallRequest | Mapping[str, Any] | None, scope: Mapping[str, Any]) -> RecallRequest:
    """``recall("text", actor_id=..., limit=...)``, ``recall({...})`` or ``recall(RecallRequest(...))``."""
    if isinstance(query, RecallRequest):
        return RecallRequest.model_validate({**query.model_dump(), **scope}) if scope else query
    if isinstance(query, Mapping):
        return RecallRequest.model_validate({**query, **scope})
    return RecallRequest.model_validate({"query": query, **scope})


def recall(request: RecallRequest | Mapping[str, Any]) -> Call[RecallResponse]:
    return Call("POST", "/v1/recall", _model(RecallResponse), json=_wire(request, RecallRequest))


def get(event_id: str) -> Call[Episode]:
    return Call("GET", f"/v1/episodes/{_segment(event_id)}", _model(Episode))


def timeline(filters: Mapping[str, Any], cursor: str | None) -> Call[TimelinePage]:
    return Call("GET", "/v1/timeline", _model(TimelinePage), params=_query({**filters, "cursor": cursor}))


def correct(event_id: str, proposal: EpisodeProposal | Mapping[str, Any], key: str | None) -> Call[RememberResult]:
    body = _wire(proposal, EpisodeProposal)
    path = f"/v1/episodes/{_segment(event_id)}/corrections"
    return Call("POST", path, _write_result, json=body, headers=_idempotent(key))


def erase(event_id: str) -> Call[ErasureResult]:
    return Call("DELETE", f"/v1/episodes/{_segment(event_id)}", _model(ErasureResult))


def erase_actor(actor_id: str, reason: str | None) -> Call[ErasureResult]:
    body = {"actorId": actor_id, **({"reason": reason} if reason else {})}
    return Call("POST", "/v1/erasure", _model(ErasureResult), json=body)


def feedback(event_id: str, helpful: bool, note: str | None) -> Call[Episode]:
    body = {"helpful": helpful, **({"note": note} if note else {})}
    # Not retried: each call counts once more towards the episode's feedback score.
    return Call("POST", f"/v1/episodes/{_segment(event_id)}/feedback", _model(Episode), json=body, retry_safe=False)


def restore(event_id: str, expires_at: datetime | None) -> Call[Episode]:
    body = {"expiresAt": expires_at.isoformat()} if expires_at else {}
    return Call("POST", f"/v1/episodes/{_segment(event_id)}/restore", _model(Episode), json=body)


def reviews(status: str | None, limit: int) -> Call[list[ReviewView]]:
    return Call(
        "GET",
        "/v1/reviews",
        lambda s, body: [ReviewView.model_validate(r) for r in body["items"]],
        params=_query({"status": status, "limit": limit}),
    )


def decide_review(review_id: str, approve: bool, note: str | None) -> Call[ReviewView]:
    body = {"decision": "approve" if approve else "deny", **({"note": note} if note else {})}
    return Call("POST", f"/v1/reviews/{_segment(review_id)}/decision", _model(ReviewView), json=body)


def audit(
    event_id: str | None, action: str | None, limit: int, cursor: str | None, since: datetime | None = None
) -> Call[AuditPage]:
    def read(status: int, body: Any) -> AuditPage:
        return AuditPage([AuditRecord.model_validate(r) for r in body["items"]], body.get("nextCursor"))

    params = _query({"eventId": event_id, "action": action, "since": since, "limit": limit, "cursor": cursor})
    return Call("GET", "/v1/audit", read, params=params)


def set_writes(enabled: bool, reason: str | None) -> Call[WritesStatus]:
    body = {"enabled": enabled, **({"reason": reason} if reason else {})}
    return Call("PUT", "/v1/admin/writes", _model(WritesStatus), json=body)


def writes_status() -> Call[WritesStatus]:
    return Call("GET", "/v1/admin/writes", _model(WritesStatus))


def overview(days: int) -> Call[OperatorOverview]:
    return Call("GET", "/v1/admin/overview", _model(OperatorOverview), params={"days": days})


def health() -> Call[Health]:
    return Call("GET", "/v1/health", _model(Health))


def whoami() -> Call[Caller]:
    return Call("GET", "/v1/whoami", _model(Caller))


TIMELINE_FILTERS = {
    "actor_id": "actorId",
    "project_id": "projectId",
    "event_types": "eventType",
    "tags": "tag",
    "occurred_after": "after",
    "occurred_before": "before",
    "statuses": "status",
    "order": "order",
    "limit": "limit",
}
"""The timeline's filters, by their Python names, and the query parameters they become."""


def timeline_filters(**filters: Any) -> dict[str, Any]:
    unknown = set(filters) - set(TIMELINE_FILTERS)
    if unknown:
        raise TypeError(f"unknown timeline filters: {sorted(unknown)}; known: {sorted(TIMELINE_FILTERS)}")
    return {TIMELINE_FILTERS[k]: v for k, v in filters.items()}


def _query(params: Mapping[str, Any]) -> dict[str, Any]:
    """Query parameters without the unset ones, datetimes as ISO 8601, enums as their values."""
    out: dict[str, Any] = {}
    for name, value in params.items():
        if value is None or value == []:
            continue
        if isinstance(value, datetime):
            value = value.isoformat()
        elif isinstance(value, list | tuple):
            value = [getattr(v, "value", v) for v in value]
        else:
            value = getattr(value, "value", value)
        out[name] = value
    return out


def _segment(value: str) -> str:
    """An id as one path segment, percent-encoded (an id holding ``/`` or ``?`` stays one id)."""
    if value in ("", ".", ".."):
        raise ValueError(f"not a valid id: {value!r}")
    return quote(value, safe="")
