"""The Python SDK: :class:`Client` and :class:`AsyncClient` over ``/v1``.

Only httpx and the service's own pydantic models are needed (no torch, numpy or boto3), and
the same client talks to ``episodic serve`` and to the deployed API::

    from episodic.client import Client

    with Client("http://127.0.0.1:8765", token="...") as memory:
        memory.add_messages("session-1", [{"turnId": "t1", "speaker": "sam", "text": "...",
                                           "occurredAt": "2026-12-01T10:00:00Z"}])
        found = memory.recall("what is Sam learning?")
        prompt_block = found.context  # evidence, framed as past events

Writes carry an Idempotency-Key (yours, or a fresh one), so they are retried safely on 429,
5xx and lost connections; 4xx answers are never retried. A policy denial is a result
(``decision == "deny"`` with its reasons), every other error an :class:`ApiError`.
"""

from episodic.client._calls import AuditPage
from episodic.client.asynchronous import AsyncClient
from episodic.client.errors import ApiError, ServiceUnavailableError
from episodic.client.synchronous import Client

__all__ = ["ApiError", "AsyncClient", "AuditPage", "Client", "ServiceUnavailableError"]
