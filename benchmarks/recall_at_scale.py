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
what is not there.

For each tenant size it also times the search by words (whole-tenant BM25 from the in-memory word
index, interleaved query by query with SQLite FTS5 ranking the same words in a table the benchmark
builds, as recall searched before), the tenant's first search (which reads its words), and the
same for a 1,000-episode tenant beside the large one. Sizes are parameters:

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

from episodic.adapters.sqlite.scope_cache import admitted
from episodic.adapters.sqlite.store import SqliteStore
from episodic.adapters.sqlite.word_index import terms
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


FTS5_RANKED = (
    "SELECT e.event_id, -bench_fts.rank FROM bench_fts CROSS JOIN episodes e ON e.rowid = bench_fts.rowid "
    "WHERE bench_fts MATCH ? AND e.tenant_id = ? ORDER BY bench_fts.rank LIMIT ?"
)
"""Benchmark baseline: the same words ranked by SQLite FTS5 over every tenant's texts, then joined to
the tenant, as recall searched before its in-memory word index."""


def fts5_table(store: SqliteStore) -> None:
    """The baseline's FTS5 table (``bench_fts``) of every text the store holds, built afresh."""
    with store.database.transaction() as conn:
        conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS bench_fts USING fts5 (text, tokenize = 'porter unicode61')")
        conn.execute("DELETE FROM bench_fts")
        conn.execute("INSERT INTO bench_fts (rowid, text) SELECT rowid, text FROM episode_texts")


def fts5_ranked(store: SqliteStore, tenant: str, text: str, k: int, counts: dict[str, int]) -> list[tuple[str, float]]:
    """The baseline's search, as recall ran it: words in half of the texts or more left out (their
    counts kept in ``counts`` between queries, as recall kept them for a minute)."""
    with store.database.reading() as conn:
        (texts,) = conn.execute("SELECT count(*) FROM bench_fts").fetchone()
        words = [w for w in terms(text) if w not in {"on", "the"}]
        for word in words:
            if word not in counts:
                counted = conn.execute("SELECT count(*) FROM bench_fts WHERE bench_fts MATCH ?", (f'"{word}"',))
                counts[word] = counted.fetchone()[0]
        match = " OR ".join(f'"{w}"' for w in [w for w in words if counts[w] < texts / 2] or words)
        return conn.execute(FTS5_RANKED, (match, tenant, k)).fetchall()


def measure_lexical(store: SqliteStore, tenant: str, queries: int) -> dict[str, float]:
    """Whole-tenant BM25 candidates (no vector) for "report on <topic>" (every text says "report"),
    p50 ms, interleaved query by query: the word index, and FTS5's own ranking of the same words;
    and how long the tenant's first search took (it reads the tenant's words)."""
    scope = Scope(tenant_id=tenant, now=NOW)
    texts = [f"report on the {TOPICS[i % len(TOPICS)]}" for i in range(queries)]
    t0 = time.perf_counter()
    store.recall.candidates(scope, texts[0], None, 200)
    first = (time.perf_counter() - t0) * 1000
    timed: dict[str, list[float]] = {"index": [], "fts5": []}
    counts: dict[str, int] = {}
    for text in texts:
        t0 = time.perf_counter()
        store.recall.candidates(scope, text, None, 200)
        timed["index"].append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        fts5_ranked(store, tenant, text, 200, counts)
        timed["fts5"].append((time.perf_counter() - t0) * 1000)
    return {"first_words_ms": first, **{f"lexical_{k}_ms": statistics.median(v) for k, v in timed.items()}}


NEIGHBOUR = 1000
"""Episodes of the small tenant measured beside the large one."""


def add_neighbour(store: SqliteStore) -> None:
    """A small tenant beside the large one ``store`` holds, its words in the same share of its texts."""
    puts = [
        NewEpisode(TEMPLATE.model_copy(update={"tenant_id": "neighbour", "event_id": f"N{n:05d}",
                                              "summary": f"report {n} on the {TOPICS[n % len(TOPICS)]}"}), None)
        for n in range(NEIGHBOUR)
    ]  # fmt: skip
    store.episodes.apply(Changes(tenant_id="neighbour", put=puts))


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
            fts5_table(store)
            lexical = measure_lexical(store, "acme", max(3, args.queries // 5))
            results.append({"tenant": total, **lexical})
            notes.append(
                f'{total:,}: whole-tenant BM25 for "report on <topic>" (every text says "report"): p50 '
                f"{lexical['lexical_index_ms']:,.2f} ms; FTS5 ranking the same words {lexical['lexical_fts5_ms']:,.2f} "
                f"ms; the tenant's first search (reads its words) {lexical['first_words_ms']:,.0f} ms"
            )
            add_neighbour(store)
            fts5_table(store)
            near = measure_lexical(store, "neighbour", max(3, args.queries // 5))
            results.append({"tenant": total, **{f"neighbour_{k}": v for k, v in near.items()}})
            notes.append(
                f"{total:,}: a {NEIGHBOUR:,}-episode tenant beside it, same queries: p50 "
                f"{near['lexical_index_ms']:,.2f} ms; FTS5 ranking the same words over every tenant's texts "
                f"{near['lexical_fts5_ms']:,.2f} ms"
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
