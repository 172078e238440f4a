"""The conversation benchmark's test split (what `episodic eval` runs after the suite),
enforced against the recorded floors: long everyday chats written turn by turn, then one
recall per question. Nothing was tuned on this split; ``dev/`` is for tuning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from episodic.domain.model import Caller, Role
from episodic.evals.conversations import (
    EVALUATED_SETS,
    LABELLED_TEST_SETS,
    LONG_TEST_SETS,
    conversation_metrics,
    format_report,
    last_moment,
    local_services,
    recall_gaps,
    write_conversation,
)
from episodic.evals.governance import check_thresholds

SUITE = Path(__file__).parent


GAPS = ("spanish_recall_gap_to_english",)
"""Thresholds that compare two sets (``episodic eval`` computes them the same way)."""


@pytest.fixture(scope="module")
def measured(tmp_path_factory, minilm):
    """Each set's metrics, measured once for the module (``episodic eval``'s figures)."""
    metrics: dict[str, dict] = {}

    def measure(prefix: str) -> dict:
        if prefix not in metrics:
            build = local_services(tmp_path_factory.mktemp(prefix), minilm)
            merge = prefix in LONG_TEST_SETS
            metrics[prefix] = conversation_metrics(build, SUITE / EVALUATED_SETS[prefix], prefix=prefix, merge=merge)
        return metrics[prefix]

    return measure


def thresholds_of(prefix: str) -> dict:
    return {
        name: bound
        for name, bound in json.loads((SUITE / "thresholds.json").read_text()).items()
        if name.startswith(f"{prefix}_") and name not in GAPS
    }


def test_given_the_test_conversations_when_written_and_asked_then_no_metric_regresses(measured):
    metrics = measured("conversation")
    print(format_report(metrics["_conversation_report"]))
    thresholds = thresholds_of("conversation")
    assert len(thresholds) >= 4
    assert check_thresholds(metrics, thresholds) == []


@pytest.mark.parametrize("prefix", sorted(LABELLED_TEST_SETS))
def test_given_a_labelled_test_set_when_written_and_asked_then_it_keeps_its_floors(prefix, measured):
    """The Spanish and German test splits and the two domain sets: recall, gold turns denied and
    the precision of ``not_memorable``, each against its own recorded floor."""
    metrics = measured(prefix)
    print(format_report(metrics[f"_{prefix}_report"]))
    thresholds = thresholds_of(prefix)
    assert {f"{prefix}_recall_at_10", f"{prefix}_gold_turns_denied", f"{prefix}_not_memorable_precision"} <= set(
        thresholds
    )
    assert check_thresholds(metrics, thresholds) == []


def test_given_the_test_conversations_as_one_long_conversation_when_asked_then_it_keeps_its_floors(measured):
    """The same test split as one tenant of ~900 turns (speakers renamed alike in every part): the
    length at which the held-out benchmark is read, and where a ranking tuned on short chats loses
    most."""
    metrics = measured("long_conversation")
    report = metrics["_long_conversation_report"]
    print(format_report(report))
    assert report["all"]["n"] == measured("conversation")["_conversation_report"]["all"]["n"]
    thresholds = thresholds_of("long_conversation")
    assert {"long_conversation_recall_at_10", "long_conversation_session_recall_at_10"} <= set(thresholds)
    assert check_thresholds(metrics, thresholds) == []


def test_given_the_spanish_and_english_test_splits_then_spanish_recall_is_within_its_gap_of_english(measured):
    """The same kind of chats in Spanish find nearly as much as in English, with the default model."""
    gaps = recall_gaps(measured("conversation") | measured("spanish"))
    recorded = json.loads((SUITE / "thresholds.json").read_text())
    bounds = {name: bound for name, bound in recorded.items() if name in GAPS}
    assert set(bounds) == set(GAPS)
    assert check_thresholds(gaps, bounds) == []


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
