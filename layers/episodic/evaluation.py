"""Measuring recall quality on a labelled set: recall@k and nDCG@k, by query kind.

The set (``tests/evals/retrieval/``) holds episodes with stable keys and queries with the
keys a perfect memory returns. :func:`evaluate_retrieval` loads the episodes through the
real write path, then asks every query three ways -- BM25 only, vectors only, and the
service's own hybrid ranking (with query interpretation) -- so the figures say what each
signal contributes. Relevance is binary (a gold episode or not).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from episodic.model import Caller, EpisodeProposal, RecallRequest
from episodic.ranking import Ranker, RankingWeights
from episodic.service import MemoryService

MODES: dict[str, tuple[RankingWeights | None, bool]] = {
    # name: (weights, interpret the query); None = the service's configured ranking
    "bm25": (RankingWeights(relevance=1, recency=0, importance=0, trust=0, confidence=0, semantic_share=0,
                            min_relevance=0), False),
    "vector": (RankingWeights(relevance=1, recency=0, importance=0, trust=0, confidence=0, semantic_share=1,
                              min_relevance=0), False),
    "hybrid": (None, True),
}  # fmt: skip


def recall_at_k(returned: list[str], gold: list[str], k: int) -> float:
    return len(set(returned[:k]) & set(gold)) / len(gold)


def ndcg_at_k(returned: list[str], gold: list[str], k: int) -> float:
    gains = [1.0 if key in gold else 0.0 for key in returned[:k]]
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(gold), k)))
    return dcg / ideal if ideal else 0.0


@dataclass
class ModeResult:
    mode: str
    k: int
    recall: float
    ndcg: float
    by_kind: dict[str, dict[str, float]] = field(default_factory=dict)
    misses: list[dict[str, Any]] = field(default_factory=list)


def load_set(folder: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    def rows(name: str) -> list[dict[str, Any]]:
        return [json.loads(line) for line in (folder / name).read_text().splitlines() if line.strip()]

    return rows("episodes.jsonl"), rows("queries.jsonl")


def load_episodes(service: MemoryService, caller: Caller, episodes: Iterable[dict[str, Any]]) -> dict[str, str]:
    """Write the set through the service (policy included); returns key -> eventId."""
    rows = list(episodes)
    keys: dict[str, str] = {}
    for start in range(0, len(rows), 100):
        chunk = rows[start : start + 100]
        proposals = [EpisodeProposal.model_validate({k: v for k, v in r.items() if k != "key"}) for r in chunk]
        for row, result in zip(chunk, service.remember_batch(caller, proposals), strict=True):
            if result.event_id is None or result.decision.value != "allow":
                raise ValueError(f"episode {row['key']} was not stored: {result.decision.value} {result.reasons}")
            keys[row["key"]] = result.event_id
    return keys


def evaluate_retrieval(
    service: MemoryService,
    caller: Caller,
    queries: list[dict[str, Any]],
    keys: dict[str, str],
    k: int = 10,
    modes: Iterable[str] = tuple(MODES),
) -> dict[str, ModeResult]:
    by_event = {v: key for key, v in keys.items()}
    configured = service.ranker
    results = {}
    try:
        for mode in modes:
            weights, interpret = MODES[mode]
            service.ranker = Ranker(weights) if weights is not None else configured
            totals: dict[str, list[tuple[float, float]]] = defaultdict(list)
            misses = []
            for q in queries:
                request = RecallRequest(query=q["query"], actor_id=q.get("actorId"), limit=k, interpret=interpret)
                returned = [by_event.get(i.episode.event_id, "?") for i in service.recall(caller, request).items]
                scores = (recall_at_k(returned, q["gold"], k), ndcg_at_k(returned, q["gold"], k))
                totals[q.get("kind", "all")].append(scores)
                totals["all"].append(scores)
                if scores[0] < 1.0:
                    misses.append({"id": q["id"], "query": q["query"], "gold": q["gold"], "returned": returned[:k]})
            by_kind = {
                kind: {"recall": sum(s[0] for s in v) / len(v), "ndcg": sum(s[1] for s in v) / len(v), "n": len(v)}
                for kind, v in totals.items()
            }
            results[mode] = ModeResult(mode, k, by_kind["all"]["recall"], by_kind["all"]["ndcg"], by_kind, misses)
    finally:
        service.ranker = configured
    return results


def format_table(results: dict[str, ModeResult]) -> str:
    kinds = [*sorted({kind for r in results.values() for kind in r.by_kind if kind != "all"}), "all"]
    k = next(iter(results.values())).k
    lines = [f"{'mode':<8}" + "".join(f"{kind:>20}" for kind in kinds)]
    lines.append(" " * 8 + "".join(f"{f'R@{k} / nDCG@{k}':>20}" for _ in kinds))
    for mode, result in results.items():
        cells = "".join(
            f"{result.by_kind[kind]['recall']:>10.3f} / {result.by_kind[kind]['ndcg']:.3f}" if kind in result.by_kind
            else f"{'-':>20}"
            for kind in kinds
        )  # fmt: skip
        lines.append(f"{mode:<8}{cells}")
    return "\n".join(lines)
