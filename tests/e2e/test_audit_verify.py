"""The audit chain as an operator meets it: a real ``episodic serve`` writes, erases and sweeps
through the API; ``GET /v1/admin/audit/verify`` verifies (operators only) and the last
verification is kept; the server stops, one audit record is edited in the database file, and
``episodic audit verify`` exits 0 before the edit and 1 after it, naming the record."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys

import httpx

from tests.support.processes import ROOT, free_port, start_serve, wait_healthy

AGENT, OPERATOR = "a" * 32, "o" * 32
TOKENS = f"{AGENT}=acme:agent,{OPERATOR}=acme:operator"


def episode(summary: str, **extra) -> dict:
    return {"eventType": "task_milestone", "actorId": "release-bot", "occurredAt": "2026-11-28T17:00:00Z",
            "summary": summary, "sourceRefs": ["ci:run-7"], "sourceTrust": "tool_result", **extra}  # fmt: skip


def audit_verify(data, *extra: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "episodic", "audit", "verify", "--data-dir", str(data), *extra]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_given_a_served_data_dir_when_a_record_is_edited_after_stopping_then_verify_fails_naming_it(tmp_path):
    port, data = free_port(), tmp_path / "data"
    server = start_serve(port, data, tokens=TOKENS, settings={"EPISODIC_SWEEP_INTERVAL_SECONDS": "1"})
    base, agent, operator = (f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {AGENT}"},
                             {"Authorization": f"Bearer {OPERATOR}"})  # fmt: skip
    try:
        wait_healthy(server, base)
        ids = [httpx.post(f"{base}/v1/episodes", headers=agent, json=episode(f"Release 4.2.{n} shipped"), timeout=60)
               .json()["eventId"] for n in range(4)]  # fmt: skip
        expired = episode("Nightly build 9 finished", retention={"expiresAt": "2026-01-01T00:00:00Z"})
        httpx.post(f"{base}/v1/episodes", headers=agent, timeout=60, json=expired)
        assert httpx.delete(f"{base}/v1/episodes/{ids[0]}", headers=agent, timeout=60).status_code == 200
        assert httpx.get(f"{base}/v1/admin/audit/verify", headers=agent, timeout=60).status_code == 403
        assert httpx.get(f"{base}/v1/admin/audit/verification", headers=operator, timeout=60).json() == {"last": None}
        verified = httpx.get(f"{base}/v1/admin/audit/verify", headers=operator, timeout=60).json()
        last = httpx.get(f"{base}/v1/admin/audit/verification", headers=operator, timeout=60).json()["last"]
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    assert verified["verified"] and verified["records"] >= 6 and verified["firstBreak"] is None
    assert last["action"] == "audit.verified" and last["detail"]["verified"] is True

    clean = audit_verify(data)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "verified" in clean.stdout

    db = sqlite3.connect(data / "episodic.db")
    db.execute("DROP TRIGGER audit_no_update")
    seq, audit_id, doc = db.execute("SELECT seq, audit_id, doc FROM audit ORDER BY seq LIMIT 1 OFFSET 2").fetchone()
    db.execute("UPDATE audit SET doc = ? WHERE seq = ?", (json.dumps(json.loads(doc) | {"reasons": ["edited"]}), seq))
    db.commit()
    db.close()

    tampered = audit_verify(data)
    assert tampered.returncode == 1, tampered.stdout + tampered.stderr
    assert audit_id in tampered.stderr and "altered" in tampered.stderr + tampered.stdout


def test_given_a_checkpoint_that_does_not_parse_when_verifying_then_it_is_a_usage_error(tmp_path):
    (tmp_path / "data").mkdir()
    sqlite3.connect(tmp_path / "data" / "episodic.db").close()
    bad = audit_verify(tmp_path / "data", "--checkpoint", "acme:0:oops")
    assert bad.returncode == 2 and "TENANT:SHARD:SEQ:DIGEST" in bad.stderr
