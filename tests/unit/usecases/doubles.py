"""Test doubles for the use-case unit tests, each named as one.

The store (SQLite), the archive (folders) and the summariser (extractive) are the real
components; only what needs the embedding model or what a test must observe or break is
replaced. The embedder double is :class:`tests.support.doubles.HashingTestEmbedder`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from episodic.application.ports import Changes
from episodic.domain.errors import StorageError
from episodic.domain.model import Episode, Review


class RecordingReviewNotifierDouble:
    """TEST DOUBLE for the review workflow: records every notification it is given."""

    def __init__(self) -> None:
        self.requested: list[tuple[Review, Episode]] = []
        self.decided: list[Review] = []

    def review_requested(self, review: Review, episode: Episode) -> None:
        self.requested.append((review, episode))

    def review_decided(self, review: Review) -> None:
        self.decided.append(review)


class CompactionSpyDouble:
    """TEST DOUBLE around the real store's erasure compaction: counts the calls, then delegates."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.calls = 0

    def compact_after_erasure(self) -> None:
        self.calls += 1
        self.real.compact_after_erasure()


class StoreSpyDouble:
    """TEST DOUBLE around the real store: records every change set given to ``apply`` and can
    be told to fail a recall's access count (``record_recall``) or to miss the next idempotency lookups; everything else
    is the real store's."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.applied: list[Changes] = []
        self.fail_access_count = False
        self.idempotency_misses = 0

    def apply(self, changes: Changes) -> None:
        self.applied.append(changes)
        self.real.apply(changes)

    def apply_many(self, change_sets: Sequence[Changes]) -> list[Any]:
        self.applied.extend(change_sets)
        return self.real.apply_many(change_sets)

    def record_recall(self, audit: Any, event_ids: Sequence[str], at: Any) -> bool:
        if self.fail_access_count:  # the record is written, the count is not
            self.real.apply(Changes(tenant_id=audit.tenant_id, audit=[audit], durable=False))
            return False
        return bool(self.real.record_recall(audit, event_ids, at))

    def find_idempotency(self, tenant_id: str, key: str) -> Any:
        if self.idempotency_misses:
            self.idempotency_misses -= 1  # as if a concurrent request had not committed yet
            return None
        return self.real.find_idempotency(tenant_id, key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


class FailingArchiveDouble:
    """TEST DOUBLE around the real folder archive whose deletions fail (an unreachable bucket)."""

    def __init__(self, real: Any) -> None:
        self.real = real

    def delete_events(self, tenant_id: str, event_ids: Sequence[str]) -> int:
        raise StorageError("injected: the archive is unavailable")

    def delete_actor(self, tenant_id: str, actor_id: str) -> int:
        raise StorageError("injected: the archive is unavailable")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


class ScriptedSummariserDouble:
    """TEST DOUBLE summariser: answers with ``lines``, or raises for the actors in ``fail_for``."""

    name = "test-double/scripted"

    def __init__(self, lines: Sequence[str] = (), fail_for: Sequence[str] = ()) -> None:
        self.lines = list(lines)
        self.fail_for = set(fail_for)
        self.calls: list[list[Episode]] = []

    def summarise(self, episodes: Sequence[Episode], max_lines: int = 3) -> list[str]:
        self.calls.append(list(episodes))
        if {e.actor_id for e in episodes} & self.fail_for:
            raise RuntimeError("injected: the summariser failed")
        return list(self.lines) or [e.summary for e in episodes][:max_lines]


class RenamedEmbedderDouble:
    """TEST DOUBLE: another embedder double under a new identity, as after a model upgrade."""

    def __init__(self, real: Any, name: str) -> None:
        self.real = real
        self.name = name
        self.dimension = real.dimension

    def embed(self, texts: Sequence[str]) -> list[Any]:
        return self.real.embed(texts)
