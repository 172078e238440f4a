"""Structured recall (no query: time range + tags + type) on the local backend.

Prints p50/p99 latency of ``MemoryService.recall`` over a tenant of N episodes, and the
same question answered by the textbook implementation -- load every memory of the tenant
and filter in a Python loop -- in the same process, with the speed-up as a ratio.

    .venv/bin/python benchmarks/structured_recall.py --episodes 20000 --queries 200
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from episodic.adapters.files.archive import FolderArchive
from episodic.adapters.inprocess.notifier import LogReviewNotifier
from episodic.adapters.sqlite.store import SqliteStore
from episodic.application.ports import Changes, NewEpisode
from episodic.application.service import MemoryService
from episodic.domain.forgetting.pseudonyms import Pseudonyms
from episodic.domain.model import Caller, Episode, EventType, RecallRequest, Role

NOW = datetime(2026, 11, 29, tzinfo=UTC)
TAGS = [f"tag{n}" for n in range(40)]
TYPES = list(EventType)


class _NoQueryEmbedder:
    """Structured recall never embeds; this only satisfies the constructor (benchmark, not product)."""

    name, dimension = "unused", 384

    def embed(self, texts):  # pragma: no cover - never called without a query
        raise AssertionError("structured recall must not embed")


class _FixedNow:
    def now(self) -> datetime:
        return NOW


def populate(store: SqliteStore, count: int, rng: random.Random) -> None:
    batch: list[NewEpisode] = []
    for n in range(count):
        occurred = NOW - timedelta(minutes=rng.randrange(0, 365 * 24 * 60))
        ep = Episode.model_validate(
            {
                "eventId": f"E{n:08d}",
                "tenantId": "acme",
                "actorId": f"actor-{rng.randrange(50)}",
                "eventType": rng.choice(TYPES).value,
                "occurredAt": occurred,
                "recordedAt": occurred,
                "summary": f"synthetic episode {n}",
                "tags": rng.sample(TAGS, 3),
                "sourceRefs": ["bench:1"],
                "sourceTrust": "tool_result",
                "policyVersion": "bench",
            }
        )
        vector = np.random.default_rng(n).standard_normal(384).astype(np.float32)
        batch.append(NewEpisode(ep, vector / np.linalg.norm(vector), "bench"))
        if len(batch) == 1000:
            store.episodes.apply(Changes(tenant_id="acme", put=batch))
            batch = []
            print(f"\r  populating {n + 1}/{count}", end="", file=sys.stderr, flush=True)
    if batch:
        store.episodes.apply(Changes(tenant_id="acme", put=batch))
    print(file=sys.stderr)


def textbook(store: SqliteStore, request: RecallRequest) -> list[str]:
    """Load every memory of the tenant, filter and sort in Python."""
    with store.database.reading() as conn:
        rows = conn.execute("SELECT doc FROM episodes WHERE tenant_id = 'acme'").fetchall()
    after, before = request.occurred_after, request.occurred_before
    assert after is not None and before is not None, "the benchmark's requests name a window"
    hits = []
    for (doc,) in rows:
        ep = Episode.model_validate_json(doc)
        if (
            ep.event_type in request.event_types
            and set(request.tags) <= set(ep.tags)
            and after <= ep.occurred_at < before
        ):
            hits.append(ep)
    hits.sort(key=lambda e: e.occurred_at, reverse=True)
    return [e.event_id for e in hits[: request.limit]]


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=20000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--baseline-queries", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(Path(tmp) / "bench.db")
        populate(store, args.episodes, rng)
        pseudonyms = Pseudonyms(store.pseudonym_key)
        service = MemoryService.build(
            store=store,
            pseudonyms=pseudonyms,
            index=store.recall,
            archive=FolderArchive(Path(tmp) / "archive", pseudonyms),
            embedder=_NoQueryEmbedder(),
            notifier=LogReviewNotifier(),
            clock=_FixedNow(),
        )
        caller = Caller(tenant_id="acme", role=Role.AGENT, principal_id="bench")

        def request() -> RecallRequest:
            start = NOW - timedelta(days=rng.randrange(30, 300))
            return RecallRequest(
                event_types=[rng.choice(TYPES)],
                tags=[rng.choice(TAGS)],
                occurred_after=start,
                occurred_before=start + timedelta(days=30),
                limit=10,
            )

        service_ms, agree = [], 0
        for n in range(args.queries):
            req = request()
            t0 = time.perf_counter()
            got = [i.episode.event_id for i in service.reads.recall(caller, req).items]
            service_ms.append((time.perf_counter() - t0) * 1000)
            if n < args.baseline_queries:
                agree += sorted(got) == sorted(textbook(store, req))
        baseline_ms = []
        for _ in range(args.baseline_queries):
            req = request()
            t0 = time.perf_counter()
            textbook(store, req)
            baseline_ms.append((time.perf_counter() - t0) * 1000)
        p50, p99 = percentile(service_ms, 50), percentile(service_ms, 99)
        base = statistics.median(baseline_ms)
        print(f"structured recall over {args.episodes} episodes in one tenant ({args.queries} queries)")
        print(f"  service  p50 {p50:8.2f} ms   p99 {p99:8.2f} ms   (includes the audit write and access update)")
        print(f"  textbook p50 {base:8.2f} ms   (load all + Python filter, {args.baseline_queries} queries)")
        print(f"  speed-up at p50: {base / p50:6.1f}x    same results as textbook: {agree}/{args.baseline_queries}")
        store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
