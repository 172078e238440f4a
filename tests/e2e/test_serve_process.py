"""`episodic serve` as a user runs it: a real process, first start without any tokens."""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_given_a_first_start_when_served_then_tokens_are_created_printed_and_work(tmp_path):
    port, data = free_port(), tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if k != "EPISODIC_TOKENS"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "episodic", "serve", "--port", str(port), "--data-dir", str(data)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
        env=env,
    )
    try:
        lines, tokens, deadline = [], {}, time.time() + 120
        assert proc.stdout is not None
        while time.time() < deadline:
            line = proc.stdout.readline()
            lines.append(line)
            if match := re.match(r"\s+(agent|operator)\s+(\S+)$", line):
                tokens[match.group(1)] = match.group(2)
            if len(tokens) == 2:
                break
        assert set(tokens) == {"agent", "operator"}, "".join(lines)
        stored = json.loads((data / "tokens.json").read_text())
        assert {v["role"] for v in stored.values()} == {"agent", "operator"}
        assert oct((data / "tokens.json").stat().st_mode & 0o777) == "0o600"
        assert oct(data.stat().st_mode & 0o777) == "0o700", "the data dir holds every memory: owner-only"

        base = f"http://127.0.0.1:{port}"
        assert httpx.get(f"{base}/v1/health", timeout=30).json()["status"] == "ok"
        assert httpx.get(f"{base}/v1/timeline", timeout=30).status_code == 401
        response = httpx.post(
            f"{base}/v1/episodes",
            headers={"Authorization": f"Bearer {tokens['agent']}"},
            json={
                "eventType": "task_milestone",
                "actorId": "release-bot",
                "occurredAt": "2026-11-28T17:00:00Z",
                "summary": "Release 4.2.0 of the mobile app shipped to the App Store",
                "sourceRefs": ["ci:pipeline/8812"],
                "sourceTrust": "tool_result",
            },
            timeout=120,
        )
        assert response.status_code == 201, response.text
        assert response.json()["episode"]["tenantId"] == "demo"
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    assert proc.returncode == 0
    assert (data / "episodic.db").exists()
