"""Idempotent writes: the same key and body give the first result again, nothing new stored;
the same key with another body is a conflict.

Every item carries its own idempotency record, committed atomically with that item's writes
(a batch item's key is the request key plus its position). A retry after a crash mid-batch
therefore replays what was done and writes only what was not, on any backend, without one
transaction for the whole batch. Keys are stored hashed: a caller may put anything in one,
an actor's name included, and the record outlives an erasure of that actor.

A key is its principal's own (the credential's, or a system actor's): the same key from another
principal of the tenant is another key. Shared across the tenant, one agent could take the key a
system write would use (a session's handoff, a digest, an ingested event) and so stop that write,
and learn from a conflict that another principal had used a key.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from episodic.application.ports import IdempotencyRecord
from episodic.application.usecases.deps import Deps, hash_text
from episodic.domain.errors import ConflictError, IdempotencyConflictError, InvalidRequestError
from episodic.domain.model import Caller, Decision, EpisodeProposal, RememberResult

ItemKey = tuple[str, str, str]
"""``(stored key, request hash, kind)`` of one item of an idempotent request."""

Write = Callable[[Caller, list[EpisodeProposal], Sequence[ItemKey | None], Sequence[int]], list[RememberResult]]
"""Writes proposals with their item keys; the last argument says where each was in the request."""


def stored_idempotency_key(caller: Caller, key: str) -> str:
    """How ``caller``'s Idempotency-Key is kept: the hash of its principal and the key (lookups need
    only equality)."""
    return hash_text(json.dumps([caller.principal_id, key]))


class Idempotency:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps

    def run(
        self, caller: Caller, kind: str, proposals: list[EpisodeProposal], key: str | None, write: Write
    ) -> list[RememberResult]:
        """``write`` the proposals not written before under ``key``; replay the others."""
        if key is None:
            return write(caller, proposals, [None] * len(proposals), range(len(proposals)))
        item_keys, request_hash, results = self._lookup(caller, kind, proposals, key)
        pending = [i for i, r in enumerate(results) if r is None]
        if pending:
            written = write(
                caller, [proposals[i] for i in pending], [(item_keys[i], request_hash, kind) for i in pending], pending
            )
            for i, result in zip(pending, written, strict=True):
                results[i] = result
        return [r for r in results if r is not None]

    def replay(
        self, caller: Caller, kind: str, proposals: list[EpisodeProposal], key: str
    ) -> list[RememberResult] | None:
        """The results of an earlier request under ``key`` with this body, or None when any
        item of it was not written before (same rules as :meth:`run`, nothing written)."""
        _, _, results = self._lookup(caller, kind, proposals, key)
        return None if any(r is None for r in results) else [r for r in results if r is not None]

    def _lookup(
        self, caller: Caller, kind: str, proposals: list[EpisodeProposal], key: str
    ) -> tuple[list[str], str, list[RememberResult | None]]:
        """Each item's stored key, the request hash, and each item's earlier result (or None)."""
        if not 1 <= len(key) <= 255:
            raise InvalidRequestError("Idempotency-Key must be 1 to 255 characters")
        body = json.dumps([p.to_json_dict() for p in proposals], sort_keys=True, separators=(",", ":"))
        request_hash = hash_text(f"{kind}\n{body}")
        item_keys = [key] if kind == "remember" else [f"{key}\x1f{i}" for i in range(len(proposals))]
        item_keys = [stored_idempotency_key(caller, k) for k in item_keys]
        # A single write keeps its record under the key, a batch under key + position: a key
        # first used by the other kind of request is found only by looking there.
        other_kind = stored_idempotency_key(caller, f"{key}\x1f0" if kind == "remember" else key)
        if self.deps.episodes.find_idempotency(caller.tenant_id, other_kind) is not None:
            raise IdempotencyConflictError("this Idempotency-Key was already used with a different request body")
        results: list[RememberResult | None] = []
        for item_key in item_keys:
            previous = self.deps.episodes.find_idempotency(caller.tenant_id, item_key)
            results.append(None if previous is None else self.replayed(caller, previous, request_hash, kind))
        return item_keys, request_hash, results

    def replayed(self, caller: Caller, previous: IdempotencyRecord, request_hash: str, kind: str) -> RememberResult:
        """The earlier result. A write whose episode is gone since (erased, or denied at review)
        cannot be replayed, a batch's item no more than a single write (409: the answer would name
        an episode that is gone). A single write shows its episode as it is now; a batch's
        results never carry the episode."""
        if previous.request_hash != request_hash:
            raise IdempotencyConflictError("this Idempotency-Key was already used with a different request body")
        result = RememberResult.model_validate(previous.result)
        if result.decision is Decision.DENY or result.event_id is None:
            return result
        episode = self.deps.episodes.get(caller.tenant_id, result.event_id)
        if episode is None:
            raise ConflictError(
                "an episode written with this Idempotency-Key is gone since (erased, or denied at review); "
                "use a new key to write again",
                eventId=result.event_id,
            )
        if kind != "remember" or result.decision is Decision.REVIEW:  # held text is for reviewers
            return result
        return result.model_copy(update={"episode": episode, "status": episode.status})
