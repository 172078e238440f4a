"""Sending a :class:`~episodic.client._calls.Call`: settings from arguments or the
environment, retries with backoff on 429, 5xx and lost connections (never on another 4xx),
and the same rules for the sync and the async client."""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from typing import Any

import httpx

from episodic.client._calls import Call, read_answer
from episodic.client.errors import ApiError, ServiceUnavailableError

DEFAULT_URL = "http://127.0.0.1:8765"
USER_AGENT = "episodic-sdk/0.1"
ACTOR_HEADER = "X-Episodic-Actor"  # episodic.entrypoints.rest.app.ACTOR_HEADER


@dataclass(frozen=True)
class Settings:
    base_url: str
    token: str | None
    timeout: float
    retries: int
    backoff: float
    actor: str | None = None

    @classmethod
    def resolve(
        cls,
        base_url: str | None,
        token: str | None,
        timeout: float,
        retries: int,
        backoff: float,
        actor: str | None = None,
    ) -> Settings:
        """Arguments first, then ``EPISODIC_URL`` and ``EPISODIC_TOKEN``; the local server's
        address by default. The token is a local bearer token or a JWT for the deployed API;
        ``actor`` (an argument only) narrows it to the one actor every call acts for."""
        if retries < 0:
            raise ValueError("retries must be 0 or more")
        url = base_url or os.environ.get("EPISODIC_URL") or DEFAULT_URL
        return cls(url.rstrip("/"), token or os.environ.get("EPISODIC_TOKEN"), timeout, retries, backoff, actor)

    def headers(self) -> dict[str, str]:
        headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if self.actor:
            headers[ACTOR_HEADER] = self.actor
        return headers

    def delay(self, attempt: int, response: httpx.Response | None) -> float:
        """Seconds before retry ``attempt`` (1-based): the service's ``Retry-After`` when it
        gives one, else exponential backoff with jitter, capped at 20 s."""
        if response is not None:
            after = response.headers.get("Retry-After", "")
            if after.isdigit():
                return min(float(after), 20.0)
        return min(self.backoff * 2 ** (attempt - 1), 20.0) * (0.5 + random.random() / 2)


def request_args(call: Call[Any]) -> dict[str, Any]:
    args: dict[str, Any] = {"params": dict(call.params), "headers": dict(call.headers)}
    if call.json is not None:
        args["json"] = call.json
    return args


def should_retry(call: Call[Any], response: httpx.Response | None, attempt: int, settings: Settings) -> bool:
    if attempt > settings.retries or not call.retry_safe:
        return False
    if response is None:
        return True  # no answer: the call is retry-safe, so sending it again is too
    return (
        ApiError.from_answer(response.status_code, _body(response)).retryable if response.status_code >= 400 else False
    )


def finish(call: Call[Any], response: httpx.Response | None, error: Exception | None) -> Any:
    """The result of the last attempt: its answer read, or why there was none."""
    if response is None:
        raise ServiceUnavailableError(f"no answer from the service: {error}") from error
    return read_answer(call, response.status_code, _body(response))


def _body(response: httpx.Response) -> Any:
    try:
        return response.json() if response.content else None
    except ValueError:
        return response.text
