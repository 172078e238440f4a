"""Scoped vector recall at scale on the local backend, against two baselines in the same run.

For each tenant size N (10k, 100k, 1M episodes) and scope size S (1k, 100k), it times the
recall index's vector path (scope filter in SQLite, then exact or inverted-file search) --
excluding the query embedding, with random unit vectors -- shows how much of it is the scope's
SQL alone (what admitting the scope costs when it is not kept, i.e. after a write), and numpy
gathering and scoring the scope's rows when they are already known ("gather": memory latency and
arithmetic, no SQL -- for a small scope in a large tenant, the floor of the exact path; a large
scope is not gathered row by row), and compares it, in the same process, with:

* the textbook implementation: a plain Python loop over all memories (filter, dot product,
  sort), timed on a few queries because it is slow;
* unscoped numpy brute force: every vector of the tenant scored, then filtered to the scope.

It prints p50/p99 latency, the speed-up ratios, the top-10 agreement of the index with
exact scoped search, and for tenants large enough to get an index, how long the first query
took (it reads the vectors; the index is prepared aside), how long the index took to be ready,
and the same two after a restart (the index loaded from beside the database). Each scope is
one actor's episodes, scattered through the tenant's rows. Vectors are synthetic but shaped
like sentence embeddings (unit vectors around 2,000 topic centres, cosine ~0.6 to their
centre): isotropic random vectors have no near neighbours at all, and no ANN index can find
what is not there. Sizes are parameters:

    .venv/bin/python benchmarks/recall_at_scale.py                      # 10k and 100k
    .venv/bin/python benchmarks/recall_at_scale.py --sizes 10000,100000,1000000
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from episodic.adapters.sqlite.fts_terms import TermFrequencies
from episodic.adapters.sqlite.scope_cache import admitted
from episodic.adapters.sqlite.store import SqliteStore
from episodic.application.ports import Changes, NewEpisode, Scope
from episodic.domain.model import Episode

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


TEMPLATE = Episode.model_validate(
    {
        "eventId": "E0", "tenantId": "acme", "actorId": "x", "eventType": "tool_observed_event",
        "occurredAt": NOW, "recordedAt": NOW, "summary": "synthetic", "sourceRefs": ["bench:1"],
        "sourceTrust": "tool_result", "policyVersion": "bench",
    }
)  # fmt: skip
TOPICS = [f"topic{i:02d}" for i in range(50)]
"""One of 50 topic words per episode (2% of the tenant each); every summary says "report"."""


class KeepEveryWord(TermFrequencies):
    """Benchmark harness: a ``store.recall.terms`` that leaves every query word in the BM25 search,
    the baseline that :class:`~episodic.adapters.sqlite.fts_terms.TermFrequencies` is measured against."""

    def informative(self, conn: Any, words: list[str], texts: int | None = None) -> list[str]:
        return words


def measure_lexical(store: SqliteStore, queries: int) -> dict[str, float]:
    """Whole-tenant BM25 candidates (no vector) for "report on <topic>": p50 ms with the words
    every summary holds left out of the search, and with every word searched."""
    scope = Scope(tenant_id="acme", now=NOW)
    texts = [f"report on the {TOPICS[i % len(TOPICS)]}" for i in range(queries)]
    timed: dict[str, list[float]] = {"pruned": [], "every_word": []}
    kept = store.recall.terms
    for label, terms in (("pruned", kept), ("every_word", KeepEveryWord())):
        store.recall.terms = terms  # type: ignore[assignment]
        for text in texts:
            t0 = time.perf_counter()
            store.recall.candidates(scope, text, None, 200)
            timed[label].append((time.perf_counter() - t0) * 1000)
    store.recall.terms = kept
    return {f"lexical_{k}_ms": statistics.median(v) for k, v in timed.items()}


class SearchEveryTenant(TermFrequencies):
    """Benchmark harness: a ``store.recall.terms`` that never limits a BM25 search to the tenant's own
    rows inside FTS5, so every tenant's matching rows are scored (as before schema 2)."""

    def holds_few(self, conn: Any, tenant_id: str, texts: int | None = None) -> bool:
        return False


NEIGHBOUR = 1000
"""Episodes of the small tenant measured beside the large one."""


def measure_neighbour(store: SqliteStore, queries: int) -> dict[str, float]:
    """A small tenant's whole-tenant BM25 candidates beside the large tenant ``store`` holds
    (its words in the same share of its texts), p50 ms: searching its own rows inside FTS5,
    every tenant's matching rows scored, and the same tenant alone in a data dir of its own."""
    texts = [f"report on the {TOPICS[i % len(TOPICS)]}" for i in range(queries)]
    scope = Scope(tenant_id="neighbour", now=NOW)
    puts = [
        NewEpisode(TEMPLATE.model_copy(update={"tenant_id": "neighbour", "event_id": f"N{n:05d}",
                                              "summary": f"report {n} on the {TOPICS[n % len(TOPICS)]}"}), None)
        for n in range(NEIGHBOUR)
    ]  # fmt: skip
    store.episodes.apply(Changes(tenant_id="neighbour", put=puts))
    timed: dict[str, list[float]] = {"own_rows": [], "every_tenant": [], "alone": []}
    with tempfile.TemporaryDirectory() as tmp:
        alone = SqliteStore(Path(tmp) / "alone.db")
        alone.episodes.apply(Changes(tenant_id="neighbour", put=puts))
        kept = store.recall.terms
        for label, target, terms in (
            ("own_rows", store, kept),
            ("every_tenant", store, SearchEveryTenant()),
            ("alone", alone, alone.recall.terms),
        ):  # fmt: skip
            target.recall.terms = terms
            for text in texts:
                t0 = time.perf_counter()
                target.recall.candidates(scope, text, None, 200)
                timed[label].append((time.perf_counter() - t0) * 1000)
        store.recall.terms = kept
        alone.close()
    return {f"neighbour_{k}_ms": statistics.median(v) for k, v in timed.items()}


def populate(store: SqliteStore, total: int, scopes: list[int], rng: np.random.Generator) -> None:
    """Each scope is one actor's (scope-<i>) episodes, scattered through the tenant's rows as a
    real actor's would be; the rest belong to 97 others."""
    owner = np.full(total, -1)
    for i, size in enumerate(scopes):
        owner[rng.permutation(np.flatnonzero(owner < 0))[:size]] = i
    batch = 2000
    for start in range(0, total, batch):
        count = min(batch, total - start)
        vectors = embedding_like(rng, count)
        puts = []
        for i in range(count):
            n = start + i
            actor = f"scope-{owner[n]}" if owner[n] >= 0 else f"other-{n % 97}"
            summary = f"report {n} on the {TOPICS[n % len(TOPICS)]}"
            episode = TEMPLATE.model_copy(update={"event_id": f"E{n:08d}", "actor_id": actor, "summary": summary})
            puts.append(NewEpisode(episode, vectors[i], EMBEDDER))
        store.episodes.apply(Changes(tenant_id="acme", put=puts))
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


def measure_scope(
    store: SqliteStore, corpus: tuple[list[str], Any, np.ndarray], actor: str, args: Any, rng: Any
) -> dict[str, Any]:
    """Latency of the store's vector path for one actor's scope, the two baselines, agreement."""
    all_ids, all_actors, matrix = corpus
    scope = Scope(tenant_id="acme", now=NOW, actor_id=actor)
    scope_mask = all_actors == actor
    queries = embedding_like(rng, args.queries)
    index_ms, numpy_ms, found, agree = [], [], [], 0
    store.vector_search.strategies.clear()
    for q in queries:  # the store's queries back to back, then the baseline's: neither evicts the other's cache
        t0 = time.perf_counter()
        found.append([c.event_id for c in store.recall.candidates(scope, None, q, 10).items])
        index_ms.append((time.perf_counter() - t0) * 1000)
    for q, got in zip(queries, found, strict=True):
        t0 = time.perf_counter()
        sims = matrix @ q
        sims[~scope_mask] = -np.inf
        exact = [all_ids[i] for i in np.argsort(-sims)[:10]]
        numpy_ms.append((time.perf_counter() - t0) * 1000)
        agree += len(set(got) & set(exact))
    rows = np.flatnonzero(scope_mask)  # numpy given this scope's rows: gathered and scored, no SQL
    gather_ms = []
    for q in queries:
        t0 = time.perf_counter()
        np.argpartition(-(matrix[rows] @ q), 10)[:10]
        gather_ms.append((time.perf_counter() - t0) * 1000)
    admit_ms = []
    with store.database.reading() as conn:
        for _ in queries:
            t0 = time.perf_counter()
            admitted(conn, scope)  # what admitting the scope costs when it is not kept (after a write)
            admit_ms.append((time.perf_counter() - t0) * 1000)
    book_ms = []
    for q in queries[: args.textbook_queries]:
        t0 = time.perf_counter()
        textbook(all_ids, all_actors, matrix, actor, q.tolist(), 10)
        book_ms.append((time.perf_counter() - t0) * 1000)
    used = store.vector_search.strategies.most_common(1)[0][0]
    return {
        "p50": statistics.median(index_ms), "p99": pct(index_ms, 99), "strategy": used,
        "admit": statistics.median(admit_ms), "gather": statistics.median(gather_ms),
        "book": statistics.median(book_ms), "brute": statistics.median(numpy_ms),
        "agree": agree / (10 * len(queries)),
    }  # fmt: skip


def timed_first_query(store: SqliteStore, actor: str, rng: Any) -> float:
    t0 = time.perf_counter()
    store.recall.candidates(Scope(tenant_id="acme", now=NOW, actor_id=actor), None, embedding_like(rng, 1)[0], 10)
    return (time.perf_counter() - t0) * 1000


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--scopes", default="1000,100000")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--textbook-queries", type=int, default=2)
    parser.add_argument("--json", help="also write every row and note to this file")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    scope_sizes = [int(s) for s in args.scopes.split(",")]
    rng = np.random.default_rng(11)
    print(f"{'tenant':>9} {'scope':>8} {'index p50':>10} {'p99':>8} {'scope SQL':>9} {'gather':>7} {'strategy':>8} "
          f"{'textbook':>10} {'x':>7} {'numpy-all':>10} {'x':>6} {'top10 agree':>11}")  # fmt: skip
    notes: list[str] = []
    results: list[dict[str, Any]] = []
    for total in sizes:
        scopes = plan_scopes(total, scope_sizes)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "bench.db"
            store = SqliteStore(path, embedder=EMBEDDER)
            populate(store, total, scopes, rng)
            with store.database.reading() as conn:
                rows = conn.execute("SELECT event_id, actor_id, vector FROM episodes ORDER BY rowid").fetchall()
            corpus = (
                [r[0] for r in rows],
                np.array([r[1] for r in rows]),
                np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(len(rows), DIM),
            )
            del rows
            lexical = measure_lexical(store, max(3, args.queries // 5))
            results.append({"tenant": total, **lexical})
            notes.append(
                f'{total:,}: whole-tenant BM25 for "report on <topic>" (every summary says "report"): p50 '
                f"{lexical['lexical_pruned_ms']:,.1f} ms; with every word searched "
                f"{lexical['lexical_every_word_ms']:,.1f} ms"
            )
            near = measure_neighbour(store, max(3, args.queries // 5))
            results.append({"tenant": total, **near})
            notes.append(
                f"{total:,}: a {NEIGHBOUR:,}-episode tenant beside it, same queries: p50 "
                f"{near['neighbour_own_rows_ms']:,.2f} ms searching its own rows inside FTS5; "
                f"{near['neighbour_every_tenant_ms']:,.2f} ms scoring every tenant's matching rows (before); "
                f"{near['neighbour_alone_ms']:,.2f} ms alone in a data dir of its own"
            )
            cold = timed_first_query(store, "scope-0", rng)  # reads the vectors; starts the index aside
            t0 = time.perf_counter()
            store.vector_search.wait_for_indexing()
            built = time.perf_counter() - t0
            for i, size in enumerate(scopes):
                m = measure_scope(store, corpus, f"scope-{i}", args, rng)
                results.append({"tenant": total, "scope": size, **m})
                print(
                    f"{total:>9,} {size:>8,} {m['p50']:>8.2f}ms {m['p99']:>6.1f}ms {m['admit']:>7.2f}ms "
                    f"{m['gather']:>5.2f}ms "
                    f"{m['strategy']:>8} "
                    f"{m['book']:>8.0f}ms {m['book'] / m['p50']:>6.0f}x {m['brute']:>8.2f}ms "
                    f"{m['brute'] / m['p50']:>5.1f}x {m['agree']:>11.3f}"
                )
            store.close()
            store = SqliteStore(path, embedder=EMBEDDER)  # a restart: the index comes from disk
            restart_cold = timed_first_query(store, "scope-0", rng)
            t0 = time.perf_counter()
            store.vector_search.wait_for_indexing()
            loaded = time.perf_counter() - t0
            store.close()
            store = SqliteStore(path, embedder=EMBEDDER)  # a restart as `episodic serve` does it: warmed up
            t0 = time.perf_counter()
            store.recall.warm_up(DIM).join()
            store.vector_search.wait_for_indexing()
            warmed = time.perf_counter() - t0
            warm_first = timed_first_query(store, "scope-0", rng)
            store.close()
            if total >= store.vector_search.ann_threshold:
                results.append({"tenant": total, "first_ms": cold, "built_s": built, "restart_first_ms": restart_cold,
                                "loaded_s": loaded, "warmed_s": warmed, "warm_first_ms": warm_first})  # fmt: skip
                notes.append(
                    f"{total:,}: first query {cold:,.0f} ms (reads the vectors; exact search answers while the "
                    f"index is prepared aside: cells learned and filled in {built:.1f} s); after a restart, first "
                    f"query {restart_cold:,.0f} ms, index loaded from disk in {loaded:.1f} s (no cells learned); "
                    f"after a restart by `episodic serve`, which reads large tenants at start ({warmed:.1f} s, in "
                    f"the background), first query {warm_first:,.1f} ms"
                )
    print("\n".join(["", *notes]) if notes else "")
    if args.json:
        Path(args.json).write_text(json.dumps(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
