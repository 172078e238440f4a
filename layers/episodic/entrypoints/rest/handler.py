"""The API's entry points: the Lambda handler behind API Gateway, and the one ``episodic serve``
calls for every local request (the same application; only the logger's keys are kept per thread)."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from episodic.entrypoints.rest import console, routes  # noqa: F401  (registers the routes on the app)
from episodic.entrypoints.rest.app import app, logger

JSON_MEDIA_TYPES = ("application/json", "application/problem+json")
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH"})


def _unsupported_media_type(event: dict[str, Any]) -> dict[str, Any] | None:
    """The API speaks JSON only: a body in any other media type (a form, a multipart upload with
    or without its boundary, JSON in a charset other than UTF-8), or a write that declares one even
    with an empty body, is refused with 415 before anything tries to parse it, as is a body sent
    with a ``Content-Encoding`` (gzip, say: nothing here inflates one). No ``Content-Type`` reads as
    JSON; media types are read in any case."""
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    declared = str(event.get("httpMethod") or "").upper() in WRITE_METHODS and headers.get("content-type")
    if not event.get("body") and not declared:
        return None
    encoding = str(headers.get("content-encoding") or "identity").strip().lower()
    if encoding != "identity":  # a compressed body read as JSON would be refused as unreadable, or worse
        return _refused("request bodies must be sent uncompressed")
    media_type, *parameters = str(headers.get("content-type") or "application/json").lower().split(";")
    charsets = {
        value.strip().strip('"')
        for name, _, value in (p.partition("=") for p in parameters)
        if name.strip() == "charset"
    }
    if media_type.strip() in JSON_MEDIA_TYPES and charsets <= {"utf-8", "utf8"}:
        return None
    return _refused("request bodies must be application/json, in UTF-8")


def _refused(message: str) -> dict[str, Any]:
    """415 ``unsupported_media_type`` with ``message``."""
    body = {"error": "unsupported_media_type", "message": message}
    return {"statusCode": 415, "headers": {"Content-Type": "application/json"}, "body": json.dumps(body)}


def _as_json(event: dict[str, Any]) -> dict[str, Any]:
    """``event`` with the JSON media type it declares (any case, ``problem+json``, a charset) written
    ``application/json``: the validation reads the media type as written, and knew no other."""
    named = [k for k in (event.get("headers") or {}) if k.lower() == "content-type"]
    if not named or event["headers"][named[0]] == "application/json":
        return event
    headers = {k: v for k, v in event["headers"].items() if k.lower() != "content-type"}
    multi = {k: v for k, v in (event.get("multiValueHeaders") or {}).items() if k.lower() != "content-type"}
    return {
        **event,
        "headers": {**headers, "Content-Type": "application/json"},
        "multiValueHeaders": {**multi, "Content-Type": ["application/json"]},
    }


@logger.inject_lambda_context(correlation_id_path="requestContext.requestId")
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """The Lambda entry point: one request per process, so the logger's keys (the request id,
    cold start, the function) are set for the whole process, as Powertools does."""
    return _respond(event, context)


def concurrent_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """The entry point ``episodic serve`` calls from many threads at once: the same application,
    with the request id kept in thread-local logger keys so a log line names its own request."""
    request_id = (event.get("requestContext") or {}).get("requestId")
    logger.thread_safe_append_keys(correlation_id=request_id)
    try:
        return _respond(event, context)
    finally:
        logger.thread_safe_clear_keys()


def _respond(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return _unsupported_media_type(event) or app.resolve(_as_json(event), context)
