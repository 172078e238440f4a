"""Running ``episodic`` as a user does, from tests: a free port, and waiting for a server
process to answer its health check (or failing with why it did not)."""

from __future__ import annotations

import socket
import subprocess
import time

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(process: subprocess.Popen, base: str, seconds: float = 120) -> dict:
    """The health answer of the server at ``base`` once it gives one; fails if the process
    exits first or nothing answers within ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        assert process.poll() is None, f"the server exited with {process.returncode}"
        try:
            answer = httpx.get(f"{base}/v1/health", timeout=2)
            if answer.status_code == 200:
                return dict(answer.json())
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, f"no answer from {base} in {seconds:.0f} s"
        time.sleep(0.3)
