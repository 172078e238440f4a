"""A peer on the same data in the same run: Chroma's embedded ``PersistentClient`` against the
local store's vector path, for ingest rate, scoped top-10 latency and top-10 agreement.

Both get the very same all-MiniLM-L6-v2 embeddings of the same texts (Chroma through a custom
embedding function wrapping this project's embedder; the vectors are computed once, before any
timer, and handed to both, so neither side's timing includes the model). The scope is one
actor's episodes, a ``where`` filter in Chroma and the scope SQL here. Agreement is measured
against exact cosine search over the scope with numpy.

What is compared is the store, not the service: Chroma has no write policy, audit or
idempotency, so the local side is timed at :meth:`SqliteStore.apply_many` (episode row, FTS
text, tags, vector, one commit per batch of 100), not through ``remember_batch``.

Chroma is an optional extra (``pip install -e '.[bench]'``); without it this prints why it
skipped.

    .venv/bin/python benchmarks/peer_chroma.py --episodes 5000
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from episodic.adapters.minilm.embedder import MODEL_NAME, MiniLMEmbedder
from episodic.adapters.sqlite.store import SqliteStore
from episodic.application.ports import Changes, NewEpisode, Scope
from episodic.domain.model import Episode

NOW = datetime(2026, 11, 29, tzinfo=UTC)
TOPICS = ["invoice", "deploy", "refund", "login", "latency", "export", "webhook", "quota", "schema", "backup"]
PLACES = ["Lisbon", "Leeds", "Porto", "Oslo", "Dublin", "Kendal", "Bristol", "Cork"]
BATCH = 100


def corpus(count: int, scope_share: float) -> tuple[list[str], list[str]]:
    """``count`` event texts and their actors: the first ``scope_share`` belong to ``scope-0``."""
    in_scope = int(count * scope_share)
    texts, actors = [], []
    for n in range(count):
        topic, place = TOPICS[n % len(TOPICS)], PLACES[(n // 7) % len(PLACES)]
        texts.append(f"The {topic} job {n} for the {place} team finished after {n % 97} minutes with {n % 13} retries")
        actors.append("scope-0" if n < in_scope else f"actor-{n % 40}")
    return texts, actors


def questions(count: int) -> list[str]:
    return [
        f"which {TOPICS[n % len(TOPICS)]} run in {PLACES[n % len(PLACES)]} needed {n % 13} retries?"
        for n in range(count)
    ]


class ProjectEmbedding:
    """Chroma's side of the comparison embeds with this project's MiniLM embedder."""

    def __init__(self, embedder: MiniLMEmbedder) -> None:
        self._embedder = embedder

    def __call__(self, input: list[str]) -> list[Any]:  # Chroma calls it with ``input=``
        return [np.asarray(v, dtype=np.float32) for v in self._embedder.embed(list(input))]

    @staticmethod
    def name() -> str:
        return "episodic-minilm"

    def is_legacy(self) -> bool:
        return True  # no config to persist: the vectors are always given


def local_side(tmp: Path, texts: list[str], actors: list[str], vectors: np.ndarray, queries: np.ndarray) -> dict:
    store = SqliteStore(tmp / "local.db", embedder=MODEL_NAME)
    template = Episode.model_validate(
        {"eventId": "E0", "tenantId": "acme", "actorId": "x", "eventType": "tool_observed_event",
         "occurredAt": NOW, "recordedAt": NOW, "summary": "x", "sourceRefs": ["bench:1"],
         "sourceTrust": "tool_result", "policyVersion": "bench"}
    )  # fmt: skip
    sets = [
        Changes(tenant_id="acme", put=[NewEpisode(template.model_copy(update={
            "event_id": f"E{n:08d}", "actor_id": actors[n], "summary": texts[n]}), vectors[n], MODEL_NAME)])
        for n in range(len(texts))
    ]  # fmt: skip
    t0 = time.perf_counter()
    for start in range(0, len(sets), BATCH):
        store.episodes.apply_many(sets[start : start + BATCH])
    ingest = len(sets) / (time.perf_counter() - t0)
    scope = Scope(tenant_id="acme", now=NOW, actor_id="scope-0")
    store.recall.candidates(scope, None, queries[0], 10)  # loads the vectors, as a running server has
    latency, found = [], []
    for q in queries[1:]:
        t0 = time.perf_counter()
        found.append([c.event_id for c in store.recall.candidates(scope, None, q, 10).items])
        latency.append((time.perf_counter() - t0) * 1000)
    store.close()
    return {"ingest_per_s": ingest, "p50_ms": statistics.median(latency), "found": found}


def chroma_side(
    tmp: Path, texts: list[str], actors: list[str], vectors: np.ndarray, queries: np.ndarray, ef: Any
) -> dict:
    import chromadb

    client = chromadb.PersistentClient(path=str(tmp / "chroma"))
    collection = client.create_collection("episodes", embedding_function=ef, metadata={"hnsw:space": "cosine"})
    t0 = time.perf_counter()
    for start in range(0, len(texts), BATCH):
        end = min(start + BATCH, len(texts))
        collection.add(
            ids=[f"E{n:08d}" for n in range(start, end)],
            embeddings=vectors[start:end],
            documents=texts[start:end],
            metadatas=[{"actor": actors[n]} for n in range(start, end)],
        )
    ingest = len(texts) / (time.perf_counter() - t0)
    collection.query(query_embeddings=[queries[0]], n_results=10, where={"actor": "scope-0"})
    latency, found = [], []
    for q in queries[1:]:
        t0 = time.perf_counter()
        result = collection.query(query_embeddings=[q], n_results=10, where={"actor": "scope-0"}, include=[])
        latency.append((time.perf_counter() - t0) * 1000)
        found.append(list(result["ids"][0]))
    return {"ingest_per_s": ingest, "p50_ms": statistics.median(latency), "found": found}


def compare(count: int = 5000, scope_share: float = 0.1, query_count: int = 100) -> dict[str, Any]:
    """Both sides on the same texts and vectors; ``{"skipped": why}`` without chromadb."""
    try:
        import chromadb  # noqa: F401
    except ImportError:
        return {"skipped": "chromadb is not installed (pip install -e '.[bench]')"}
    embedder = MiniLMEmbedder(cache_size=0)
    texts, actors = corpus(count, scope_share)
    vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
    queries = np.asarray(embedder.embed(questions(query_count + 1)), dtype=np.float32)
    in_scope = np.array([a == "scope-0" for a in actors])
    exact = []
    for q in queries[1:]:
        sims = vectors @ q
        sims[~in_scope] = -np.inf
        exact.append({f"E{i:08d}" for i in np.argsort(-sims)[:10]})
    report: dict[str, Any] = {"episodes": count, "scope": int(in_scope.sum()), "queries": query_count}
    with tempfile.TemporaryDirectory(prefix="episodic-peer-") as tmp:
        sides = {
            "episodic": local_side(Path(tmp), texts, actors, vectors, queries),
            "chroma": chroma_side(Path(tmp), texts, actors, vectors, queries, ProjectEmbedding(embedder)),
        }
    for name, side in sides.items():
        agreement = sum(len(set(got) & want) for got, want in zip(side.pop("found"), exact, strict=True))
        report[name] = side | {"top10_agreement": agreement / (10 * query_count)}
    return report


def section(report: dict[str, Any]) -> list[str]:
    """The BENCHMARKS.md lines for :func:`compare`'s report."""
    title = "## Peer on the same data: Chroma (embedded PersistentClient)"
    if "skipped" in report:
        return [title, "", f"Skipped: {report['skipped']}.", ""]
    rows = [
        f"| {name} | {side['ingest_per_s']:.0f} | {side['p50_ms']:.2f} ms | {side['top10_agreement']:.3f} |"
        for name, side in (("episodic (SqliteStore.apply_many, scope SQL + vectors)", report["episodic"]),
                           ("Chroma (collection.add, `where` on the actor)", report["chroma"]))
    ]  # fmt: skip
    ratio = report["chroma"]["p50_ms"] / report["episodic"]["p50_ms"]
    return [
        title,
        "",
        f"`benchmarks/peer_chroma.py`: {report['episodes']:,} event texts embedded once with all-MiniLM-L6-v2 and",
        f"given to both; {report['queries']} distinct questions, scope one actor's {report['scope']:,} episodes,",
        "query embedding excluded on both sides; agreement with exact cosine search over the scope.",
        "The local side is the store (row, FTS, vector; one commit per batch of 100), not the service.",
        "",
        "| store | ingest per second (batches of 100) | scoped top-10 p50 | top-10 agreement |",
        "|---|---:|---:|---:|",
        *rows,
        "",
        f"Scoped top-10: Chroma's p50 is {ratio:.1f}x this store's in the same run.",
        "",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=5000)
    parser.add_argument("--scope-share", type=float, default=0.1)
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    print(json.dumps(compare(args.episodes, args.scope_share, args.queries), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
