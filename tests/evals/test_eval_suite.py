"""The evaluation suite (what `episodic eval` runs), enforced in CI against the recorded thresholds."""

import json
from pathlib import Path

import pytest

from episodic.application.settings import Settings
from episodic.bootstrap.local import build_local_service
from episodic.evals.conversations import EVALUATED_SETS
from episodic.evals.governance import SUITE_NOW, ManualClock, check_thresholds, run_suite

SUITE = Path(__file__).parent
CONVERSATION_PREFIXES = tuple(f"{prefix}_" for prefix in EVALUATED_SETS)


def test_given_the_labelled_suite_when_evaluated_then_no_metric_regresses(tmp_path, minilm):
    clock = ManualClock(SUITE_NOW)
    service = build_local_service(Settings(data_dir=tmp_path / "data"), embedder=minilm, clock=clock)
    metrics = run_suite(service, clock, SUITE)
    service.close()
    thresholds = {
        name: bound
        for name, bound in json.loads((SUITE / "thresholds.json").read_text()).items()
        if not name.startswith(CONVERSATION_PREFIXES)  # tests/evals/test_conversation_benchmark.py
    }
    print(json.dumps({k: v for k, v in metrics.items() if not k.startswith("_")}, indent=1))
    assert check_thresholds(metrics, thresholds) == [], metrics.get("_wrong_decisions")
    assert metrics["cross_tenant_leaks"] == 0 and metrics["cross_actor_leaks"] == 0
    if "unsafe_write_rate" in metrics:
        assert metrics["unsafe_write_rate"] == pytest.approx(0.0)


def test_given_thresholds_when_a_metric_crosses_one_then_it_is_reported():
    thresholds = {"deletion_success": {"min": 1.0}, "cross_tenant_leaks": {"max": 0}, "write_recall": {"min": 0.9}}
    failures = check_thresholds({"deletion_success": 0.95, "cross_tenant_leaks": 2}, thresholds)
    assert failures == [
        "deletion_success: 0.9500 < 1.0",
        "cross_tenant_leaks: 2.0000 > 0",
        "write_recall: not measured",
    ]
