"""Mixed load over HTTP: what many agents at once see from ``episodic serve``.

The server runs as its own process (as users run it), with the real model, on a fresh data
dir seeded with ``--seed`` episodes per tenant. Then ``--clients`` threads in this process
send requests for ``--seconds``: 30% writes, 70% recalls with distinct queries (half of them
for one actor), spread over two tenants; the server runs with its defaults unless ``--workers``
says otherwise. Reported: requests per second, p50/p99 by kind, errors, and whether every
acknowledged write can be read back afterwards (lost writes).

``--profile`` samples the server with py-spy while the load runs and prints where its time
went, grouped by stage (model forward pass, SQLite commits, SQLite reads, the search by words,
vector search, ranking, validation and JSON, HTTP), with the samples of threads found waiting
apart.

    .venv/bin/python benchmarks/mixed_load.py --clients 16 --seconds 30 --profile
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

TOKENS = {"acme": "bench-acme-agent-000001", "globex": "bench-globex-agent-0001"}
WORDS = [
    "invoice",
    "deploy",
    "refund",
    "login",
    "latency",
    "export",
    "webhook",
    "quota",
    "schema",
    "backup",
    "migration",
    "outage",
    "pricing",
    "contract",
    "renewal",
    "onboarding",
    "ticket",
    "alert",
    "cache",
    "token",
]

_MODEL_CODE = ("torch/", "sentence_transformers/", "transformers/", "onnxruntime/", "tokenizers/", "minilm/runtime.py")
_SQLITE_CODE = "/adapters/sqlite/"  # the SQLite store and the modules it is composed of
_WRITE_MODULES = ("/adapters/sqlite/group_commit.py", "/adapters/sqlite/writes.py")
"""Modules whose every frame is the write path: the group commit (its lock, savepoints, commit and
fsync) and the statements of a change set."""
_WRITE_CALLS = {
    "transaction",
    "apply",
    "apply_many",
    "record_recall",
    "append_audit",
    "insert_review",
    "close_review",
    "set_writes_enabled",
}
"""Writes elsewhere in the store, by function name (py-spy names a method with its class: the last
part is compared)."""


def _writes(fn: str, path: str) -> bool:
    return path.endswith(_WRITE_MODULES) or (_SQLITE_CODE in path and fn.rpartition(".")[2] in _WRITE_CALLS)


STAGES: list[tuple[str, Any]] = [
    # (stage, test on a frame's function name and file); a sample goes to the innermost frame that matches
    (
        "model forward pass",
        lambda fn, path: any(m in path for m in _MODEL_CODE),
    ),
    ("SQLite writes (the group commit's lock, statements, commit, fsync)", _writes),
    ("search by words (in memory)", lambda fn, path: path.endswith("/adapters/sqlite/word_index.py")),
    ("SQLite reads", lambda fn, path: _SQLITE_CODE in path),
    ("vector search", lambda fn, path: "/adapters/vectors/" in path),
    ("ranking", lambda fn, path: path.endswith("ranking.py")),
    ("write policy", lambda fn, path: "/policy/" in path),
    ("query interpretation", lambda fn, path: path.endswith("query.py")),
    ("validation and JSON", lambda fn, path: "pydantic" in path or "/json/" in path),
    ("service logic", lambda fn, path: path.endswith("service.py")),
    ("HTTP and routing", lambda fn, path: any(m in path for m in ("http/server.py", "socketserver.py", "powertools"))),
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _episode(tenant: str, n: int, salt: str) -> dict[str, Any]:
    rng = random.Random(f"{tenant}-{salt}-{n}")
    a, b, c = rng.sample(WORDS, 3)
    return {
        "eventType": "tool_observed_event",
        "actorId": f"{tenant}-actor-{n % 25}",
        "occurredAt": "2026-11-28T10:00:00Z",
        "summary": f"The {a} job {salt}-{n} touched the {b} service and raised a {c} alert after {n % 97} seconds",
        "sourceRefs": [f"job:{salt}-{n}"],
        "sourceTrust": "tool_result",
    }


def _start_server(data_dir: Path, port: int, workers: int | None = None) -> subprocess.Popen[bytes]:
    """``episodic serve`` on ``data_dir``: its defaults, or ``--workers`` when given."""
    env = {**os.environ, "EPISODIC_TOKENS": ",".join(f"{t}={tenant}:agent" for tenant, t in TOKENS.items())}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    command = [sys.executable, "-m", "episodic", "serve", "--port", str(port), "--data-dir", str(data_dir)]
    if workers is not None:
        command += ["--workers", str(workers)]
    log = data_dir.parent / "server.log"  # the server's own account, for when it does not start
    with log.open("wb") as sink:
        server = subprocess.Popen(command, env=env, stdout=sink, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and server.poll() is None:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=2).status_code == 200:
                return server
        except httpx.HTTPError:
            time.sleep(0.5)
    server.kill()
    tail = log.read_text(errors="replace")[-2000:]
    raise RuntimeError(f"the server did not start (exit code {server.poll()}); its output ends:\n{tail}")


def _seed(base: str, per_tenant: int) -> None:
    for tenant, token in TOKENS.items():
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=120) as client:
            for start in range(0, per_tenant, 100):
                batch = [_episode(tenant, n, "seed") for n in range(start, min(start + 100, per_tenant))]
                response = client.post("/v1/episodes/batch", json={"episodes": batch})
                response.raise_for_status()


def _client_loop(base: str, worker: int, stop: threading.Event, out: dict[str, Any]) -> None:
    rng = random.Random(worker)
    tenant = list(TOKENS)[worker % 2]
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKENS[tenant]}"}, timeout=60) as client:
        n = 0
        while not stop.is_set():
            n += 1
            write = rng.random() < 0.3
            started = time.perf_counter()
            try:
                if write:
                    body = _episode(tenant, worker * 1_000_000 + n, "load")
                    response = client.post("/v1/episodes", json=body)
                    ok = response.status_code == 201
                    if ok:
                        out["acknowledged"].append((tenant, response.json()["eventId"]))
                else:
                    query = f"{' '.join(rng.sample(WORDS, 2))} alert {rng.randint(0, 96)} seconds"
                    asked: dict[str, Any] = {"query": query, "limit": 10}
                    if rng.random() < 0.5:  # half the recalls for one actor's memories
                        asked["actorId"] = f"{tenant}-actor-{rng.randrange(25)}"
                    response = client.post("/v1/recall", json=asked)
                    ok = response.status_code == 200
            except httpx.HTTPError:
                ok = False
            elapsed = (time.perf_counter() - started) * 1000
            out["write" if write else "recall"].append(elapsed)
            if not ok:
                out["errors"] += 1


def _lost(base: str, acknowledged: list[tuple[str, str]]) -> int:
    lost = 0
    for tenant, event_id in acknowledged:
        headers = {"Authorization": f"Bearer {TOKENS[tenant]}"}
        if httpx.get(f"{base}/v1/episodes/{event_id}", headers=headers, timeout=30).status_code != 200:
            lost += 1
    return lost


WAITING = "waiting (on a lock, a condition, a queue or the next request)"


def _waiting(fn: str, path: str) -> bool:
    """Whether a stack's innermost frame is a thread blocked rather than working: py-spy, sampling
    without stopping the server, also records some blocked threads, and those samples are no work."""
    if path.endswith(("threading.py", "queue.py", "selectors.py")):
        return True
    return path.endswith("socket.py") and fn.endswith(("readinto", "accept"))


def _stages(collapsed: Path) -> list[tuple[str, float]]:
    """Share of the server's samples per stage, from py-spy's collapsed stacks (``frame;frame;...
    count``, each frame ``function (file:line)``): :data:`WAITING` first, then the busy stages."""
    counts: collections.Counter[str] = collections.Counter()
    for line in collapsed.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():  # a stack py-spy cut short (a frame name ends the line): no count to add
            continue
        frames = []
        for frame in stack.split(";"):
            name, _, where = frame.partition(" (")
            frames.append((name.strip(), where.rsplit(":", 1)[0]))
        if frames and _waiting(*frames[-1]):
            counts[WAITING] += int(count)
            continue
        stage = next(
            (label for fn, path in reversed(frames) for label, test in STAGES if test(fn, path)),
            "other",
        )
        counts[stage] += int(count)
    total = sum(counts.values())
    if not total:
        return []
    waited = counts.pop(WAITING, 0)
    busy = [(name, n / total) for name, n in counts.most_common()]
    return [(WAITING, waited / total), *busy] if waited else busy


def _tree_cpu_seconds(root: int) -> float | None:
    """CPU seconds (user + system) the process ``root`` and every descendant have used so far, from
    ``/proc`` (Linux; ``None`` elsewhere). ``--workers`` forks, so the server is a process tree."""
    proc = Path("/proc")
    if not (proc / str(root) / "stat").exists():
        return None
    parents: dict[int, int] = {}
    used: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for stat in proc.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:  # the process ended while we looked
            continue
        pid = int(stat.parent.name)
        parents[pid] = int(fields[1])  # after the name: state, ppid, ...; utime and stime are the 12th and 13th
        used[pid] = (int(fields[11]) + int(fields[12])) / tick
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent and pid not in tree]
        tree.update(children)
        frontier.extend(children)
    return sum(used.get(pid, 0.0) for pid in tree)


def quantile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1] if len(values) > 2 else (max(values) if values else 0.0)


def run(clients: int, seconds: float, seed: int, profile: bool, workers: int | None = None) -> dict[str, Any]:
    """The load against a fresh server (``workers``: ``--workers``; None: the server's default)."""
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="episodic-load-") as tmp:
        server = _start_server(Path(tmp) / "data", port, workers)
        try:
            _seed(base, seed)
            out: dict[str, Any] = {"write": [], "recall": [], "errors": 0, "acknowledged": []}
            stop = threading.Event()
            spy = None
            py_spy = shutil.which("py-spy") or shutil.which("py-spy", path=str(Path(sys.executable).parent))
            collapsed = Path(tmp) / "profile.txt"
            if profile and py_spy:
                spy = subprocess.Popen(
                    [py_spy, "record", "--pid", str(server.pid), "--subprocesses", "--format", "raw",
                     "--output", str(collapsed), "--duration", str(int(seconds)), "--rate", "200", "--nonblocking"],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                )  # fmt: skip
            threads = [threading.Thread(target=_client_loop, args=(base, w, stop, out)) for w in range(clients)]
            server_cpu_before, generator_cpu_before = _tree_cpu_seconds(server.pid), time.process_time()
            started = time.perf_counter()
            for thread in threads:
                thread.start()
            time.sleep(seconds)
            stop.set()
            for thread in threads:
                thread.join()
            wall = time.perf_counter() - started
            server_cpu_after, generator_cpu = _tree_cpu_seconds(server.pid), time.process_time() - generator_cpu_before
            stages = []
            if spy is not None:
                spy.wait(timeout=120)
                stages = _stages(collapsed) if collapsed.exists() else []
            lost = _lost(base, out["acknowledged"])
        finally:
            server.terminate()
            server.wait(timeout=30)
    everything = out["write"] + out["recall"]
    cpu = _cpu_bound(server_cpu_before, server_cpu_after, generator_cpu, wall, len(everything))
    return {
        "clients": clients,
        "workers": workers or "default",
        "seconds": round(wall, 1),
        "requests": len(everything),
        "per_second": round(len(everything) / wall, 1),
        "p50_ms": round(quantile(everything, 50), 1),
        "p99_ms": round(quantile(everything, 99), 1),
        "write_p50_ms": round(quantile(out["write"], 50), 1),
        "write_p99_ms": round(quantile(out["write"], 99), 1),
        "recall_p50_ms": round(quantile(out["recall"], 50), 1),
        "recall_p99_ms": round(quantile(out["recall"], 99), 1),
        "errors": out["errors"],
        "acknowledged_writes": len(out["acknowledged"]),
        "lost_writes": lost,
        "stages": [(name, round(share, 3)) for name, share in stages],
        **cpu,
    }


def _cpu_bound(
    before: float | None, after: float | None, generator: float, wall: float, requests: int
) -> dict[str, Any]:
    """What the CPU allows: the server's CPU time per request during the load and the rate the
    machine's cores could serve at that cost (``cpu_ceiling_per_s``), beside the cores the
    server and this load generator kept busy. Empty without a reading (no ``/proc``, no CPU used)."""
    if before is None or after is None or after <= before or not requests:
        return {}
    cores = os.cpu_count() or 1
    cpu_ms = (after - before) * 1000 / requests
    return {
        "server_cpu_ms_per_request": round(cpu_ms, 2),
        "cpu_ceiling_per_s": round(cores * 1000 / cpu_ms, 1),
        "server_cores_busy": round((after - before) / wall, 2),
        "generator_cores_busy": round(generator / wall, 2),
        "cores": cores,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--seed", type=int, default=1000, help="episodes per tenant before the load")
    parser.add_argument("--profile", action="store_true", help="sample the server with py-spy (if installed)")
    parser.add_argument("--workers", type=int, default=None, help="episodic serve --workers (unset: its default)")
    args = parser.parse_args(argv)
    print(json.dumps(run(args.clients, args.seconds, args.seed, args.profile, args.workers), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
