"""Recall that degrades instead of failing: OpenSearch first, the timeline when it cannot answer.

OpenSearch is a projection and a separate cluster; it can be down, slow, or mid-upgrade
while DynamoDB, the source of truth, answers fine. A recall that fails with it would turn an
index outage into an agent outage. So when the primary index raises
:class:`~episodic.domain.errors.StorageError` (unreachable, timed out, every search failed), the
same request is answered by the DynamoDB scoped index -- exact for the scope, so nothing the
caller may see is lost -- and the answer says so: ``fallback_index`` in
:attr:`~episodic.application.ports.RecallCandidates.degraded`, followed by anything the fallback itself
reports.

The fallback keeps its own limit: a scope larger than it may rank (``max_scope``) is still
refused rather than read whole. Since the request was fine and only the outage makes the
scope too large, that refusal is a :class:`~episodic.domain.errors.StorageError` (503: retry later,
or narrow the scope), not the 422 the scoped index gives on its own.

Other errors pass through untouched: an invalid request is invalid for both indexes, and a
cluster this adapter refuses to run on
(:class:`~episodic.adapters.opensearch.schema.RecallIndexSetupError`) needs an operator,
not a quiet detour.
"""

from __future__ import annotations

import logging

from episodic.adapters.opensearch.scoped import ScopeTooLargeError
from episodic.application.ports import PendingVector, RecallCandidates, RecallIndex, Scope, Vector
from episodic.domain.errors import StorageError

logger = logging.getLogger(__name__)

FALLBACK = "fallback_index"


class FallbackRecallIndex:
    """:class:`~episodic.application.ports.RecallIndex`: ``primary`` unless it fails, then ``fallback``."""

    def __init__(self, primary: RecallIndex, fallback: RecallIndex) -> None:
        self.primary = primary
        self.fallback = fallback

    def candidates(
        self,
        scope: Scope,
        query_text: str | None,
        query_vector: Vector | PendingVector | None,
        pool_size: int,
        embedder: str | None = None,
    ) -> RecallCandidates:
        try:
            return self.primary.candidates(scope, query_text, query_vector, pool_size, embedder)
        except StorageError as exc:
            logger.warning("recall index unavailable (%s %s); answering from the timeline", exc.code, exc.details)
        try:
            found = self.fallback.candidates(scope, query_text, query_vector, pool_size, embedder)
        except ScopeTooLargeError as exc:
            raise StorageError(
                "the recall index is unavailable and this scope is too large to rank without it: "
                "narrow it (actor, project, type, tags, time) or retry later",
                reason="fallback_scope_too_large",
                maxScope=exc.details.get("maxScope"),
            ) from exc
        return RecallCandidates(found.items, (FALLBACK, *found.degraded))
