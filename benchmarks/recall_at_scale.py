"""Scoped vector recall at scale on the local backend, against two baselines in the same run.

For each tenant size N (10k, 100k, 1M episodes) and scope size S (1k, 100k), it times the
recall index's vector path (scope filter in SQLite, then exact or filtered-HNSW search) --
excluding the query embedding, with random unit vectors -- and compares it, in the same
process, with:

* the textbook implementation: a plain Python loop over all memories (filter, dot product,
  sort), timed on a few queries because it is slow;
* unscoped numpy brute force: every vector of the tenant scored, then filtered to the scope.

It prints p50/p99 latency, the speed-up ratios, and the top-10 agreement of the index with
exact scoped search. Vectors are synthetic but shaped like sentence embeddings (unit vectors
around 2,000 topic centres, cosine ~0.6 to their centre): isotropic random vectors have no
near neighbours at all, and no ANN index can find what is not there. Sizes are parameters:

    .venv/bin/python benchmarks/recall_at_scale.py                      # 10k and 100k
    .venv/bin/python benchmarks/recall_at_scale.py --sizes 10000,100000,1000000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from episodic.adapters.local.sqlite_store import SqliteStore
from episodic.model import Episode
from episodic.ports import Changes, NewEpisode, Scope

DIM = 384
NOW = datetime(2026, 11, 29, tzinfo=UTC)
EMBEDDER = "bench/random-unit"


CENTRES = np.random.default_rng(3).standard_normal((2000, DIM)).astype(np.float32)
CENTRES /= np.linalg.norm(CENTRES, axis=1, keepdims=True)


def embedding_like(rng: np.random.Generator, count: int) -> np.ndarray:
    """Unit vectors clustered around topic centres, like sentence embeddings of real text."""
    noise = rng.standard_normal((count, DIM)).astype(np.float32) / np.sqrt(DIM)
    vectors = CENTRES[rng.integers(0, len(CENTRES), count)] + 1.3 * noise
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def plan_scopes(total: int, wanted: list[int]) -> list[int]:
    """Disjoint actor scopes: each wanted size, shrunk to what is left of the tenant."""
    sizes, left = [], total
    for size in sorted(wanted):
        size = min(size, left)
        if size > 0:
            sizes.append(size)
            left -= size
    return sizes


def populate(store: SqliteStore, total: int, scopes: list[int], rng: np.random.Generator) -> None:
    """The first episodes belong to one actor per scope (scope-<i>), the rest to 97 others."""
    bounds = list(np.cumsum(scopes))
    template = Episode.model_validate(
        {
            "eventId": "E0", "tenantId": "acme", "actorId": "x", "eventType": "tool_observed_event",
            "occurredAt": NOW, "recordedAt": NOW, "summary": "synthetic", "sourceRefs": ["bench:1"],
            "sourceTrust": "tool_result", "policyVersion": "bench",
        }
    )  # fmt: skip
    batch = 2000
    for start in range(0, total, batch):
        count = min(batch, total - start)
        vectors = embedding_like(rng, count)
        puts = []
        for i in range(count):
            n = start + i
            actor = next((f"scope-{i}" for i, b in enumerate(bounds) if n < b), f"other-{n % 97}")
            episode = template.model_copy(update={"event_id": f"E{n:08d}", "actor_id": actor, "summary": f"event {n}"})
            puts.append(NewEpisode(episode, vectors[i], EMBEDDER))
        store.apply(Changes(tenant_id="acme", put=puts))
        print(f"\r  populating {start + count:,}/{total:,}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)


def textbook(ids: list[str], actors: Any, matrix: np.ndarray, actor: str, query: list[float], k: int) -> list[str]:
    """A plain Python loop over all memories: filter by actor, dot product, sort."""
    scored = []
    for i, event_id in enumerate(ids):
        if actors[i] == actor:
            vector = matrix[i].tolist()
            scored.append((sum(a * b for a, b in zip(vector, query, strict=True)), event_id))
    scored.sort(reverse=True)
    return [e for _, e in scored[:k]]


def pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1] if len(values) > 2 else max(values)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--scopes", default="1000,100000")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--textbook-queries", type=int, default=2)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    scope_sizes = [int(s) for s in args.scopes.split(",")]
    rng = np.random.default_rng(11)
    print(f"{'tenant':>9} {'scope':>8} {'index p50':>10} {'p99':>8} {'strategy':>8} "
          f"{'textbook':>10} {'x':>7} {'numpy-all':>10} {'x':>6} {'top10 agree':>11} {'cold':>10}")  # fmt: skip
    for total in sizes:
        scopes = plan_scopes(total, scope_sizes)
        with tempfile.TemporaryDirectory() as tmp:
            store = SqliteStore(Path(tmp) / "bench.db", embedder=EMBEDDER)
            populate(store, total, scopes, rng)
            with store.reading() as conn:
                rows = conn.execute("SELECT event_id, actor_id, vector FROM episodes").fetchall()
            all_ids = [r[0] for r in rows]
            all_actors = np.array([r[1] for r in rows])
            matrix = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(len(rows), DIM)
            del rows
            for i, size in enumerate(scopes):
                actor = f"scope-{i}"
                scope = Scope(tenant_id="acme", now=NOW, actor_id=actor)
                scope_mask = all_actors == actor
                queries = embedding_like(rng, args.queries + 1)
                t0 = time.perf_counter()
                store.candidates(scope, None, queries[0], 10)  # cold: loads vectors, builds HNSW if needed
                cold_ms = (time.perf_counter() - t0) * 1000
                index_ms, numpy_ms, agree = [], [], 0
                for q in queries[1:]:
                    t0 = time.perf_counter()
                    got = [c.event_id for c in store.candidates(scope, None, q, 10).items]
                    index_ms.append((time.perf_counter() - t0) * 1000)
                    t0 = time.perf_counter()
                    sims = matrix @ q
                    sims[~scope_mask] = -np.inf
                    exact = [all_ids[i] for i in np.argsort(-sims)[:10]]
                    numpy_ms.append((time.perf_counter() - t0) * 1000)
                    agree += len(set(got) & set(exact))
                book_ms = []
                for q in queries[1 : 1 + args.textbook_queries]:
                    t0 = time.perf_counter()
                    textbook(all_ids, all_actors, matrix, actor, q.tolist(), 10)
                    book_ms.append((time.perf_counter() - t0) * 1000)
                p50 = statistics.median(index_ms)
                book, brute = statistics.median(book_ms), statistics.median(numpy_ms)
                strategy = "hnsw" if size >= store.vectors.ann_threshold else "exact"
                print(
                    f"{total:>9,} {size:>8,} {p50:>8.2f}ms {pct(index_ms, 99):>6.1f}ms {strategy:>8} "
                    f"{book:>8.0f}ms {book / p50:>6.0f}x {brute:>8.2f}ms {brute / p50:>5.1f}x "
                    f"{agree / (10 * args.queries):>11.3f} {cold_ms:>8.0f}ms"
                )
            store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
