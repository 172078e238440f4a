"""The conversation benchmark: long multi-session chats written turn by turn, then questions.

Each conversation (``tests/evals/conversations/{dev,test}/cv*.json``) goes into a tenant of
its own the way a hosted agent would write it: every turn proposed as a
``conversation_turn`` with its session's time, the speaker as actor and the turn id as
``sourceRefs``, one batch per session. Then every question is one recall in tenant scope
(``limit`` 10). Measured, per question kind:

* **evidence recall@10** -- the share of a question's gold turns among the turns the ten
  returned items cite (``sourceRefs``), and **nDCG@10** over the same ranking;
* **session recall@10** -- the share of a question's gold turns whose session is among the
  sessions of the turns the ten items cite (the right part of the conversation found, if not the
  turn itself);
* **gold turns denied** -- the share of the turns that questions depend on that the write
  policy did not store;
* the write policy against the labelled turns: **precision and recall of ``not_memorable``**
  (a chatter label is a positive), and how many sensitive turns were kept private.

The dev part is for tuning; the test part is for reporting, and nothing is tuned on it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from episodic.application.service import MemoryService
from episodic.domain import linear
from episodic.domain.model import Caller, Decision, EpisodeProposal, RecallRequest, Role
from episodic.domain.model.conversations import TurnsRequest
from episodic.evals.governance import ndcg_at_k, recall_at_k

K = 10
KINDS = ("single_hop", "multi_hop", "temporal", "open_domain")


_NOT_ALNUM = linear.compile(r"[^a-z0-9]+")


def load_conversations(folder: Path) -> list[dict[str, Any]]:
    """Every conversation (``*.json``) of ``folder``, in name order."""
    return [json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.json"))]


SPEAKERS = ("Ann", "Bo", "Cy", "Di")
"""The names every conversation's speakers take in :func:`merged`, in the order each one lists them."""


def merged(conversations: list[dict[str, Any]]) -> dict[str, Any]:
    """``conversations`` as one long conversation: their sessions in date order, their questions,
    and each one's speakers renamed (in turns, texts and questions, as whole words) to
    :data:`SPEAKERS`. A name then stands for a different person in each part, as it would in one
    long chat between the same people: who speaks no longer tells the parts apart, only what they
    say does. Our conversations are a quarter as long as those of the held-out benchmark; merged,
    a split reads near it (docs/decisions.md, "A long conversation made of a split")."""
    sessions: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    for conversation in conversations:
        if len(conversation["speakers"]) > len(SPEAKERS):
            raise ValueError(f"{conversation['conversationId']} has more speakers than a merged conversation renames")
        names = dict(zip(conversation["speakers"], SPEAKERS, strict=False))
        pattern = linear.compile(r"\b(" + "|".join(map(linear.escape, names)) + r")\b")

        def renamed(text: str, names: dict[str, str] = names, pattern: linear.Pattern = pattern) -> str:
            return pattern.sub(lambda found: names[found.group(1)], text)

        for session in conversation["sessions"]:
            turns = [{**t, "speaker": names[t["speaker"]], "text": renamed(t["text"])} for t in session["turns"]]
            sessions.append({**session, "turns": turns})
        questions += [{**q, "question": renamed(q["question"])} for q in conversation["questions"]]
    sessions.sort(key=lambda session: session["date"])
    ids = "-".join(c["conversationId"] for c in conversations)
    return {"conversationId": f"merged-{ids}", "speakers": list(SPEAKERS), "sessions": sessions, "questions": questions}


def actor_id(speaker: str) -> str:
    """A speaker's name as an actor id (lower-case, ``-`` for anything but letters and digits)."""
    return _NOT_ALNUM.sub("-", speaker.lower()).strip("-") or "speaker"


def turn_time(session: dict[str, Any], index: int) -> datetime:
    """Turns of a session are a minute apart from its start: the order survives, the day too."""
    return datetime.fromisoformat(session["date"].replace("Z", "+00:00")) + timedelta(minutes=index)


def last_moment(conversation: dict[str, Any]) -> datetime:
    """When the questions are asked: a day after the last session."""
    last = conversation["sessions"][-1]
    return turn_time(last, len(last["turns"])) + timedelta(days=1)


@dataclass
class WriteOutcome:
    """What the write policy did with each turn: turn id -> (decision, stored privacy class)."""

    decisions: dict[str, tuple[str, str | None]] = field(default_factory=dict)


def write_conversation(
    service: MemoryService, caller: Caller, conversation: dict[str, Any], path: str = "batch"
) -> WriteOutcome:
    """Every turn as a ``conversation_turn`` proposal, one batch per session (``path="batch"``,
    the generic write route), or one call per session to the conversation path (``"turns"``)."""
    if path == "turns":
        return _write_sessions(service, caller, conversation)
    outcome = WriteOutcome()
    for session in conversation["sessions"]:
        proposals = [
            EpisodeProposal.model_validate(
                {
                    "eventType": "conversation_turn",
                    "actorId": actor_id(turn["speaker"]),
                    "sessionId": session["sessionId"],
                    "occurredAt": turn_time(session, index).isoformat(),
                    "summary": turn["text"],
                    "sourceRefs": [turn["turnId"]],
                    "sourceTrust": "user_provided",
                }
            )
            for index, turn in enumerate(session["turns"])
        ]
        results = service.writes.remember_batch(caller, proposals)
        for turn, result in zip(session["turns"], results, strict=True):
            privacy = result.episode.privacy_class.value if result.episode is not None else None
            outcome.decisions[turn["turnId"]] = (result.decision.value, privacy)
    return outcome


def _write_sessions(service: MemoryService, caller: Caller, conversation: dict[str, Any]) -> WriteOutcome:
    outcome = WriteOutcome()
    for session in conversation["sessions"]:
        turns = [
            {
                "turnId": turn["turnId"],
                "speaker": actor_id(turn["speaker"]),
                "text": turn["text"],
                "occurredAt": turn_time(session, index).isoformat(),
            }
            for index, turn in enumerate(session["turns"])
        ]
        result = service.conversations.add_turns(
            caller, session["sessionId"], TurnsRequest.model_validate({"turns": turns})
        )
        kept = service.deps.episodes.get_many(caller.tenant_id, [t.event_id for t in result.turns if t.event_id])
        for turn in result.turns:
            stored = kept.get(turn.event_id or "")
            outcome.decisions[turn.turn_id] = (turn.decision.value, stored.privacy_class.value if stored else None)
    return outcome


def ask(service: MemoryService, caller: Caller, question: str) -> list[str]:
    """The turn ids the top ``K`` recalled items cite, in rank order (duplicates dropped)."""
    response = service.reads.recall(caller, RecallRequest(query=question, limit=K))
    cited = [ref for item in response.items for ref in item.episode.source_refs]
    return list(dict.fromkeys(cited))


@dataclass
class ConversationScores:
    per_question: list[dict[str, Any]] = field(default_factory=list)
    writes: WriteOutcome = field(default_factory=WriteOutcome)
    labels: dict[str, str] = field(default_factory=dict)


def run_conversation(
    build: Callable[[datetime], MemoryService],
    conversation: dict[str, Any],
    progress: Callable[[str], None],
    path: str = "batch",
) -> ConversationScores:
    """One conversation in a fresh service (``build(now)``): write it all, then ask every question."""
    scores = ConversationScores()
    tenant = f"bench-{conversation['conversationId']}"
    agent = Caller(tenant_id=tenant, role=Role.AGENT, principal_id="bench-agent")
    with build(last_moment(conversation)) as service:
        scores.writes = write_conversation(service, agent, conversation, path)
        scores.labels = {t["turnId"]: t["label"] for s in conversation["sessions"] for t in s["turns"]}
        session_of = {t["turnId"]: s["sessionId"] for s in conversation["sessions"] for t in s["turns"]}
        for question in conversation["questions"]:
            returned = ask(service, agent, question["question"])
            gold = question["goldTurnIds"]
            found_sessions = {session_of.get(turn) for turn in returned[:K]}
            scores.per_question.append(
                {
                    "id": question["questionId"],
                    "kind": question["kind"],
                    "recall": recall_at_k(returned, gold, K),
                    "sessionRecall": sum(session_of[turn] in found_sessions for turn in gold) / len(gold),
                    "ndcg": ndcg_at_k(returned, gold, K),
                    "gold": gold,
                    "returned": returned[:K],
                }
            )
    progress(f"{conversation['conversationId']}: {len(scores.per_question)} questions")
    return scores


def summarise_scores(runs: list[ConversationScores]) -> dict[str, Any]:
    """Recall and nDCG per kind, gold turns denied, and the write policy against the labels."""
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        for row in run.per_question:
            by_kind[row["kind"]].append(row)
            by_kind["all"].append(row)
    report: dict[str, Any] = {
        kind: {
            "recall": round(sum(r["recall"] for r in rows) / len(rows), 4),
            "sessionRecall": round(sum(r["sessionRecall"] for r in rows) / len(rows), 4),
            "ndcg": round(sum(r["ndcg"] for r in rows) / len(rows), 4),
            "n": len(rows),
        }
        for kind, rows in by_kind.items()
    }
    report["writes"] = _write_metrics(runs)
    report["misses"] = [r for r in by_kind["all"] if r["recall"] < 1.0]
    return report


def _write_metrics(runs: list[ConversationScores]) -> dict[str, Any]:
    gold = {g for run in runs for row in run.per_question for g in row["gold"]}
    decisions = {turn: d for run in runs for turn, d in run.writes.decisions.items()}
    labels = {turn: label for run in runs for turn, label in run.labels.items()}
    denied = {turn for turn, (decision, _) in decisions.items() if decision == Decision.DENY}
    chatter = {turn for turn, label in labels.items() if label == "chatter"}
    sensitive = {turn for turn, label in labels.items() if label == "sensitive"}
    kept_private = {t for t in sensitive if decisions.get(t, ("", None))[1] in ("private", "sensitive")}
    return {
        "turns": len(decisions),
        "goldTurns": len(gold),
        "goldDenied": round(len(gold & denied) / len(gold), 4) if gold else 0.0,
        "notMemorablePrecision": round(len(denied & chatter) / len(denied), 4) if denied else 1.0,
        "notMemorableRecall": round(len(denied & chatter) / len(chatter), 4) if chatter else 1.0,
        "deniedShare": round(len(denied) / len(decisions), 4) if decisions else 0.0,
        "sensitiveKeptPrivate": round(len(kept_private) / len(sensitive), 4) if sensitive else 1.0,
    }


def format_report(report: dict[str, Any]) -> str:
    lines = [f"{'kind':<12} {'n':>4} {'recall@10':>10} {'sessions':>9} {'nDCG@10':>8}"]
    for kind in ("all", *KINDS):
        if kind in report:
            row = report[kind]
            lines.append(
                f"{kind:<12} {row['n']:>4} {row['recall']:>10.3f} {row['sessionRecall']:>9.3f} {row['ndcg']:>8.3f}"
            )
    writes = report["writes"]
    lines.append(
        f"writes: {writes['turns']} turns, {writes['deniedShare']:.1%} denied; gold turns denied "
        f"{writes['goldDenied']:.1%}; not_memorable precision {writes['notMemorablePrecision']:.3f} "
        f"recall {writes['notMemorableRecall']:.3f}; "
        f"sensitive turns kept private {writes['sensitiveKeptPrivate']:.1%}"
    )
    return "\n".join(lines)


def local_services(tmp: Path, model: Any, **settings: Any) -> Callable[[datetime], MemoryService]:
    """``build(now)`` for :func:`run_conversation`: a fresh local service in a folder of its own
    under ``tmp``, on a clock stopped at ``now``, sharing one loaded embedding ``model``."""
    import tempfile

    from episodic.application.settings import Settings
    from episodic.bootstrap.local import build_local_service
    from episodic.evals.governance import ManualClock

    def build(now: datetime) -> MemoryService:
        data = Path(tempfile.mkdtemp(dir=tmp))
        return build_local_service(Settings(data_dir=data, **settings), embedder=model, clock=ManualClock(now))

    return build


LABELLED_TEST_SETS = {
    "spanish": "conversations_es/test",
    "german": "conversations_de/test",
    "support": "domains/support",
    "incidents": "domains/incidents",
    "texting": "conversations_texting",
}
"""The labelled sets beside the English conversations that nothing was tuned on, by the prefix of
their metrics (``spanish_recall_at_10``, ...), with their folders under the evaluation suite: the
Spanish and German chats' test splits, support tickets with tool results, an incident log with
handoffs, and two chats by text message written blind (``texting``)."""

LONG_TEST_SETS = {"long_conversation": "conversations/test"}
"""Sets measured as one long conversation (:func:`merged`), by the prefix of their metrics: the
English test split as ~900 turns of one tenant, where each conversation alone is ~150."""

EVALUATED_SETS = {"conversation": "conversations/test", **LABELLED_TEST_SETS, **LONG_TEST_SETS}
"""Every conversation set ``episodic eval`` measures, by the prefix of its metrics: the English test
split, the sets above, and the English test split again as one long conversation."""


def recall_gaps(metrics: dict[str, Any]) -> dict[str, float]:
    """How far the Spanish chats' recall@10 is below the English ones', where both were measured
    (``spanish_recall_gap_to_english``): the same kind of chats, asked the same kinds of questions."""
    english = metrics.get("conversation_recall_at_10")
    spanish = metrics.get("spanish_recall_at_10")
    if english is None or spanish is None:
        return {}
    return {"spanish_recall_gap_to_english": english - spanish}


def conversation_metrics(
    build: Callable[[datetime], MemoryService],
    folder: Path,
    progress: Callable[[str], None] = lambda _: None,
    prefix: str = "conversation",
    merge: bool = False,
) -> dict[str, Any]:
    """The benchmark on every conversation of ``folder`` (with ``merge``, on all of them as one:
    :func:`merged`) as flat metrics for ``episodic eval``, named ``{prefix}_...``
    (``_{prefix}_report`` holds the full report, misses included)."""
    conversations = load_conversations(folder)
    if merge:
        conversations = [merged(conversations)]
    report = summarise_scores([run_conversation(build, c, progress) for c in conversations])
    metrics: dict[str, Any] = {
        f"{prefix}_recall_at_10": report["all"]["recall"],
        f"{prefix}_session_recall_at_10": report["all"]["sessionRecall"],
        f"{prefix}_ndcg_at_10": report["all"]["ndcg"],
    }
    for kind in KINDS:
        if kind in report:
            metrics[f"{prefix}_{kind}_recall_at_10"] = report[kind]["recall"]
    writes = report["writes"]
    metrics[f"{prefix}_gold_turns_denied"] = writes["goldDenied"]
    metrics[f"{prefix}_not_memorable_precision"] = writes["notMemorablePrecision"]
    metrics[f"{prefix}_not_memorable_recall"] = writes["notMemorableRecall"]
    metrics[f"_{prefix}_report"] = report
    return metrics
