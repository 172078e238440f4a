"""The OpenSearch client the recall index uses, and how its errors become domain errors.

One place builds the client (HTTPS with certificate checks, every request SigV4-signed) and
one place translates ``opensearchpy`` errors into :class:`~episodic.domain.errors.StorageError`
carrying the operation, the HTTP status and the error type only: OpenSearch error reasons
can quote document content (a mapping failure previews the field's value), so they never
reach a message or a log line from here.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlparse

from opensearchpy import OpenSearch, RequestsAWSV4SignerAuth, RequestsHttpConnection
from opensearchpy.exceptions import ConnectionError as OpenSearchConnectionError
from opensearchpy.exceptions import ConnectionTimeout, OpenSearchException, TransportError

from episodic.domain import linear
from episodic.domain.errors import StorageError

logger = logging.getLogger(__name__)

SERVICES = ("es", "aoss")
"""SigV4 service names: ``es`` for managed domains, ``aoss`` for Serverless collections."""

_ERROR_TYPE = linear.compile(r"^[a-z_]{1,80}$")


def client_for(
    endpoint: str,
    region: str,
    service: str = "es",
    *,
    timeout: float = 10.0,
    retry_on_timeout: bool = True,
) -> OpenSearch:
    """The one place a client is built: HTTPS with certificate checks, every request SigV4-signed.

    ``endpoint`` is the domain or collection endpoint (``https://search-x.eu-west-1.es.amazonaws.com``
    or ``https://abc123.eu-west-1.aoss.amazonaws.com``; the scheme may be omitted). Credentials
    come from the default boto3 chain (the Lambda role), refreshed as they expire.

    ``timeout`` bounds each attempt; a refused connection is retried twice, a timeout only with
    ``retry_on_timeout``. A caller that has something better to do than wait (recall, which
    falls back to the timeline) asks for a short timeout and no retry on timeout; the stream
    processor, which only has OpenSearch to write to, keeps the defaults.
    """
    if service not in SERVICES:
        raise ValueError(f"service must be one of {SERVICES}, not {service!r}")
    parsed = urlparse(endpoint if "://" in endpoint else f"https://{endpoint}")
    if parsed.scheme != "https" or not parsed.hostname:
        raise ValueError("the OpenSearch endpoint must be an https:// URL or a host name")
    import boto3

    credentials = boto3.Session().get_credentials()
    if credentials is None:
        raise ValueError("no AWS credentials found to sign OpenSearch requests")
    return OpenSearch(
        hosts=[{"host": parsed.hostname, "port": parsed.port or 443}],
        http_auth=RequestsAWSV4SignerAuth(credentials, region, service),
        use_ssl=True,
        verify_certs=True,
        connection_class=RequestsHttpConnection,
        timeout=timeout,
        max_retries=2,
        retry_on_timeout=retry_on_timeout,
    )


def describe(error: OpenSearchException) -> tuple[Any, str]:
    """Status and error type of an ``opensearchpy`` error -- never its reason text."""
    if isinstance(error, ConnectionTimeout):
        return None, "timeout"
    if isinstance(error, OpenSearchConnectionError):
        return None, "connection_error"
    if isinstance(error, TransportError):
        return error.status_code, error_type(error.error)
    return None, type(error).__name__


def error_type(value: Any) -> str:
    """An OpenSearch error type (``index_not_found_exception``), or ``unknown`` for anything else."""
    return value if isinstance(value, str) and _ERROR_TYPE.match(value) else "unknown"


@contextmanager
def storage_errors(operation: str) -> Iterator[None]:
    """Turn ``opensearchpy`` errors into a :class:`StorageError` (503: the caller may retry)."""
    try:
        yield
    except OpenSearchException as exc:
        status, kind = describe(exc)
        logger.warning("opensearch %s failed: status=%s type=%s", operation, status, kind)
        if status is None:
            message = f"the recall index is unreachable ({operation}: {kind})"
        else:
            message = f"the recall index failed ({operation}: HTTP {status} {kind})"
        raise StorageError(message, operation=operation, status=status, type=kind) from None
