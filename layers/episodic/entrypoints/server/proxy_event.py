"""The API Gateway REST (v1) proxy event a local request becomes, and the Lambda context passed
with it: what the local server hands the same handler that runs in Lambda."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class LocalLambdaContext:
    """What the Lambda runtime would pass as ``context``, filled in for local calls."""

    aws_request_id: str
    function_name: str = "episodic-api-local"
    function_version: str = "$LATEST"
    invoked_function_arn: str = "arn:aws:lambda:local:000000000000:function:episodic-api-local"
    memory_limit_in_mb: int = 1024

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def build_event(
    method: str,
    raw_path: str,
    headers: dict[str, str],
    body: str | None,
    authorizer: dict[str, str] | None,
    source_ip: str = "127.0.0.1",
) -> dict[str, Any]:
    """An API Gateway REST (v1) proxy event for one local request."""
    parts = urlsplit(raw_path)
    multi_query = parse_qs(parts.query, keep_blank_values=True)
    request_id = str(uuid.uuid4())
    return {
        "resource": parts.path,
        "path": parts.path,
        "httpMethod": method,
        "headers": dict(headers),
        "multiValueHeaders": {k: [v] for k, v in headers.items()},
        "queryStringParameters": {k: v[-1] for k, v in multi_query.items()} or None,
        "multiValueQueryStringParameters": multi_query or None,
        "pathParameters": None,
        "stageVariables": None,
        "requestContext": {
            "requestId": request_id,
            "stage": "local",
            "httpMethod": method,
            "path": parts.path,
            "resourcePath": parts.path,
            "identity": {"sourceIp": source_ip},
            "authorizer": authorizer,
        },
        "body": body,
        "isBase64Encoded": False,
    }
