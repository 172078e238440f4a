"""The blocking client. Every method is one ``/v1`` operation (see ``_calls``); the
iterators page through the timeline and the audit trail."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

import httpx

from episodic.client import _calls as calls
from episodic.client._transport import Settings, finish, request_args, should_retry
from episodic.domain.model import (
    AuditRecord,
    Caller,
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
from episodic.domain.model.conversations import Turn, TurnsResult

T = TypeVar("T")


class Client:
    """``Client(base_url, token, actor=...)``; the first two default to ``EPISODIC_URL`` /
    ``EPISODIC_TOKEN``; ``actor`` narrows the credential to the one actor every call acts for."""

    def __init__(
        self,
        base_url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.5,
        actor: str | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.settings = Settings.resolve(base_url, token, timeout, retries, backoff, actor)
        self._http = httpx.Client(
            base_url=self.settings.base_url, headers=self.settings.headers(), timeout=timeout, transport=transport
        )

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _send(self, call: calls.Call[T]) -> T:
        attempt = 0
        while True:
            attempt += 1
            response, error = None, None
            try:
                response = self._http.request(call.method, call.path, **request_args(call))
            except httpx.TransportError as lost:
                error = lost
            if not should_retry(call, response, attempt, self.settings):
                result: T = finish(call, response, error)
                return result
            time.sleep(self.settings.delay(attempt, response))

    # -- writes ---------------------------------------------------------------------------

    def remember(
        self, proposal: EpisodeProposal | Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> RememberResult:
        """Propose one episode; the result says allow (with the episode), review or deny."""
        return self._send(calls.remember(proposal, idempotency_key))

    def remember_batch(
        self, proposals: Sequence[EpisodeProposal | Mapping[str, Any]], *, idempotency_key: str | None = None
    ) -> list[RememberResult]:
        """Up to 100 proposals, each decided on its own (results carry ids, not episodes)."""
        return self._send(calls.remember_batch(proposals, idempotency_key))

    def add_messages(
        self,
        session_id: str,
        turns: Sequence[Turn | Mapping[str, Any]],
        *,
        end_session: bool = False,
        project_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> TurnsResult:
        """A conversation's turns: the memorable ones are kept (turn ids as provenance), small
        talk is left out; ``end_session`` writes the handoff summary the next session starts from."""
        return self._send(
            calls.add_turns(session_id, turns, end_session=end_session, project_id=project_id, key=idempotency_key)
        )

    def correct(
        self, event_id: str, proposal: EpisodeProposal | Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> RememberResult:
        return self._send(calls.correct(event_id, proposal, idempotency_key))

    def feedback(self, event_id: str, helpful: bool, note: str | None = None) -> Episode:
        return self._send(calls.feedback(event_id, helpful, note))

    def erase(self, event_id: str) -> ErasureResult:
        return self._send(calls.erase(event_id))

    # -- reads ----------------------------------------------------------------------------

    def recall(self, query: str | RecallRequest | Mapping[str, Any] | None = None, **scope: Any) -> RecallResponse:
        """``recall("what did Sam plan?", actor_id="sam", limit=5)`` or ``recall(RecallRequest(...))``."""
        return self._send(calls.recall(calls.recall_request(query, scope)))

    def get(self, event_id: str) -> Episode:
        return self._send(calls.get(event_id))

    def timeline(self, *, cursor: str | None = None, **filters: Any) -> TimelinePage:
        """One page; filters are ``actor_id project_id event_types tags occurred_after
        occurred_before statuses order limit``."""
        return self._send(calls.timeline(calls.timeline_filters(**filters), cursor))

    def iter_timeline(self, **filters: Any) -> Iterator[Episode]:
        """Every episode the filters admit, page after page."""
        cursor = None
        while True:
            page = self.timeline(cursor=cursor, **filters)
            yield from page.items
            cursor = page.next_cursor
            if cursor is None:
                return

    def health(self) -> Health:
        return self._send(calls.health())

    def whoami(self) -> Caller:
        """Whom the credential acts as: tenant, role, principal and, when bound, its actors."""
        return self._send(calls.whoami())

    # -- operators ------------------------------------------------------------------------

    def erase_actor(self, actor_id: str, reason: str | None = None) -> ErasureResult:
        return self._send(calls.erase_actor(actor_id, reason))

    def restore(self, event_id: str, expires_at: datetime | None = None) -> Episode:
        return self._send(calls.restore(event_id, expires_at))

    def reviews(self, status: str | None = "pending", limit: int = 100) -> list[ReviewView]:
        return self._send(calls.reviews(status, limit))

    def decide_review(self, review_id: str, approve: bool, note: str | None = None) -> ReviewView:
        return self._send(calls.decide_review(review_id, approve, note))

    def audit(
        self,
        *,
        event_id: str | None = None,
        action: str | None = None,
        since: datetime | None = None,
        limit: int = 100,
        cursor: str | None = None,
    ) -> calls.AuditPage:
        """One page of the audit trail, oldest first (from ``since`` when given)."""
        return self._send(calls.audit(event_id, action, limit, cursor, since))

    def iter_audit(
        self, *, event_id: str | None = None, action: str | None = None, since: datetime | None = None
    ) -> Iterator[AuditRecord]:
        cursor = None
        while True:
            page = self.audit(event_id=event_id, action=action, since=since, cursor=cursor)
            yield from page.items
            cursor = page.next_cursor
            if cursor is None:
                return

    def set_writes(self, enabled: bool, reason: str | None = None) -> WritesStatus:
        return self._send(calls.set_writes(enabled, reason))

    def overview(self, days: int = 14) -> OperatorOverview:
        """The tenant at a glance: decisions by reason and recalls per day, retention, what is due."""
        return self._send(calls.overview(days))

    def writes_status(self) -> WritesStatus:
        return self._send(calls.writes_status())
