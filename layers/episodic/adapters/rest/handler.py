"""The API's entry point: the Lambda handler behind API Gateway, which ``episodic serve``
calls for every local request too."""

from __future__ import annotations

import json
import threading
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from episodic.adapters.rest import console, routes  # noqa: F401  (registers the routes on the app)
from episodic.adapters.rest.app import app, logger

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
