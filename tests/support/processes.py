"""Running ``episodic`` as a user does, from tests: a free port, waiting for a server process
to answer its health check (or failing with why it did not), and killing a writer mid-stream."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

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


ROOT = Path(__file__).parents[2]


def start_serve(
    port: int,
    data: Path,
    *options: str,
    tokens: str,
    settings: dict[str, str] | None = None,
    stdout: Any = subprocess.DEVNULL,
    stderr: Any = subprocess.DEVNULL,
    own_group: bool = False,
) -> subprocess.Popen:
    """``episodic serve`` as its own process on ``port`` over the data dir ``data``, with
    ``EPISODIC_TOKENS=tokens``, any further ``EPISODIC_*`` ``settings`` and command-line
    ``options`` (``--workers``, ``--backend``); ``own_group``: in a process group of its own, as a
    terminal's Ctrl-C reaches a server (every process of the group)."""
    command = [
        sys.executable,
        "-m",
        "episodic",
        "serve",
        "--port",
        str(port),
        "--data-dir",
        str(data),
        *options,
    ]
    env = {**os.environ, **(settings or {}), "EPISODIC_TOKENS": tokens}
    return subprocess.Popen(
        command, env=env, cwd=ROOT, stdout=stdout, stderr=stderr, text=True, start_new_session=own_group
    )


def kill_when(script: str, args: Sequence[str], enough: Callable[[list[str]], bool]) -> list[str]:
    """Run ``script`` (with the project's source on its path), read the lines it prints (each an
    acknowledgement it gives only after the store returned) until ``enough`` of them, then SIGKILL
    it: no clean shutdown, no checkpoint. Returns the lines read."""
    proc = subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "layers")},
    )
    lines: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line.strip())
        if enough(lines):
            os.kill(proc.pid, signal.SIGKILL)
            break
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, f"the writer ended on its own ({proc.returncode})"
    return lines
