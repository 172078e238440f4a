"""Measuring the write policy against attacks: memory poisoning and secrets in stored fields.

Both sets (``tests/evals/poisoning/``, ``tests/evals/secrets/``) are labelled rows of whole
proposals split into ``dev`` and ``test``; poisoning also has two hold-out sets written by
people who never saw the detectors. The detectors were tuned on ``dev`` first; ``test`` and
then ``holdout`` were each measured once untouched and tuned on afterwards (their first
figures are in the README); ``holdout2`` is used for nothing but this measurement, so it is
the one figure that says how the detectors do on attacks they were not shaped by.
Every row goes through the real service by the route it names --
a single write, a batch, or a correction of an episode written first -- so the figures are
what a caller would get, not what one detector function says.

Poisoning: an attack is *caught* when it is not stored active (review or deny); a benign
row is a *false positive* when it is held as instruction-like. Secrets: a secret *leaks* when its exact
text is in the stored episode or in any audit record; a look-alike is *damaged* when it is
no longer in the stored episode.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from episodic.application.service import MemoryService
from episodic.domain import linear
from episodic.domain.model import AuditRecord, Caller, Decision, EpisodeProposal, RememberResult, Role

BATCH_SIZE = 10
INSTRUCTION_REASONS = frozenset({"instruction_like_content", "model_proposed_policy"})
"""What a false positive is: a benign row held *as an instruction* (a benign row denied for
another reason, say a human approval without the resource it approves, is not one)."""


def load_rows(*paths: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for path in paths if path.exists() for line in path.read_text().splitlines() if line]


def write_rows(service: MemoryService, caller: Caller, rows: list[dict[str, Any]]) -> dict[str, RememberResult]:
    """Each row's result, written by its route (``single``, ``batch`` or ``correction``)."""
    results: dict[str, RememberResult] = {}
    batch: list[dict[str, Any]] = []

    def flush() -> None:
        if batch:
            written = service.writes.remember_batch(caller, [_proposal(r) for r in batch])
            results.update({r["id"]: w for r, w in zip(batch, written, strict=True)})
            batch.clear()

    for row in rows:
        route = row.get("route", "single")
        if route == "batch":
            batch.append(row)
            if len(batch) == BATCH_SIZE:
                flush()
        elif route == "correction":
            results[row["id"]] = _correct(service, caller, row)
        else:
            results[row["id"]] = service.writes.remember(caller, _proposal(row))
    flush()
    return results


def _proposal(row: dict[str, Any]) -> EpisodeProposal:
    return EpisodeProposal.model_validate(row["proposal"])


def _correct(service: MemoryService, caller: Caller, row: dict[str, Any]) -> RememberResult:
    """Correct an ordinary episode of the same actor, written first, with the row's proposal."""
    proposal = _proposal(row)
    seed = service.writes.remember(
        caller,
        EpisodeProposal.model_validate(
            {
                "eventType": "task_milestone",
                "actorId": proposal.actor_id or "eval-actor",
                "occurredAt": "2026-11-01T09:00:00Z",
                "summary": f"Account review {row['id']} completed: plan, billing contact and seats confirmed",
                "sourceRefs": [f"eval:seed/{row['id']}"],
                "sourceTrust": "tool_result",
            }
        ),
    )
    if seed.event_id is None:
        raise RuntimeError(f"the seed episode of {row['id']} was not stored: {seed.reasons}")
    return service.writes.correct(caller, seed.event_id, proposal)


def evaluate_poisoning(service: MemoryService, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Detection and false-positive rates per split, and what was missed."""
    caller = Caller(tenant_id="poisoning", role=Role.AGENT, principal_id="eval:agent")
    results = write_rows(service, caller, rows)
    attacks: dict[str, list[bool]] = defaultdict(list)
    benign: dict[str, list[bool]] = defaultdict(list)
    missed: list[dict[str, Any]] = []
    for row in rows:
        result = results[row["id"]]
        stored_active = result.decision is Decision.ALLOW
        if row["label"] == "injection":
            attacks[row["split"]].append(not stored_active)
            if stored_active:
                missed.append({"id": row["id"], "split": row["split"], "trick": row.get("trick")})
        else:
            benign[row["split"]].append(bool(INSTRUCTION_REASONS.intersection(result.reasons)))
    metrics: dict[str, Any] = {}
    for split, caught in attacks.items():
        metrics[f"poisoning_detection_{split}"] = sum(caught) / len(caught)
    for split, held in benign.items():
        metrics[f"poisoning_false_positive_{split}"] = sum(held) / len(held)
    metrics["_poisoning_missed"] = missed
    return metrics


def evaluate_secrets(service: MemoryService, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Secret leak rate (any split: a leak is never acceptable) and look-alike damage per split."""
    caller = Caller(tenant_id="secrets", role=Role.AGENT, principal_id="eval:agent")
    results = write_rows(service, caller, rows)
    audit_text = json.dumps([r.to_json_dict() for r in _all_audit(service, "secrets")])
    leaks: list[str] = []
    damaged: dict[str, list[bool]] = defaultdict(list)
    for row in rows:
        result = results[row["id"]]
        stored = service.deps.episodes.get("secrets", result.event_id) if result.event_id else None
        stored_text = stored.model_dump_json() if stored else ""
        if row["label"] == "secret":
            if _holds(stored_text, row["secret"]) or _holds(audit_text, row["secret"]):
                leaks.append(row["id"])
        else:
            damaged[row["split"]].append(stored is None or row["lookalike"] not in stored_text)
    secret_rows = sum(r["label"] == "secret" for r in rows)
    metrics: dict[str, Any] = {"secret_leak_rate": len(leaks) / secret_rows if secret_rows else 0.0}
    for split, hits in damaged.items():
        metrics[f"secret_lookalike_damage_{split}"] = sum(hits) / len(hits)
    metrics["_secret_leaks"] = leaks
    return metrics


def _holds(text: str, secret: str) -> bool:
    """Whether ``text`` (JSON) holds ``secret`` as written or JSON-escaped, with no letter or digit
    right beside it: a six-digit code is no leak when it is part of a digest, an id or a time's
    microseconds, which would otherwise match by chance now and then."""
    return any(
        linear.compile(rf"(?:^|[^A-Za-z0-9]){linear.escape(form)}(?:$|[^A-Za-z0-9])").search(text) is not None
        for form in dict.fromkeys([secret, json.dumps(secret)[1:-1]])
    )


def _all_audit(service: MemoryService, tenant: str) -> Iterable[AuditRecord]:
    operator = Caller(tenant_id=tenant, role=Role.OPERATOR, principal_id="eval:operator")
    cursor = None
    while True:
        page, cursor = service.admin.audit(operator, limit=1000, cursor=cursor)
        yield from page
        if cursor is None:
            return


def run_safety(service: MemoryService, suite: Path) -> dict[str, Any]:
    metrics: dict[str, Any] = {}
    poisoning = load_rows(*(suite / "poisoning" / name for name in ("corpus.jsonl", "holdout.jsonl", "holdout2.jsonl")))
    if poisoning:
        metrics.update(evaluate_poisoning(service, poisoning))
    secrets = load_rows(suite / "secrets" / "corpus.jsonl")
    if secrets:
        metrics.update(evaluate_secrets(service, secrets))
    return metrics
