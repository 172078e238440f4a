"""Measuring the service: recall quality and memory governance, on labelled sets.

Recall quality: recall@k and nDCG@k, by query kind. Governance: writes, isolation and
forgetting here; poisoning and secrets in :mod:`episodic.evals.safety`.

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
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from episodic.application.service import MemoryService
from episodic.domain.errors import NotFoundError
from episodic.domain.model import Caller, EpisodeProposal, RecallRequest, Role, Status, TimelineRequest
from episodic.domain.recall.ranking import Ranker, RankingWeights
from episodic.evals.safety import run_safety

MODES: dict[str, tuple[RankingWeights | None, bool]] = {
    # name: (weights, interpret the query); None = the service's configured ranking
    "bm25": (RankingWeights(relevance=1, recency=0, importance=0, trust=0, confidence=0, semantic_share=0,
                            min_relevance=0, min_semantic=0), False),
    "vector": (RankingWeights(relevance=1, recency=0, importance=0, trust=0, confidence=0, semantic_share=1,
                              min_relevance=0, min_semantic=0), False),
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
        for row, result in zip(chunk, service.writes.remember_batch(caller, proposals), strict=True):
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
    results = {}
    for mode in modes:
        weights, interpret = MODES[mode]
        ranked = service if weights is None else service.replacing(ranker=Ranker(weights))
        totals: dict[str, list[tuple[float, float]]] = defaultdict(list)
        misses = []
        for q in queries:
            request = RecallRequest(query=q["query"], actor_id=q.get("actorId"), limit=k, interpret=interpret)
            returned = [by_event.get(i.episode.event_id, "?") for i in ranked.reads.recall(caller, request).items]
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


# ---------------------------------------------------------------------------------------------
# The governance suite: writes, leaks, attribution, staleness, corrections, deletion, expiry.


class ManualClock:
    """The suite's simulated time: expiry and decay scenarios move it forward by hand."""

    def __init__(self, now: datetime) -> None:
        self.current = now

    def now(self) -> datetime:
        return self.current


SUITE_NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
"""The retrieval set's reference time (relative phrases in its queries are read against it)."""


def _ratio(hits: int, total: int) -> float:
    return hits / total if total else 1.0


def evaluate_writes(service: MemoryService, tenant: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Write precision/recall (of what is stored active), decision accuracy, unsafe-write rate."""
    callers = {
        "agent": Caller(tenant_id=tenant, role=Role.AGENT, principal_id="eval:agent"),
        "operator": Caller(tenant_id=tenant, role=Role.OPERATOR, principal_id="eval:operator"),
    }
    correct = allowed = allowed_right = expected_allow = unsafe_total = unsafe_stored = 0
    wrong: list[dict[str, Any]] = []
    for row in rows:
        # The set judges the policy, not references: ids it supersedes do not exist here.
        fields = {k: v for k, v in row["proposal"].items() if k != "supersedesEventIds"}
        proposal = EpisodeProposal.model_validate(fields)
        result = service.writes.remember(callers[row.get("caller", "agent")], proposal)
        decision = result.decision.value
        correct += decision == row["expected"]
        expected_allow += row["expected"] == "allow"
        if decision == "allow":
            allowed += 1
            allowed_right += row["expected"] == "allow"
        if row.get("unsafe"):
            unsafe_total += 1
            unsafe_stored += decision == "allow"
        if row.get("secret"):
            unsafe_total += 1
            stored = service.deps.episodes.get(tenant, result.event_id) if result.event_id else None
            unsafe_stored += stored is not None and row["secret"] in stored.model_dump_json()
        if decision != row["expected"]:
            wrong.append({"id": row["id"], "expected": row["expected"], "got": decision, "reasons": result.reasons})
    return {
        "write_precision": _ratio(allowed_right, allowed),
        "write_recall": _ratio(allowed_right, expected_allow),
        "policy_decision_accuracy": _ratio(correct, len(rows)),
        "unsafe_write_rate": unsafe_stored / unsafe_total if unsafe_total else 0.0,
        "_wrong_decisions": wrong,
    }


def evaluate_isolation(
    service: MemoryService,
    queries: list[dict[str, Any]],
    keys: dict[str, str],
    episodes: list[dict[str, Any]],
    tenants: tuple[str, str],
) -> dict[str, Any]:
    """Cross-tenant and cross-actor leaks, attribution and citation coverage, over every query."""
    own, other = tenants
    actor_of = {keys[e["key"]]: e["actorId"] for e in episodes}
    tenant_leaks = actor_leaks = attributed = recalled = cited = 0
    for tenant in (own, other):
        caller = Caller(tenant_id=tenant, role=Role.AGENT, principal_id="eval:agent")
        for q in queries:
            response = service.reads.recall(
                caller, RecallRequest(query=q["query"], actor_id=q.get("actorId"), limit=10)
            )
            for item in response.items:
                recalled += 1
                tenant_leaks += item.episode.tenant_id != tenant
                actor_leaks += q.get("actorId") is not None and item.episode.actor_id != q["actorId"]
                if tenant == own:
                    attributed += actor_of.get(item.episode.event_id) == item.episode.actor_id
            # Cited: the item carries its source, and the evidence block shows one source per item.
            if response.context.count("\n  source: ") == len(response.items):
                cited += sum(bool(i.episode.source_refs) for i in response.items)
    other_caller = Caller(tenant_id=other, role=Role.AGENT, principal_id="eval:agent")
    for event_id in list(keys.values())[:50]:  # another tenant's ids are not found either
        try:
            service.reads.get(other_caller, event_id)
            tenant_leaks += 1
        except NotFoundError:
            pass
    own_recalled = recalled / 2 if recalled else 0
    return {
        "cross_tenant_leaks": tenant_leaks,
        "cross_actor_leaks": actor_leaks,
        "attribution_accuracy": attributed / own_recalled if own_recalled else 1.0,
        "citation_coverage": _ratio(cited, recalled),
    }


def evaluate_forgetting(
    service: MemoryService, clock: ManualClock, tenant: str, episodes: list[dict[str, Any]], keys: dict[str, str]
) -> dict[str, Any]:
    """Corrections, stale recall, deletion from every read path, expiry into the archive."""
    agent = Caller(tenant_id=tenant, role=Role.AGENT, principal_id="eval:agent")
    operator = Caller(tenant_id=tenant, role=Role.OPERATOR, principal_id="eval:operator")
    prefs = [e for e in episodes if e["eventType"] == "user_preference_stated"][:20]
    corrected = stale = 0
    for e in prefs:
        old_id = keys[e["key"]]
        correction = {
            "eventType": "correction_received",
            "summary": f"Correction, this replaces an earlier note: {e['summary']}",
            "occurredAt": clock.now().isoformat(),
            "sourceRefs": ["eval:correction"],
            "sourceTrust": "user_provided",
        }
        new = service.writes.correct(agent, old_id, EpisodeProposal.model_validate(correction))
        found = [
            i.episode.event_id
            for i in service.reads.recall(agent, RecallRequest(query=e["summary"], actor_id=e["actorId"])).items
        ]
        stale += old_id in found
        old = service.deps.episodes.get(tenant, old_id)
        corrected += new.event_id in found and old is not None and old.status is Status.SUPERSEDED
    victims = [e for e in episodes if e["eventType"] not in ("user_preference_stated",)][:20]
    deleted = 0
    for e in victims:
        event_id = keys[e["key"]]
        service.erasure.erase(operator, event_id)
        gone = service.deps.episodes.get(tenant, event_id) is None
        listed = service.reads.timeline(
            operator, TimelineRequest(actor_id=e["actorId"], statuses=list(Status), limit=200)
        ).items
        gone &= event_id not in [x.event_id for x in listed]
        recall = service.reads.recall(agent, RecallRequest(query=e["summary"], actor_id=e["actorId"], limit=20))
        gone &= event_id not in [i.episode.event_id for i in recall.items]
        gone &= not service.deps.archive.contains(tenant, event_id)
        deleted += gone
    expiry = _expiry_success(service, clock, tenant, agent, operator)  # last: it moves the clock on two days
    return {
        "correction_success": _ratio(corrected, len(prefs)),
        "stale_recall_rate": stale / len(prefs) if prefs else 0.0,
        "deletion_success": _ratio(deleted, len(victims)),
        "expiry_success": expiry,
    }


def _expiry_success(service: MemoryService, clock: ManualClock, tenant: str, agent: Caller, operator: Caller) -> float:
    """The share of episodes that, once past their expiry and swept, are gone from the store,
    recall and the timeline, and kept in the archive."""
    expiring = []
    for n in range(20):
        result = service.writes.remember(agent, EpisodeProposal.model_validate({
            "eventType": "tool_observed_event", "actorId": "eval-expiry", "occurredAt": clock.now().isoformat(),
            "summary": f"Temporary access code {n} for the staging VPN bastion issued to the on-call engineer",
            "sourceRefs": [f"eval:expiry-{n}"], "sourceTrust": "tool_result",
            "retention": {"expiresAt": (clock.now() + timedelta(days=1)).isoformat()},
        }))  # fmt: skip
        expiring.append(result.event_id)
    clock.current += timedelta(days=2)
    service.sweeper.sweep()
    recall = service.reads.recall(
        agent, RecallRequest(query="temporary access code staging VPN", actor_id="eval-expiry")
    )
    recalled = {i.episode.event_id for i in recall.items}
    timeline = {
        e.event_id
        for e in service.reads.timeline(operator, TimelineRequest(actor_id="eval-expiry", statuses=list(Status))).items
    }
    expired = sum(
        i is not None
        and service.deps.episodes.get(tenant, i) is None
        and i not in recalled
        and i not in timeline
        and service.deps.archive.contains(tenant, i)
        for i in expiring
    )
    return _ratio(expired, len(expiring))


def run_suite(service: MemoryService, clock: ManualClock, suite: Path, k: int = 10) -> dict[str, Any]:
    """Every metric of the governance and retrieval evaluation, on a fresh service."""
    episodes, queries = load_set(suite / "retrieval")
    agent = Caller(tenant_id="acme", role=Role.AGENT, principal_id="eval:agent")
    keys = load_episodes(service, agent, episodes)
    load_episodes(service, agent.model_copy(update={"tenant_id": "globex"}), episodes)
    retrieval = evaluate_retrieval(service, agent, queries, keys, k=k, modes=["hybrid"])["hybrid"]
    metrics: dict[str, Any] = {f"retrieval_recall_at_{k}": retrieval.recall, f"retrieval_ndcg_at_{k}": retrieval.ndcg}
    metrics.update(evaluate_isolation(service, queries, keys, episodes, ("acme", "globex")))
    writes = suite / "scenarios" / "writes.jsonl"
    if writes.exists():
        rows = [json.loads(line) for line in writes.read_text().splitlines() if line.strip()]
        metrics.update(evaluate_writes(service, "writes", rows))
    metrics.update(evaluate_forgetting(service, clock, "acme", episodes, keys))
    metrics.update(run_safety(service, suite))
    return metrics


def check_thresholds(metrics: dict[str, Any], thresholds: dict[str, Any]) -> list[str]:
    """The regressions: each metric below its recorded ``min`` or above its ``max``."""
    failures = []
    for name, bound in thresholds.items():
        if name.startswith("//"):
            continue
        value = metrics.get(name)
        if value is None:
            failures.append(f"{name}: not measured")
        elif "min" in bound and value < bound["min"]:
            failures.append(f"{name}: {value:.4f} < {bound['min']}")
        elif "max" in bound and value > bound["max"]:
            failures.append(f"{name}: {value:.4f} > {bound['max']}")
    return failures
