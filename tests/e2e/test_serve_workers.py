"""``episodic serve`` with several workers (``--workers 2``, and by default one per core): the
processes over one data dir answer concurrent writers without losing or duplicating a write, all
see every write, a worker that dies is replaced, and no worker outlives the supervisor, even one
killed with SIGKILL."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from episodic.client import Client
from tests.support.processes import free_port, start_serve, wait_healthy

ROOT = Path(__file__).resolve().parents[2]
AGENT = "workers-agent-token-0001"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="--workers needs Linux")


def children_of(pid: int) -> list[int]:
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return [int(p) for p in found]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def test_given_two_workers_when_agents_write_at_once_then_every_write_lands_once_and_the_workers_die_with_the_server(
    tmp_path,
):
    port = free_port()
    server = start_serve(port, tmp_path / "d", "--workers", "2", tokens=f"{AGENT}=acme:agent")
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(server, base)
        workers = children_of(server.pid)
        assert len(workers) == 2

        def write(n: int) -> str:
            with Client(base, AGENT) as agent:
                result = agent.remember(
                    {"eventType": "task_milestone", "actorId": "sam", "occurredAt": "2026-11-20T18:00:00Z",
                     "summary": f"Sam shipped release {n} of the billing service", "sourceRefs": [f"rel:{n}"],
                     "sourceTrust": "tool_result"},
                    idempotency_key=f"release-{n}",
                )  # fmt: skip
                return str(result.event_id)

        with ThreadPoolExecutor(8) as pool:
            ids = list(pool.map(write, range(40)))
            again = list(pool.map(write, range(40)))  # replays, whichever process answers
        assert len(set(ids)) == 40 and again == ids
        with Client(base, AGENT) as agent:
            assert sorted(e.event_id for e in agent.iter_timeline(actor_id="sam")) == sorted(ids)
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait(timeout=30)
    deadline = time.monotonic() + 20
    while any(alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(alive(w) for w in workers), "a worker outlived the server"


def test_given_workers_with_the_aws_local_backend_when_served_then_it_is_refused(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "episodic", "serve", "--workers", "2", "--backend", "aws-local",
         "--data-dir", str(tmp_path)],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2 and "needs the local backend" in done.stderr


def test_given_two_workers_when_the_server_gets_sigterm_then_every_process_closes_its_store_and_exits(tmp_path):
    """SIGTERM is what ``kill``, systemd and container runtimes send. Every process must close
    its store on it: the last SQLite connection to close checkpoints the log and removes
    ``episodic.db-wal``, which a process ended mid-flight leaves behind."""
    port, data = free_port(), tmp_path / "d"
    server = start_serve(port, data, "--workers", "2", tokens=f"{AGENT}=acme:agent")
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(server, base)
        workers = children_of(server.pid)
        with Client(base, AGENT) as agent:
            for n in range(6):  # with two processes, both are likely to have answered one
                agent.remember(
                    {"eventType": "task_milestone", "actorId": "sam", "occurredAt": "2026-11-20T18:00:00Z",
                     "summary": f"Sam shipped release {n} of the billing service", "sourceRefs": [f"rel:{n}"],
                     "sourceTrust": "tool_result"}
                )  # fmt: skip
        assert (data / "episodic.db-wal").exists()
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(timeout=30)
    assert not any(alive(w) for w in workers), "a worker outlived the server"
    assert not (data / "episodic.db-wal").exists(), "a process ended without closing its store"


def test_given_two_workers_when_a_client_trickles_its_headers_then_its_deadline_holds_in_every_worker(tmp_path):
    """The server is made before the workers are forked: each worker must watch its own deadlines
    (a thread started before the fork would not be in the workers). Several slow clients, so that
    both workers get some; each is told 408 once the header deadline passes."""
    port = free_port()
    server = start_serve(port, tmp_path / "d", "--workers", "2", tokens=f"{AGENT}=acme:agent")
    try:
        wait_healthy(server, f"http://127.0.0.1:{port}")
        slow = [socket.create_connection(("127.0.0.1", port), timeout=60) for _ in range(6)]
        for sock in slow:
            sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        answers = [b""] * len(slow)
        for _ in range(300):  # a byte of a header from each, every 0.1 s, until each is answered (or 30 s)
            for n, sock in enumerate(slow):
                if not answers[n]:
                    with contextlib.suppress(OSError):
                        sock.sendall(b"a")
                    sock.setblocking(False)
                    with contextlib.suppress(BlockingIOError, OSError):
                        answers[n] = sock.recv(4096) or b"closed"
                    sock.setblocking(True)
            if all(answers):
                break
            time.sleep(0.1)
        for sock in slow:
            sock.close()
        assert all(answer.startswith(b"HTTP/1.1 408") for answer in answers), answers
    finally:
        server.terminate()
        server.wait(timeout=60)


@pytest.mark.parametrize("stop", ["sigterm", "ctrl-c"])
def test_given_writes_in_flight_when_two_workers_are_stopped_then_none_fails_and_every_acknowledged_one_is_kept(
    tmp_path, stop
):
    """The store is closed only once the requests being answered are done: a write cut off by the
    close answered 500. What the stopping server still answers is a 2xx or 503 ``shutting_down``;
    a connection it no longer takes fails on the client's side, and a retry with the same key is
    applied once. Ctrl-C in a terminal reaches every process of the group, then the supervisor's
    SIGTERM reaches the workers again: neither may cut a worker's wait short."""
    port, data = free_port(), tmp_path / "d"
    server = start_serve(port, data, "--workers", "2", tokens=f"{AGENT}=acme:agent", own_group=True)
    base = f"http://127.0.0.1:{port}"
    statuses: list[int] = []
    kept: list[str] = []
    stop = threading.Event()

    def writer(n: int) -> None:
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {AGENT}"}, timeout=30) as client:
            for i in range(10_000):
                if stop.is_set():
                    return
                body = {"eventType": "task_milestone", "actorId": "sam", "occurredAt": "2026-11-20T18:00:00Z",
                        "summary": f"Writer {n} shipped build {i} of the billing service",
                        "sourceRefs": [f"build:{n}:{i}"], "sourceTrust": "tool_result"}  # fmt: skip
                try:
                    response = client.post("/v1/episodes", json=body, headers={"Idempotency-Key": f"w{n}-{i}"})
                except httpx.TransportError:
                    return  # the server is gone
                statuses.append(response.status_code)
                if response.status_code == 201:
                    kept.append(response.json()["episode"]["eventId"])

    try:
        wait_healthy(server, base)
        with ThreadPoolExecutor(8) as pool:
            for n in range(8):
                pool.submit(writer, n)
            while len(statuses) < 40:
                time.sleep(0.05)
            if stop == "sigterm":
                server.send_signal(signal.SIGTERM)
            else:
                os.killpg(server.pid, signal.SIGINT)
            assert server.wait(timeout=60) == 0
            stop.set()
    finally:
        stop.set()
        if server.poll() is None:
            server.kill()
            server.wait(timeout=30)
    assert statuses and set(statuses) <= {201, 503}, sorted(set(statuses))
    again = start_serve(port, data, "--workers", "1", tokens=f"{AGENT}=acme:agent")
    try:
        wait_healthy(again, base)
        with Client(base, AGENT) as agent:
            assert all(agent.get(event_id).event_id == event_id for event_id in kept)
    finally:
        again.terminate()
        again.wait(timeout=60)


def test_given_a_schema_one_data_dir_when_served_by_two_workers_then_it_is_upgraded_once_and_both_answer(tmp_path):
    from tests.support.schema_one import schema_one

    data = tmp_path / "d"
    data.mkdir()
    schema_one(data / "episodic.db")
    port = free_port()
    server = start_serve(port, data, "--workers", "2", tokens=f"{AGENT}=acme:agent", stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(server, base)
        with ThreadPoolExecutor(4) as pool:  # the kernel hands the connections to either process

            def recall(_: int) -> int:
                with Client(base, AGENT) as agent:
                    return len(agent.recall("invoice overdue", limit=50).items)

            found = list(pool.map(recall, range(8)))
    finally:
        server.send_signal(signal.SIGTERM)
        _, log = server.communicate(timeout=60)
    assert found == [30] * 8
    assert log.count("moving the indexed texts of 60 episodes") == 1, log


def test_given_no_workers_option_when_served_then_there_is_a_worker_per_core(tmp_path):
    from episodic.entrypoints.server.workers import default_workers

    expected = min(len(os.sched_getaffinity(0)), 8)
    assert default_workers("local") == expected and default_workers("aws-local") == 1
    port = free_port()
    server = start_serve(port, tmp_path / "d", tokens=f"{AGENT}=acme:agent")
    try:
        wait_healthy(server, f"http://127.0.0.1:{port}")
        assert len(children_of(server.pid)) == (expected if expected > 1 else 0)
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 0


SUPERVISED = """
import os, sys, time
from episodic.entrypoints.server.workers import supervise

def run(index, replacing):
    with open(sys.argv[1], "a") as seen:
        seen.write(f"{index} {replacing}\\n")
    if index == 0 and not replacing:
        os._exit(1)  # the first worker 0 dies at once: its replacement is told it replaces it
    while True:
        time.sleep(0.1)

sys.exit(supervise(2, run))
"""


def test_given_a_worker_that_dies_when_it_is_replaced_then_the_replacement_knows_it_replaces_one(tmp_path):
    """What ``episodic serve`` says once at its start (where it listens, the tokens it created) a
    replaced worker 0 must not say again: it is told it is a replacement."""
    seen = tmp_path / "seen"
    supervisor = subprocess.Popen([sys.executable, "-c", SUPERVISED, str(seen)], cwd=ROOT,
                                  env={**os.environ, "PYTHONPATH": str(ROOT / "layers")})  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (not seen.exists() or len(seen.read_text().splitlines()) < 3):
            time.sleep(0.05)
        assert sorted(seen.read_text().splitlines()) == ["0 False", "0 True", "1 False"]
    finally:
        supervisor.send_signal(signal.SIGTERM)
        supervisor.wait(timeout=30)


def test_given_a_worker_killed_when_serving_then_another_takes_its_place_and_writes_go_on(tmp_path):
    port = free_port()
    server = start_serve(port, tmp_path / "d", "--workers", "2", tokens=f"{AGENT}=acme:agent", stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(server, base)
        first, second = children_of(server.pid)
        os.kill(first, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (first in children_of(server.pid) or len(children_of(server.pid)) < 2):
            time.sleep(0.2)
        replaced = children_of(server.pid)
        assert len(replaced) == 2 and first not in replaced and second in replaced
        with ThreadPoolExecutor(4) as pool:

            def write(n: int) -> int:
                with Client(base, AGENT) as agent:
                    agent.remember(
                        {"eventType": "task_milestone", "actorId": "sam", "occurredAt": "2026-11-20T18:00:00Z",
                         "summary": f"Sam shipped release {n} of the billing service", "sourceRefs": [f"rel:{n}"],
                         "sourceTrust": "tool_result"}
                    )  # fmt: skip
                    return n

            assert sorted(pool.map(write, range(12))) == list(range(12))
    finally:
        server.send_signal(signal.SIGTERM)
        _, log = server.communicate(timeout=60)
    assert server.returncode == 0
    assert "ended (signal SIGKILL); starting another" in log
