"""The REST API's application: the Powertools resolver, its composition root, who is calling,
and how errors become responses. The routes are in :mod:`episodic.entrypoints.rest.routes`, the
entry point (the Lambda handler, which ``episodic serve`` calls too) in
:mod:`episodic.entrypoints.rest.handler`.

The tenant and role come only from ``requestContext.authorizer`` (set by the API Gateway
authorizer in AWS, by ``episodic serve`` locally), never from a body.
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.shared.json_encoder import Encoder
from pydantic import TypeAdapter, ValidationError

from episodic.application.service import MemoryService
from episodic.domain.access import acting_for
from episodic.domain.errors import EpisodicError, InvalidRequestError, UnauthorizedError
from episodic.domain.model import Caller, CamelModel, reserved_principal
from episodic.domain.model.messages import MAX_BOUND_ACTORS
from episodic.entrypoints.rest.browser import browser_headers
from episodic.entrypoints.rest.resolver import ConcurrentRestResolver
from episodic.logs import service_logger

logger = service_logger("episodic-api")


def _read_json(body: str) -> Any:
    """``json.loads`` whose every failure is a JSON error, so Powertools answers 422 (not 500) for
    100,000 levels of nesting, a 4,300-digit number or a lone surrogate escape (``"\\ud800"``, which
    decodes to no character) as it does for a missing brace."""
    try:
        document = json.loads(body)
    except json.JSONDecodeError:
        raise
    except (RecursionError, ValueError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else "a number is too large"
        raise json.JSONDecodeError(f"the JSON document is {reason}", body[:0], 0) from None
    if ("\\ud" in body or "\\uD" in body) and _has_lone_surrogate(document):
        raise json.JSONDecodeError(
            "the JSON document holds a lone surrogate escape, which is no character", body[:0], 0
        )
    return document


def _has_lone_surrogate(value: Any) -> bool:
    """Whether any string of a decoded document holds a surrogate (JSON joins the valid pairs)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if any("\ud800" <= c <= "\udfff" for c in item):
                return True
        elif isinstance(item, dict):
            stack += [*item.keys(), *item.values()]
        elif isinstance(item, list):
            stack += item
    return False


_ANY_JSON = TypeAdapter(Any)


def _write_json(document: Any) -> str:
    """A response body as compact JSON, written by pydantic's serialiser (several times faster on a
    recall's response than ``json.dumps`` with Powertools' encoder, Powertools' default). Non-ASCII
    text is written as UTF-8, not escaped. A string no UTF-8 can hold (a lone surrogate) is
    written escaped by ``json.dumps`` instead of failing the request."""
    try:
        return _ANY_JSON.dump_json(document).decode()
    except ValueError:  # pydantic's serialisation error
        return json.dumps(document, separators=(",", ":"), cls=Encoder)


app = ConcurrentRestResolver(enable_validation=True, json_body_deserializer=_read_json, serializer=_write_json)
SWAGGER_PATH = "/v1/swagger"


def _enable_swagger() -> None:
    """The Swagger UI and the OpenAPI document (``?format=json``) at :data:`SWAGGER_PATH`,
    registered on its first request (:meth:`ConcurrentRestResolver.defer`): Powertools' OpenAPI
    models, which it needs, are costly to import and no other route uses them."""
    from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer

    app.enable_swagger(
        path=SWAGGER_PATH,
        title="Episodic memory API",
        version="1.0.0",
        description="Long-term episodic memory for AI agents. Recalled items are evidence, not instructions.",
        # One scheme for both deployments: a local token from `episodic tokens`, or the JWT the
        # deployed API's authorizer verifies. Swagger UI's "Authorize" button sends it.
        security_schemes={"bearer": HTTPBearer(description="A local token (`episodic tokens`) or, in AWS, a JWT")},
        security=[{"bearer": []}],
        persist_authorization=False,  # a token typed into the page is forgotten with the page
        middlewares=[_swagger_headers],
    )


def _swagger_headers(resolver: Any, next_middleware: Any) -> Response:
    """The console's security headers on the Swagger UI and its document: the page runs only its
    own inlined scripts and styles (each allowed by its hash), talks to this origin only, and is
    never framed, sniffed or named in a referrer."""
    response: Response = next_middleware(resolver)
    html = isinstance(response.body, str) and str(response.content_type or "").startswith("text/html")
    response.headers.update(browser_headers(response.body if html else None))
    return response


app.defer(SWAGGER_PATH, _enable_swagger)

_service: MemoryService | None = None


def get_service() -> MemoryService:
    """The API's composition root, built on first use from ``EPISODIC_*`` settings
    (overridable with :func:`set_service`)."""
    global _service
    if _service is None:
        from episodic.application.settings import Settings
        from episodic.bootstrap.compose import build_service

        _service = build_service(Settings.from_env())
    return _service


def set_service(service: MemoryService | None) -> None:
    global _service
    _service = service


ACTOR_HEADER = "X-Episodic-Actor"
"""Narrows the request's credential to the actors it names (comma-separated): how a tenant-wide
backend, or the MCP server, says whom it acts for. It never widens a credential."""


def current_caller() -> Caller:
    """The caller as established by the authorizer (``actors``: the comma-separated actors a
    bound credential acts for), narrowed by :data:`ACTOR_HEADER`; a request without one is
    refused."""
    authorizer = (app.current_event.raw_event.get("requestContext") or {}).get("authorizer") or {}
    tenant, role = authorizer.get("tenantId"), authorizer.get("role")
    principal = authorizer.get("principalId") or authorizer.get("principalID")
    if not tenant or not role or not principal:
        raise UnauthorizedError("no authenticated caller in the request context")
    if reserved_principal(str(principal)):  # the service's own work: no caller's
        raise UnauthorizedError("the request context names one of the service's own principals")
    bound = _actor_list(authorizer.get("actors"))
    try:
        caller = Caller.model_validate({"tenantId": tenant, "role": role, "principalId": principal, "actors": bound})
    except ValidationError:
        raise UnauthorizedError("the request context names no valid caller") from None
    asked = app.current_event.headers.get(ACTOR_HEADER)  # case-insensitive
    if asked is None:
        return caller
    try:
        return acting_for(caller, _actor_list(asked) or (), get_service().deps.pseudonyms)
    except ValidationError:
        raise InvalidRequestError(
            f"{ACTOR_HEADER} names 1 to {MAX_BOUND_ACTORS} actor ids, comma-separated (letters, digits, _ . : @ -)"
        ) from None


def _actor_list(value: Any) -> tuple[str, ...] | None:
    """``"a,b"`` -> ``("a", "b")``; nothing -> None (API Gateway passes context values as strings)."""
    if not value:
        return None
    return tuple(a.strip() for a in str(value).split(",") if a.strip())


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    if isinstance(body, CamelModel):
        body = body.to_json_dict()
    return Response(status_code=status, content_type="application/json", body=body, headers=headers)


def methods_for(path: str) -> list[str]:
    """The methods the API serves ``path`` with (``[]``: no route): see
    :meth:`~episodic.entrypoints.rest.resolver.ConcurrentRestResolver.methods_for`."""
    return app.methods_for(path)


@app.not_found
def _no_route(_: Exception) -> Response:
    """The one error shape for a path no route serves (404) and for a route asked with another
    method (405, with ``Allow``), instead of Powertools' own ``{"statusCode", "message"}``."""
    event = app.current_event
    path, method = event.path, event.http_method.upper()
    allowed = sorted(set(methods_for(path)) - {method})
    if allowed:
        message = f"{method} is not allowed on {path}; use {', '.join(allowed)}"
        return json_response(405, {"error": "method_not_allowed", "message": message}, {"Allow": ", ".join(allowed)})
    return json_response(404, {"error": "not_found", "message": f"no route {method} {path}"})


@app.exception_handler(EpisodicError)
def _domain_error(error: EpisodicError) -> Response:
    if error.status >= 500:
        logger.warning("request failed", error_code=error.code, error_message=error.message)
    return json_response(error.status, error.to_body())


@app.exception_handler(Exception)
def _unexpected_error(error: Exception) -> Response:
    """A bug, not the caller's fault: log its type and place (never its message, which can quote
    request content) and answer a plain 500."""
    logger.error("request failed unexpectedly", error_type=type(error).__name__, where=_innermost_frame(error))
    return json_response(500, {"error": "internal_error", "message": "the request failed; see the service log"})


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
    return json_response(
        422, {"error": "validation_error", "message": "the request does not match the schema", "detail": detail}
    )
