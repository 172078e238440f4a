"""The conversation benchmark's test split (what `episodic eval` runs after the suite),
enforced against the recorded floors: long everyday chats written turn by turn, then one
recall per question. Nothing was tuned on this split; ``dev/`` is for tuning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from episodic.domain.model import Caller, Role
from episodic.evals.conversations import (
    LABELLED_TEST_SETS,
    conversation_metrics,
    format_report,
    last_moment,
    local_services,
    write_conversation,
)
from episodic.evals.governance import check_thresholds

SUITE = Path(__file__).parent


def test_given_the_test_conversations_when_written_and_asked_then_no_metric_regresses(tmp_path, minilm):
    metrics = conversation_metrics(local_services(tmp_path, minilm), SUITE / "conversations" / "test")
    print(format_report(metrics["_conversation_report"]))
    thresholds = {
        name: bound
        for name, bound in json.loads((SUITE / "thresholds.json").read_text()).items()
        if name.startswith("conversation_")
    }
    assert len(thresholds) >= 4
    assert check_thresholds(metrics, thresholds) == []


@pytest.mark.parametrize("prefix", sorted(LABELLED_TEST_SETS))
def test_given_a_labelled_test_set_when_written_and_asked_then_it_keeps_its_floors(prefix, tmp_path, minilm):
    """The Spanish and German test splits and the two domain sets: recall, gold turns denied and
    the precision of ``not_memorable``, each against its own recorded floor."""
    metrics = conversation_metrics(local_services(tmp_path, minilm), SUITE / LABELLED_TEST_SETS[prefix], prefix=prefix)
    print(format_report(metrics[f"_{prefix}_report"]))
    thresholds = {
        name: bound
        for name, bound in json.loads((SUITE / "thresholds.json").read_text()).items()
        if name.startswith(f"{prefix}_")
    }
    assert {f"{prefix}_recall_at_10", f"{prefix}_gold_turns_denied", f"{prefix}_not_memorable_precision"} <= set(
        thresholds
    )
    assert check_thresholds(metrics, thresholds) == []


LABELLED_SETS = ("conversations", "conversations_es", "conversations_de", "domains")


def test_given_the_labelled_conversations_when_checked_then_every_gold_turn_exists_and_is_not_chatter():
    paths = sorted(path for name in LABELLED_SETS for path in (SUITE / name).rglob("*.json"))
    assert len(paths) >= 14 + 5 + 3 + 6
    for path in paths:
        conversation = json.loads(path.read_text())
        labels = {t["turnId"]: t["label"] for s in conversation["sessions"] for t in s["turns"]}
        for question in conversation["questions"]:
            assert question["goldTurnIds"], question
            assert all(labels.get(g) in ("memorable", "sensitive") for g in question["goldTurnIds"]), question


@pytest.mark.parametrize("conversation", ["conversations/dev/cv01.json", "conversations_es/dev/es01.json"])
def test_given_a_conversation_when_written_by_batch_and_by_the_conversation_path_then_each_turn_is_decided_alike(
    tmp_path, minilm, conversation
):
    """The conversation path keeps what the batch route keeps: the same decision and stored class
    for every turn, whichever route wrote it."""
    chat = json.loads((SUITE / conversation).read_text())
    agent = Caller(tenant_id="acme", role=Role.AGENT, principal_id="agent:acme")
    build = local_services(tmp_path, minilm)
    decided = {}
    for path in ("batch", "turns"):
        with build(last_moment(chat)) as service:
            decided[path] = write_conversation(service, agent, chat, path).decisions
    assert len(decided["batch"]) == sum(len(s["turns"]) for s in chat["sessions"])
    assert decided["turns"] == decided["batch"]
