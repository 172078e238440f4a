"""The conversation benchmark's test split (what `episodic eval` runs after the suite),
enforced against the recorded floors: long everyday chats written turn by turn, then one
recall per question. Nothing was tuned on this split; ``dev/`` is for tuning."""

from __future__ import annotations

import json
from pathlib import Path

from episodic.evals.conversations import conversation_metrics, format_report, local_services
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


def test_given_the_labelled_conversations_when_checked_then_every_gold_turn_exists_and_is_not_chatter():
    for path in sorted((SUITE / "conversations").glob("*/cv*.json")):
        conversation = json.loads(path.read_text())
        labels = {t["turnId"]: t["label"] for s in conversation["sessions"] for t in s["turns"]}
        for question in conversation["questions"]:
            assert question["goldTurnIds"], question
            assert all(labels.get(g) in ("memorable", "sensitive") for g in question["goldTurnIds"]), question
