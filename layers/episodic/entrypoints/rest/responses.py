"""What each route of the REST API can answer besides success, for the OpenAPI document.

Clients (and the schemathesis run in the test suite) rely on the document listing every
status a route gives and the shape of its body. Error bodies are :class:`ErrorBody`; a write
the policy denies answers 403 with the write result itself (``decision: "deny"`` and its
reason codes).
"""

from __future__ import annotations

from typing import Any

from episodic.domain.model import CamelModel, RememberResult


class ValidationIssue(CamelModel):
    loc: list[str | int]
    msg: str
    type: str


class ErrorBody(CamelModel):
    """Every error the API renders: ``error`` (a stable code) and ``message``; a domain error may
    carry ``details``, a schema error lists where and why in ``detail`` (never the input)."""

    error: str
    message: str
    details: dict[str, Any] | None = None
    detail: list[ValidationIssue] | None = None


_MEANING = {
    401: "No bearer token, or one that is not known",
    403: "The caller's role does not allow this, or the body names another tenant",
    404: "No such id in the caller's tenant (another tenant's id answers the same)",
    409: "The state changed meanwhile, or the Idempotency-Key was used with another body",
    413: "The request body is larger than 1 MiB",
    415: "Request bodies must be application/json",
    422: "The request does not match the schema, or asks for something that cannot be done",
    503: "Writes are disabled by an operator, or the store is unavailable (retry later)",
}


def errors(*codes: int, ok: int | None = 200, **overrides: dict[str, Any]) -> dict[int, Any]:
    """OpenAPI ``responses``: success (``ok``, with the route's return type as its body), 422
    (any route can be sent something the schema refuses) and these error statuses.

    ``overrides`` (``s403={...}``) replace the entry of one status."""
    documented: dict[int, Any] = {ok: {"description": "Success"}} if ok is not None else {}
    for code in sorted({*codes, 422}):
        documented[code] = {"description": _MEANING[code], "content": {"application/json": {"model": ErrorBody}}}
    for key, entry in overrides.items():
        documented[int(key.removeprefix("s"))] = entry
    return documented


WRITE_RESULTS: dict[int, Any] = {
    201: {"description": "Allowed and stored", "content": {"application/json": {"model": RememberResult}}},
    202: {
        "description": "Held for human review (pending_review, not recallable)",
        "content": {"application/json": {"model": RememberResult}},
    },
}
DENIED: dict[str, Any] = {
    "description": "Denied by the write policy (decision, reasons, reason, message, policyVersion), or the caller "
    "may not do this (error, message)",
}
"""A 403 on a write route has one of two bodies, so its shape is left open in the document."""
