"""What a Lambda cold start of the API imports (a target: cold import <= 300 ms). Powertools'
OpenAPI models (~75-100 ms) are only for the Swagger UI, registered on its first request."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_given_a_fresh_interpreter_when_the_api_handler_is_imported_then_the_openapi_models_are_not():
    code = "import sys, functions.api; print(sorted(m for m in sys.modules if m.endswith('openapi.models')))"
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)

    assert run.stdout.strip() == "[]"


def test_given_a_fresh_interpreter_when_the_api_handler_is_imported_then_the_write_policys_checks_are_not():
    """Redaction's secret patterns, the learned instruction model, the chatter classifier and text
    normalisation are compiled on the first write (or by ``WritePolicy.warm_up``), not by a cold
    start that may only recall."""
    checks = ("redaction", "secrets", "instruction_model", "chatter", "text", "instructions", "memorability")
    code = (
        "import sys, functions.api; print(' '.join(m for m in sys.modules if m.startswith('episodic.domain.policy.')))"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)

    loaded = {name.rsplit(".", 1)[1] for name in run.stdout.split()}
    assert loaded and loaded.isdisjoint(checks), loaded


def test_given_a_warmed_up_policy_when_it_decides_then_nothing_more_is_imported():
    code = (
        "import sys; from datetime import UTC, datetime; from episodic.domain.policy import WritePolicy; "
        "from episodic.domain.model import Caller, EpisodeProposal, Role; p = WritePolicy(); p.warm_up(); "
        "before = set(sys.modules); proposal = EpisodeProposal.model_validate({'eventType': 'tool_call', "
        "'actorId': 'a', 'occurredAt': '2026-12-01T00:00:00Z', 'summary': 'The export job finished in 40 s', "
        "'sourceRefs': ['job:1'], 'sourceTrust': 'tool_result'}); "
        "p.decide(proposal, Caller(tenant_id='t', role=Role.AGENT, principal_id='a'), datetime.now(UTC)); "
        "print(sorted(m for m in set(sys.modules) - before if m.startswith('episodic')))"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)

    assert run.stdout.strip() == "[]"
