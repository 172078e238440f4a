"""`episodic bench` / `make bench`: every performance figure of the project, in one run.

Prints a table and writes ``BENCHMARKS.md`` with the machine it ran on:

* write throughput through policy and store, with the real embedder and without it
  (vectors computed beforehand), against raw SQLite inserts and the embedder's own batch
  throughput in the same run, as ratios;
* recall latency p50/p99 by corpus and scope size (``recall_at_scale``);
* end-to-end API latency through the local HTTP server, one client and then 16 at once
  (30% writes, 70% recalls, two tenants; ``mixed_load``), with where the server's time goes;
* the write policy on pathological input (64 KiB of each shape its own patterns' words make)
  beside ordinary text, as ratios, and ``/v1/health`` while the costliest write runs;
* cold import time of each Lambda handler module, and the size of each deployment package;
* peak memory of the run.

Figures are measured, never asserted. ``--quick`` (the default) fits in CI; ``--full`` runs
the 1M-episode corpus.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import platform
import pstats
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HANDLERS = ["functions.api", "functions.stream", "functions.events", "functions.workflows"]


def machine() -> dict[str, Any]:
    import numpy as np

    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    blas = np.__config__.CONFIG.get("Build Dependencies", {}).get("blas", {}).get("name", "?")
    return {
        "when": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "memory_gib": round(memory, 1),
        "python": platform.python_version(),
        "numpy_blas": blas,
        "system": platform.platform(),
    }


class _Precomputed:
    """Benchmark harness: hands out vectors computed before the timer started, to time the
    write path *without* embedding (the real model made them). While ``recording`` (an
    untimed dry run of the same writes), it embeds for real and keeps what it made, keyed by
    the exact text the service asked for."""

    def __init__(self, real: Any) -> None:
        self.name: str = real.name
        self.dimension: int = real.dimension
        self._real = real
        self._vectors: dict[str, Any] = {}
        self.recording = True

    def embed(self, texts: Sequence[str]) -> list[Any]:
        if self.recording:
            vectors = self._real.embed(texts)
            self._vectors.update(zip(texts, vectors, strict=True))
            return list(vectors)
        return [self._vectors[t] for t in texts]

    def texts(self) -> list[str]:
        """What the service asked to embed during the dry run, in order."""
        return list(self._vectors)


Stage = tuple[tuple[str, str], ...]
"""Where a profile stage's time is spent: (file name, function) of each of its functions."""

POLICY_STAGES: dict[str, Stage] = {
    "instruction patterns (regexes over three readings)": (("instructions.py", "findings"),),
    "learned instruction model (hashed n-grams)": (("instruction_model.py", "is_instruction"),),
    "secret redaction": (("redaction.py", "redact_proposal"),),
    "normalisation (NFKC, invisible characters)": (("__init__.py", "normalise_proposal"),),
    "sentence judgements (memorability, chatter)": (("__init__.py", "_judge_sentences"),),
    "sensitive disclosures": (("__init__.py", "_privacy_for_disclosures"),),
}


def stage_shares(stats: pstats.Stats, stages: dict[str, Stage], whole: tuple[str, str], rest: str) -> dict[str, float]:
    """Each stage's share of the cumulative time of ``whole`` (file name, function), from a
    cProfile run; ``rest`` names what the stages leave."""
    table: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]  # pstats keeps its table here
    cumulative = {(Path(f).name, name): entry[3] for (f, _, name), entry in table.items()}
    total = cumulative.get(whole, 0.0) or 1.0
    shares = {stage: sum(cumulative.get(key, 0.0) for key in keys) / total for stage, keys in stages.items()}
    shares[rest] = max(0.0, 1.0 - sum(shares.values()))
    return shares


POLICY_REST = "everything else (validation, provenance, the verdict)"

RECALL_STAGES: dict[str, Stage] = {
    "the model: the question's pass on the recall's own thread, or waiting for a worker's (and the names)": (
        ("embedder.py", "run_here"),
        ("embedder.py", "_collect"),
    ),
    "BM25 (in-memory word index), both rounds": (("recall.py", "_words"),),
    "vector search with its scope, both rounds": (("recall.py", "_semantic"),),
    "loading the candidates' episodes": (("rounds.py", "admitted"),),
    "the turns around the items and the replies to question turns": (("replies.py", "sessions_around"),),
    "ranking and explaining": (("ranking.py", "rank"),),
    "read audit and access counts": (("reads.py", "_account"),),
    "the evidence block": (("evidence.py", "render_context"),),
}
"""Each stage is named by (file name, function) of its functions; a test checks that each still exists."""


def _forget_policy_caches() -> None:
    """Empty the write policy's memo cache of words, so a timed run judges every text afresh."""
    from episodic.domain.policy import instruction_model

    instruction_model.word_buckets.cache_clear()


def _batch_rate(caller: Any, embedder: Any, batch: list[Any]) -> float:
    """Episodes per second through ``remember_batch`` in batches of 100, in a fresh data dir."""
    from episodic.application.settings import Settings
    from episodic.bootstrap.local import build_local_service

    with tempfile.TemporaryDirectory() as tmp:
        service = build_local_service(Settings(data_dir=Path(tmp)), embedder=embedder)
        service.deps.policy.warm_up()  # classifiers and detectors outside the timer
        t0 = time.perf_counter()
        for start in range(0, len(batch), 100):
            service.writes.remember_batch(caller, batch[start : start + 100])
        rate = len(batch) / (time.perf_counter() - t0)
        service.close()
    return rate


def embedding_rates(embedder: Any, texts: list[str]) -> tuple[float, float]:
    """Texts per second through ``embedder``'s model run directly (one ONNX Runtime session on every
    core), then through ``embedder`` itself, each on ``texts`` in batches of 100 (the session made
    before the timer)."""
    runtime = embedder._load()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    runtime.encode(texts[:1], threads=cores)
    rates = []
    for embed in (lambda batch: runtime.encode(batch, threads=cores), embedder.embed):
        t0 = time.perf_counter()
        for start in range(0, len(texts), 100):
            embed(texts[start : start + 100])
        rates.append(len(texts) / (time.perf_counter() - t0))
    return rates[0], rates[1]


def write_throughput(count: int) -> dict[str, Any]:
    """Rates per second (``*_per_s``), ``policy_profile``, the share of the policy's time per stage
    (:func:`stage_shares` of :data:`POLICY_STAGES`), and ``path_profile``, the microseconds a proposal
    spends in each stage of the path without embedding (:func:`benchmarks.write_profile.path_profile`)."""
    from benchmarks.ingest_throughput import proposals
    from benchmarks.write_profile import path_profile
    from episodic.adapters.minilm.embedder import MiniLMEmbedder
    from episodic.application.settings import Settings
    from episodic.bootstrap.local import build_local_service
    from episodic.domain.model import Caller, Role

    real = MiniLMEmbedder(cache_size=0)
    real.embed(["warm up"])
    caller = Caller(tenant_id="acme", role=Role.AGENT, principal_id="bench")
    items = proposals(count, "bench")
    precomputed_items = proposals(count, "pre")
    precomputed = _Precomputed(real)
    # the untimed dry run that records the vectors
    with (
        tempfile.TemporaryDirectory() as tmp,
        build_local_service(Settings(data_dir=Path(tmp)), embedder=precomputed) as service,
    ):
        for start in range(0, count, 100):
            service.writes.remember_batch(caller, precomputed_items[start : start + 100])
    precomputed.recording = False
    _forget_policy_caches()  # the timed run must not find these texts' verdicts cached from the dry run
    # The bound: the model on exactly the texts the service embeds (who and when, then the
    # summary: ``Episode.search_text``), in the service's batches of 100, run directly: one ONNX
    # Runtime session on every core, as the recall targets time the model's own query. Beside it,
    # the service's embedder alone on the same texts (it splits a batch into two one-core passes).
    # The machine is shared and a slow run says nothing about either side, so each runs three
    # times, alternately, the path with embedding on fresh texts, and each side's best counts.
    texts = list(precomputed.texts())
    best = {"model": 0.0, "embedder": 0.0, "with_embedding": 0.0}
    for run in range(3):
        model, embedder = embedding_rates(real, texts)
        best["model"], best["embedder"] = max(best["model"], model), max(best["embedder"], embedder)
        _forget_policy_caches()
        fresh = items if run == 0 else proposals(count, f"bench-{run}")
        best["with_embedding"] = max(best["with_embedding"], _batch_rate(caller, real, fresh))
    model_rate, embedder_rate = best["model"], best["embedder"]
    rates = {"with_embedding": best["with_embedding"]}
    rates["without_embedding"] = _batch_rate(caller, precomputed, precomputed_items)
    _forget_policy_caches()
    stages = path_profile(precomputed, precomputed_items)  # the same path, each stage timed
    # What bounds the path without embedding: the write policy alone, on texts it has not seen.
    _forget_policy_caches()
    judged = proposals(count, "policy")
    with tempfile.TemporaryDirectory() as tmp:
        service = build_local_service(Settings(data_dir=Path(tmp)), embedder=precomputed)
        service.deps.policy.warm_up()
        now = service.deps.clock.now()
        t0 = time.perf_counter()
        for proposal in judged:
            service.deps.policy.decide(proposal, caller, now, [])
        rates["policy_alone"] = count / (time.perf_counter() - t0)
        _forget_policy_caches()
        profile = cProfile.Profile()
        profile.runcall(lambda: [service.deps.policy.decide(p, caller, now, []) for p in proposals(count, "profile")])
        service.close()
    with tempfile.TemporaryDirectory() as tmp:
        conn = sqlite3.connect(Path(tmp) / "raw.db", isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("CREATE TABLE raw (id INTEGER PRIMARY KEY, doc TEXT)")
        docs = [p.model_dump_json() for p in items]
        t0 = time.perf_counter()
        for start in range(0, count, 100):
            conn.execute("BEGIN")
            conn.executemany("INSERT INTO raw (doc) VALUES (?)", [(d,) for d in docs[start : start + 100]])
            conn.execute("COMMIT")
        raw_rate = count / (time.perf_counter() - t0)
        conn.close()
    return {
        "model_texts_per_s": model_rate,
        "embedder_texts_per_s": embedder_rate,
        "raw_sqlite_per_s": raw_rate,
        **{f"{k}_per_s": v for k, v in rates.items()},
        "policy_profile": stage_shares(pstats.Stats(profile), POLICY_STAGES, ("__init__.py", "decide"), POLICY_REST),
        "path_profile": stages,
    }


def api_latency(requests: int, tenant_size: int = 2000) -> dict[str, Any]:
    """Writes and tenant-wide recalls over HTTP, one client, distinct queries, against a tenant
    of ``tenant_size`` episodes (seeded untimed); and, interleaved in the same run, the model's
    own time to encode one fresh query -- the bound the targets measure recall against."""
    import httpx

    from benchmarks.ingest_throughput import proposals
    from episodic.adapters.minilm.embedder import MiniLMEmbedder
    from episodic.application.settings import Settings
    from episodic.bootstrap.local import build_local_service
    from episodic.domain.model import Caller, Role
    from episodic.domain.model.messages import RecallRequest
    from episodic.entrypoints.rest import concurrent_handler
    from episodic.entrypoints.server.http import create_server
    from episodic.entrypoints.server.tokens import TokenBook, parse_tokens
    from functions import api

    token = "bench-token-000000001"
    with tempfile.TemporaryDirectory() as tmp:
        embedder = MiniLMEmbedder()
        service = build_local_service(Settings(data_dir=Path(tmp)), embedder=embedder)
        seed = proposals(tenant_size, "api")
        caller = Caller(tenant_id="acme", role=Role.AGENT, principal_id="bench")
        for start in range(0, tenant_size, 100):
            service.writes.remember_batch(caller, seed[start : start + 100])
        model = embedder._load()
        api.set_service(service)
        tokens = TokenBook(parse_tokens(f"{token}=acme:agent"), "bench")
        server = create_server("127.0.0.1", 0, tokens, concurrent_handler)  # what `episodic serve` runs
        threading.Thread(target=server.serve_forever, daemon=True).start()
        client = httpx.Client(base_url=f"http://127.0.0.1:{server.server_address[1]}",
                              headers={"Authorization": f"Bearer {token}"}, timeout=60)  # fmt: skip
        timings: dict[str, list[float]] = {
            "write": [], "recall": [], "model": [], "in_process": [], "recall_only": [], "in_process_only": []
        }  # fmt: skip
        for n in range(requests + 1):
            body = {"eventType": "tool_observed_event", "actorId": f"a{n % 5}", "occurredAt": "2026-11-28T10:00:00Z",
                    "summary": f"Nightly export {n} wrote {n * 7} rows to the warehouse", "sourceRefs": [f"job:{n}"],
                    "sourceTrust": "tool_result"}  # fmt: skip
            t0 = time.perf_counter()
            assert client.post("/v1/episodes", json=body).status_code == 201
            write = (time.perf_counter() - t0) * 1000
            t0 = time.perf_counter()
            assert client.post("/v1/recall", json={"query": f"which job raised alert number {n}?"}).status_code == 200
            recall = (time.perf_counter() - t0) * 1000
            t0 = time.perf_counter()
            model.encode([f"which job raised alert {n} on the gateway?"], threads=1)  # one query, as the worker runs it
            alone = (time.perf_counter() - t0) * 1000
            t0 = time.perf_counter()  # the same kind of recall without HTTP (a text of its own: no cached vector)
            service.reads.recall(
                caller, RecallRequest.model_validate({"query": f"which job raised the alert numbered {n}?"})
            )
            inside = (time.perf_counter() - t0) * 1000
            if n:  # the first round loads the model
                timings["write"].append(write)
                timings["recall"].append(recall)
                timings["model"].append(alone)
                timings["in_process"].append(inside)
        # Recalls back to back, as an agent's session opens (and as the held-out measurement runs: a
        # seeded tenant, then distinct queries): no episode written between, so the scope stays kept.
        # The same questions' shape as above, numbers not asked before (each text new to the model).
        for n in range(requests + 1, 2 * requests + 2):
            t0 = time.perf_counter()
            assert client.post("/v1/recall", json={"query": f"which job raised alert number {n}?"}).status_code == 200
            recall = (time.perf_counter() - t0) * 1000
            t0 = time.perf_counter()
            model.encode([f"which job raised alert {n} on the gateway?"], threads=1)
            alone = (time.perf_counter() - t0) * 1000
            t0 = time.perf_counter()
            service.reads.recall(
                caller, RecallRequest.model_validate({"query": f"which job raised the alert numbered {n}?"})
            )
            inside = (time.perf_counter() - t0) * 1000
            if n > requests + 1:
                timings["recall_only"].append(recall)
                timings["model"].append(alone)
                timings["in_process_only"].append(inside)
        server.shutdown()
        server.server_close()
        api.set_service(None)
        profile = _recall_profile(service, caller, requests)
        service.close()
    return {
        **{
            f"{kind}_{q}_ms": statistics.quantiles(values, n=100)[p - 1] if len(values) > 2 else max(values)
            for kind, values in timings.items()
            for q, p in (("p50", 50), ("p99", 99))
        },
        "recall_profile": profile,
    }


def _recall_profile(service: Any, caller: Any, requests: int) -> dict[str, float]:
    """The stages' shares of in-process recalls of the same kind, under cProfile."""
    from episodic.domain.model.messages import RecallRequest

    def recalls() -> None:
        for n in range(20_000, 20_000 + requests):
            service.reads.recall(caller, RecallRequest.model_validate({"query": f"which job raised alert number {n}?"}))

    profile = cProfile.Profile()
    profile.runcall(recalls)
    rest = "everything else (scope, query interpretation, the second round's own work)"
    return stage_shares(pstats.Stats(profile), RECALL_STAGES, ("reads.py", "recall"), rest)


def cold_imports() -> dict[str, float]:
    from benchmarks.targets import LAMBDA_SHIPPED, LAMBDA_SOURCE

    out = {}
    for module in HANDLERS:
        code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
        runs = [float(subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                                     check=True).stdout) for _ in range(3)]  # fmt: skip
        out[module] = min(runs) * 1000
    # The API's handler on Lambda's Python, the layer from source and as shipped; in a process of
    # its own, from the checkout, where `infra` imports. Skipped (and said) without a Python 3.13.
    lambda_run = subprocess.run([sys.executable, "-m", "benchmarks.lambda_cold_start", "--json"], cwd=ROOT,
                                capture_output=True, text=True, check=False)  # fmt: skip
    if lambda_run.returncode == 0:
        figures = json.loads(lambda_run.stdout.strip().splitlines()[-1])
        out[LAMBDA_SOURCE], out[LAMBDA_SHIPPED] = figures["source_ms"], figures["bytecode_ms"]
    else:
        why = (lambda_run.stderr.strip().splitlines() or ["no output"])[-1]
        print(f"Lambda's cold import not measured: {why}", file=sys.stderr)
    return out


def import_profile(module: str = "functions.api") -> dict[str, float]:
    """Where a cold import of ``module`` goes, by top-level package (``python -X importtime``:
    each module's own time, summed per package), in ms, largest first."""
    run = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"], cwd=ROOT,
                         capture_output=True, text=True, check=True)  # fmt: skip
    totals: dict[str, float] = {}
    for line in run.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) != 3 or not parts[0].strip().isdigit():
            continue  # the header line
        package = parts[2].strip().split(".")[0]
        totals[package] = totals.get(package, 0.0) + int(parts[0]) / 1000
    return dict(sorted(totals.items(), key=lambda kv: -kv[1]))


def package_sizes() -> dict[str, int]:
    """Zipped size of the function code and of the core layer (its source; `make layer` adds deps)."""

    def zipped(folder: Path, prefix: str) -> int:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in folder.rglob("*"):
                if path.is_file() and "__pycache__" not in path.parts:
                    archive.write(path, f"{prefix}/{path.relative_to(folder)}")
        return len(buffer.getvalue())

    sizes = {"functions (all handlers)": zipped(ROOT / "functions", "functions"),
             "layer: episodic source": zipped(ROOT / "layers" / "episodic", "python/episodic")}  # fmt: skip
    built = ROOT / "build" / "layer"
    if built.is_dir():
        sizes["layer: built with dependencies"] = zipped(built, "")
    return sizes


def _cpu_lines(load: dict[str, Any], load2: dict[str, Any], model_ceiling: float) -> list[str]:
    """What bounds the mixed load: the server's CPU time per request (``/proc``, the server's
    process tree, over the load's minutes), beside the model's own ceiling."""
    model = (
        f"The model alone would allow {model_ceiling:.0f} requests a second (gathering concurrent one-line "
        "queries into shared passes on both cores, the embedding section below): it is not the bound."
    )
    if "cpu_ceiling_per_s" not in load2:
        return [model]
    rows = [
        f"| {name} | {run['server_cpu_ms_per_request']:.1f} ms | {run['cpu_ceiling_per_s']:.0f} | "
        f"{run['per_second'] / run['cpu_ceiling_per_s']:.2f} | {run['server_cores_busy']:.2f} "
        f"| {run['generator_cores_busy']:.2f} |"
        for name, run in (("`--workers 1` (profiled)", load), (DEFAULTS, load2))
        if "cpu_ceiling_per_s" in run
    ]
    return [
        "The CPU bounds it: the server's CPU time per request (its processes' user and system time over",
        "the load, from `/proc`) gives the most requests a second the machine's cores could serve at that",
        "cost. (The one-process run is sampled by py-spy, whose own CPU competes for the same cores.)",
        "",
        "| server | CPU a request | ceiling, req/s | reached | server cores busy | load generator cores |",
        "|---|---:|---:|---:|---:|---:|",
        *rows,
        "",
        model,
    ]


DEFAULTS = "`episodic serve`'s defaults (a worker per core)"

BASELINE = ROOT / "benchmarks" / "baselines" / "conversations-74b60d6.json"
"""The conversation benchmark as measured on commit 74b60d6 (policy 2026-12-01.1, the ranking
before the conversation recall work), by this same harness: the "before" row of the section."""


def conversation_section(now: dict[str, Any]) -> list[str]:
    """Evidence recall and in-process write/recall latency on the conversation benchmark's test
    split, now and as recorded before the recall work (``BASELINE``)."""
    rows = [("now", now)]
    if BASELINE.is_file():
        rows.insert(0, ("before: 74b60d6, recorded", json.loads(BASELINE.read_text())))
    lines = [
        f"## Conversation memory ({now['conversations']} conversation(s) of the test split, in-process, real model)",
        "",
        "`benchmarks/conversations.py --split test`: every turn written through the batch route, one recall",
        "per question (limit 10, query embedding included). A second round (`widen`) embeds the names it adds",
        "and searches again: that is the added latency, for the recall it buys (docs/recall.md).",
        "",
        "| run | questions | recall@10 | multi-hop | write per turn | recall p50 | recall p99 |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for label, r in rows:
        lat = r["latency"]
        lines.append(
            f"| {label} | {lat['questions']} | {r['all']['recall']:.3f} | {r['multi_hop']['recall']:.3f} "
            f"| {lat['write_ms_per_turn']:.1f} ms | {lat['recall_p50_ms']:.1f} ms | {lat['recall_p99_ms']:.1f} ms |"
        )
    return [*lines, ""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="episodic bench")
    parser.add_argument("--full", action="store_true", help="the 1M-episode corpus too (long)")
    parser.add_argument("--writes", type=int, default=None)
    parser.add_argument("--sizes", default=None, help="tenant sizes for recall, e.g. 10000,100000")
    parser.add_argument("--api-requests", type=int, default=50)
    parser.add_argument("--api-tenant", type=int, default=2000, help="episodes in the API latency tenant")
    parser.add_argument("--latency-questions", type=int, default=200, help="recall-vs-model questions a corpus")
    parser.add_argument("--load-clients", type=int, default=16)
    parser.add_argument("--load-seconds", type=float, default=30)
    parser.add_argument("--load-seed", type=int, default=1000, help="episodes per tenant before the mixed load")
    parser.add_argument(
        "--conversations", default=None, help="one conversation of the test split (e.g. cv07) instead of all six"
    )
    parser.add_argument("--sets", action="store_true", help="every labelled set with each local model (on with --full)")
    parser.add_argument("--pathological-shapes", type=int, default=20, help="shapes drawn from the patterns' words")
    parser.add_argument("--health-writes", type=int, default=5, help="costliest writes /v1/health is timed during")
    parser.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"))
    args = parser.parse_args(argv)
    writes = args.writes or (5000 if args.full else 500)
    sizes = args.sizes or ("10000,100000,1000000" if args.full else "10000")

    from episodic.entrypoints.cli.output import progress

    info = machine()
    with progress("benchmarks", total=9) as bar:
        bar.describe(f"write throughput ({writes} episodes)")
        w = write_throughput(writes)
        bar.advance()
        bar.describe("the write policy on pathological input, and /v1/health during the costliest write")
        from benchmarks import pathological, write_profile

        worst_inputs = pathological.measure(sampled=args.pathological_shapes)
        health = pathological.health_during_worst_write(writes=args.health_writes)
        bar.advance()
        bar.describe(f"recall latency (tenants {sizes})")
        with tempfile.TemporaryDirectory() as tmp:
            scale_json = Path(tmp) / "scale.json"
            recall = subprocess.run(
                [sys.executable, str(ROOT / "benchmarks" / "recall_at_scale.py"), "--sizes", sizes,
                 "--queries", "30", "--json", str(scale_json)],
                capture_output=True, text=True, check=True, cwd=ROOT,
            ).stdout.strip()  # fmt: skip
            scale = json.loads(scale_json.read_text())
        bar.advance()
        bar.describe(f"API latency ({args.api_requests} writes + recalls)")
        latency = api_latency(args.api_requests, args.api_tenant)
        bar.advance()
        bar.describe(f"recall against the model, query by query ({args.latency_questions} questions a corpus)")
        from benchmarks.recall_latency import run as recall_latency
        from benchmarks.recall_latency import section as latency_section

        by_corpus = recall_latency(args.latency_questions)
        bar.describe(f"mixed load ({args.load_clients} clients, {args.load_seconds:.0f} s)")
        from benchmarks.mixed_load import run as mixed_load

        load = mixed_load(args.load_clients, args.load_seconds, seed=args.load_seed, profile=True, workers=1)
        bar.describe(f"mixed load, episodic serve with its defaults ({args.load_clients} clients)")
        load2 = mixed_load(args.load_clients, args.load_seconds, seed=args.load_seed, profile=False)
        bar.advance()
        bar.describe("conversation memory (test split)")
        from benchmarks.conversations import measure

        conversations = measure("test", only=args.conversations, progress=lambda line: None)
        labelled = None
        if args.full or args.sets:
            from benchmarks.labelled_sets import measure_all

            bar.describe("every labelled set, with each local embedding model")
            labelled = measure_all()
        bar.advance()
        bar.describe("query embedding under concurrency (1, 4, 8 clients), ONNX Runtime against PyTorch")
        from benchmarks.embedding_concurrency import measure as embedding_concurrency
        from benchmarks.embedding_concurrency import section as embedding_section

        embedding = embedding_concurrency((1, 4, 8))
        from benchmarks.embedding_runtime import measure as runtime_measure
        from benchmarks.embedding_runtime import section as runtime_section

        runtime = runtime_measure()
        bar.advance()
        bar.describe("peer: Chroma on the same data")
        from benchmarks.peer_chroma import compare as chroma_peer
        from benchmarks.peer_chroma import section as peer_section

        peer = chroma_peer()
        bar.advance()
        bar.describe("cold imports and package sizes")
        imports, sizes_bytes, api_imports = cold_imports(), package_sizes(), import_profile()
        bar.advance()
    from benchmarks.labelled_sets import section as labelled_section
    from benchmarks.targets import section as targets_section

    ceiling = max(r["after"]["per_second"] for r in embedding)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    lines = [
        "# Benchmarks",
        "",
        "Measured by `episodic bench` (`make bench`; `--full` for the 1M corpus). Figures, not assertions;",
        "the machine is shared, so compare ratios within one run rather than absolute times across runs.",
        "",
        "Machine: " + ", ".join(f"{k} {v}" for k, v in info.items()),
        "",
        *targets_section(w, by_corpus, load2, scale, imports),
        "## Write throughput (local backend, batches of 100)",
        "",
        "| path | per second | vs model batch | vs raw SQLite |",
        "|---|---:|---:|---:|",
        "| the model run directly (one ONNX Runtime session on every core; the service's texts, batches of 100; "
        f"best of three) | {w['model_texts_per_s']:.0f} | 1.00 | |",
        "| the service's embedder alone (each batch in two one-core passes side by side; best of three) "
        f"| {w['embedder_texts_per_s']:.0f} | {w['embedder_texts_per_s'] / w['model_texts_per_s']:.2f} | |",
        f"| raw SQLite inserts (same docs, WAL, FULL sync) | {w['raw_sqlite_per_s']:.0f} | | 1.00 |",
        f"| policy + embed + store (best of three, alternating with the model's) | {w['with_embedding_per_s']:.0f} "
        f"| {w['with_embedding_per_s'] / w['model_texts_per_s']:.2f} "
        f"| {w['with_embedding_per_s'] / w['raw_sqlite_per_s']:.3f} |",
        f"| policy + store (vectors precomputed) | {w['without_embedding_per_s']:.0f} | "
        f"| {w['without_embedding_per_s'] / w['raw_sqlite_per_s']:.3f} |",
        f"| the write policy alone (`decide`, texts it has not seen) | {w['policy_alone_per_s']:.0f} | | |",
        "",
        "With embedding, the service's embedder and the rest of the path in series bound the path at "
        f"{w['without_embedding_per_s'] / (w['without_embedding_per_s'] + w['embedder_texts_per_s']):.2f} "
        "of the embedder alone (the path's time per item without the model beside the embedder's per text); "
        f"it reaches {w['with_embedding_per_s'] / w['embedder_texts_per_s']:.2f} of it, and "
        f"{w['with_embedding_per_s'] / w['model_texts_per_s']:.2f} of the model run directly. "
        "Without embedding, the policy takes "
        f"{w['without_embedding_per_s'] / w['policy_alone_per_s']:.0%} of the path's time; the rest is building "
        "the episode, its audit record and the store's transaction. "
        "Where the policy's time goes (cProfile of `decide` on texts it has not seen):",
        "",
        *[f"- {stage}: {share:.0%}" for stage, share in w["policy_profile"].items()],
        "",
        *write_profile.section(w["path_profile"]),
        *pathological.section(worst_inputs, health),
        "## Scoped recall latency (vector path, query embedding excluded)",
        "",
        "```",
        recall,
        "```",
        "",
        f"## End-to-end API latency (local HTTP server, real model, one client, tenant of {args.api_tenant:,})",
        "",
        "Recall is tenant-wide with a distinct query each time; the model's own time to encode one",
        "fresh query is measured in the same run, between the requests (the target: recall p50 at most twice that).",
        "",
        "| request | p50 | p99 | p50 vs model alone |",
        "|---|---:|---:|---:|",
        f"| model alone, one query | {latency['model_p50_ms']:.1f} ms | {latency['model_p99_ms']:.1f} ms | 1.00 |",
        f"| POST /v1/episodes | {latency['write_p50_ms']:.1f} ms | {latency['write_p99_ms']:.1f} ms | |",
        *[
            f"| {label} | {latency[f'{key}_p50_ms']:.1f} ms | {latency[f'{key}_p99_ms']:.1f} ms "
            f"| {latency[f'{key}_p50_ms'] / latency['model_p50_ms']:.2f} |"
            for label, key in (
                ("POST /v1/recall, recalls back to back", "recall_only"),
                ("the same kind of recall in process, no HTTP, back to back", "in_process_only"),
                ("POST /v1/recall, each right after a write", "recall"),
                ("the same kind of recall in process, no HTTP, after a write", "in_process"),
            )
        ],
        "",
        "Back to back is how an agent's session opens and how the held-out measurement runs (a seeded tenant, then "
        "distinct queries). After an episode is written, the tenant's generation has moved and the next "
        "recall admits its scope again (SQLite's page cache is emptied either way: every recall's own "
        "audit write does that, WAL); its p50 differs by "
        f"{latency['recall_p50_ms'] - latency['recall_only_p50_ms']:+.1f} ms from back to back.",
        "",
        f"The model is the bound (1.00). Over it, back to back, the HTTP round trip, routing, validation and JSON "
        f"add {latency['recall_only_p50_ms'] - latency['in_process_only_p50_ms']:.1f} ms, and the service's own "
        f"work {latency['in_process_only_p50_ms'] - latency['model_p50_ms']:.1f} ms. "
        "Where an in-process recall's time goes (cProfile, whose overhead inflates the Python-heavy stages "
        "against the model's native code). cProfile follows the recall's own thread: when a core is free, as "
        "here, the model runs there and the searches by words, the episodes they find and the turns read ahead "
        "run on a helper beside it, so they show here only when the model was busy:",
        "",
        *[f"- {stage}: {share:.0%}" for stage, share in latency["recall_profile"].items()],
        "",
        *latency_section(by_corpus),
        f"## Mixed load over HTTP ({load['clients']} clients, 30% writes / 70% recalls, two tenants of 1,000)",
        "",
        "`episodic serve` as its own process, real model; `benchmarks/mixed_load.py`.",
        "",
        "| server | requests/s | p50 | p99 | write p50 | recall p50 | errors | acknowledged writes lost |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
        *[
            f"| {name} | {run['per_second']} | {run['p50_ms']} ms | {run['p99_ms']} ms | {run['write_p50_ms']} ms "
            f"| {run['recall_p50_ms']} ms | {run['errors']} | {run['lost_writes']} of {run['acknowledged_writes']} |"
            for name, run in (("`--workers 1` (profiled)", load), (DEFAULTS, load2))
        ],
        "",
        *_cpu_lines(load, load2, ceiling),
        "",
        "Where the one-process server's time went (py-spy samples of the server process, each given to "
        "the innermost stage its stack is in; a thread whose innermost frame is blocked on a lock, a condition, "
        "a queue or its socket is waiting, not working. A thread waiting to take the interpreter's lock back "
        "after a SQLite statement, which releases it, is sampled in that statement: with many requests at once, "
        "most samples of the scope generation's one-row read were that wait (`py-spy --native` put them in "
        "`pthread_cond_timedwait`)" + (")" if load["stages"] else "; py-spy not installed, so no breakdown)"),
        "",
        *[f"- {name}: {share:.0%}" for name, share in load["stages"]],
        "",
        *conversation_section(conversations),
        *(labelled_section(labelled) if labelled else []),
        *runtime_section(runtime),
        *embedding_section(embedding),
        *peer_section(peer),
        "## Lambda handlers: cold import (best of 3, fresh interpreter) and package size (zipped)",
        "",
        "| module | cold import |",
        "|---|---:|",
        *[f"| {m if '`' in m else f'`{m}`'} | {ms:.0f} ms |" for m, ms in imports.items()],
        "",
        "Where `functions.api`'s import goes (`python -X importtime`, each module's own time summed by",
        "top-level package; one run, so the total differs a little from the best of 3 above):",
        "",
        *[f"- `{package}`: {ms:.0f} ms" for package, ms in list(api_imports.items())[:8]],
        f"- everything else: {sum(list(api_imports.values())[8:]):.0f} ms",
        "",
        "| package | zipped |",
        "|---|---:|",
        *[f"| {name} | {size / 1024:.0f} KiB |" for name, size in sizes_bytes.items()],
        "",
        f"Peak memory of the benchmark process: {peak_mib:.0f} MiB.",
        "",
    ]
    report = "\n".join(lines)
    print(report)
    Path(args.out).write_text(report)
    print(json.dumps({"written": args.out}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
