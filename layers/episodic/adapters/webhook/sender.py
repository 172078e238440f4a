"""Memory events to a webhook: one signed ``POST`` per event, in order.

Each body is the event's JSON. ``X-Episodic-Signature: t=<unix seconds>,v1=<hex>`` carries an
HMAC-SHA256, under the shared secret, of ``<t>.<body>``: the receiver recomputes it over the raw
body and rejects a mismatch, and rejects a ``t`` too far from its clock (a replay). The event id
is in the body and in ``X-Episodic-Event-Id``: a receiver that has seen an id has seen that
change (deliveries are at least once). Anything but a 2xx is a failure, and the event is sent
again later.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Sequence

import httpx

from episodic.application.ports import DeliveryError
from episodic.domain.model import MemoryEvent

SIGNATURE_HEADER = "X-Episodic-Signature"
EVENT_ID_HEADER = "X-Episodic-Event-Id"


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The ``v1`` value of :data:`SIGNATURE_HEADER` for ``body`` sent at ``timestamp``."""
    return hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


class WebhookSender:
    def __init__(self, url: str, secret: str, timeout: float = 10.0) -> None:
        self.url, self._secret = url, secret
        self._client = httpx.Client(timeout=timeout, follow_redirects=False)

    def send(self, events: Sequence[MemoryEvent]) -> None:
        for event in events:
            body = event.model_dump_json(by_alias=True).encode()
            now = int(time.time())
            headers = {
                "Content-Type": "application/json",
                SIGNATURE_HEADER: f"t={now},v1={signature(self._secret, now, body)}",
                EVENT_ID_HEADER: event.id,
                "User-Agent": "episodic-memory-events/1",
            }
            try:
                answer = self._client.post(self.url, content=body, headers=headers)
            except httpx.HTTPError as exc:
                raise DeliveryError(f"the webhook is unreachable ({type(exc).__name__})") from exc
            if not 200 <= answer.status_code < 300:
                raise DeliveryError(f"the webhook answered {answer.status_code}")

    def close(self) -> None:
        self._client.close()
