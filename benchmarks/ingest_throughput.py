"""Write throughput through policy, embedding and SQLite, against the embedder alone.

In one process, with the real all-MiniLM-L6-v2 model:
* the model's own batch throughput on the texts the service embeds, run directly (one ONNX Runtime
  session on every core) and through the service's embedder (which splits a batch into two one-core
  passes side by side);
* ``remember_batch`` in batches of 100 (policy + one embedding batch + one transaction per item);
* ``remember`` one at a time (the per-item path, for contrast).
The ratios say how close ingest gets to the model run directly (``episodic bench`` measures the same,
best of three runs alternating).

    .venv/bin/python benchmarks/ingest_throughput.py --episodes 1000
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from benchmarks.run import _Precomputed, embedding_rates
from episodic.adapters.minilm.embedder import MiniLMEmbedder
from episodic.application.settings import Settings
from episodic.bootstrap.local import build_local_service
from episodic.domain.model import Caller, EpisodeProposal, Role

TOPICS = ["invoice", "deploy", "refund", "login", "latency", "export", "webhook", "quota", "schema", "backup"]


def proposals(count: int, salt: str) -> list[EpisodeProposal]:
    return [
        EpisodeProposal.model_validate(
            {
                "eventType": "tool_observed_event",
                "actorId": f"actor-{n % 40}",
                "occurredAt": "2026-11-28T10:00:00Z",
                "summary": f"The {TOPICS[n % 10]} job {salt}-{n} finished in {n % 97} seconds on node {n % 13}",
                "sourceRefs": [f"job:{salt}-{n}"],
                "sourceTrust": "tool_result",
            }
        )
        for n in range(count)
    ]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=1000)
    args = parser.parse_args()
    embedder = MiniLMEmbedder(cache_size=0)
    embedder.embed(["warm up the model"])
    caller = Caller(tenant_id="acme", role=Role.AGENT, principal_id="bench")
    # The texts the service embeds (who and when, then the summary), recorded in an untimed dry run.
    recorder, dry_run = _Precomputed(embedder), proposals(args.episodes, "model")
    with (
        tempfile.TemporaryDirectory() as tmp,
        build_local_service(Settings(data_dir=Path(tmp)), embedder=recorder) as dry,
    ):
        for start in range(0, args.episodes, 100):
            dry.writes.remember_batch(caller, dry_run[start : start + 100])
    texts = recorder.texts()
    with tempfile.TemporaryDirectory() as tmp:
        service = build_local_service(Settings(data_dir=Path(tmp)), embedder=embedder)
        service.deps.policy.warm_up()  # classifiers and detectors outside the timings
        model_rate, embedder_rate = embedding_rates(embedder, texts)

        batch = proposals(args.episodes, "batch")
        t0 = time.perf_counter()
        for start in range(0, len(batch), 100):
            service.writes.remember_batch(caller, batch[start : start + 100])
        batch_rate = args.episodes / (time.perf_counter() - t0)

        single = proposals(max(args.episodes // 5, 1), "single")
        t0 = time.perf_counter()
        for p in single:
            service.writes.remember(caller, p)
        single_rate = len(single) / (time.perf_counter() - t0)
        service.close()
    print(f"episodes: {args.episodes}")
    print(f"  model run directly          {model_rate:8.1f} texts/s")
    print(f"  the service's embedder      {embedder_rate:8.1f} texts/s  = {embedder_rate / model_rate:.2f}")
    share = batch_rate / model_rate
    print(f"  remember_batch (100/batch)  {batch_rate:8.1f} episodes/s  = {share:.2f} of the model run directly")
    print(f"  remember, one at a time     {single_rate:8.1f} episodes/s  = {single_rate / model_rate:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
