"""Query embeddings under concurrency: N clients each embed distinct one-line
queries, through the embedder's worker (gathered into shared forward passes) and, in the same
run as the baseline, straight into the model from every client thread (what the embedder did
before the worker). Figures, not assertions."""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from episodic.adapters.minilm.embedder import MiniLMEmbedder


def _run(embed: Callable[[Sequence[str]], Any], clients: int, per_client: int, prefix: str) -> dict[str, float]:
    latencies: list[float] = []
    lock = threading.Lock()

    def client(index: int) -> None:
        for n in range(per_client):
            query = f"did {prefix} {index} mention the invoice or the flight at {n} o'clock?"
            start = time.perf_counter()
            embed([query])
            with lock:
                latencies.append((time.perf_counter() - start) * 1000)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    return {"per_second": clients * per_client / elapsed, "p50_ms": statistics.median(latencies)}


def measure(clients: Sequence[int] = (1, 8), per_client: int = 15) -> list[dict[str, Any]]:
    worker = MiniLMEmbedder(cache_size=0)
    model = worker._load()

    def direct(texts: Sequence[str]) -> Any:
        return model.encode(list(texts), threads=1)  # as the workers run a small pass

    direct(["warm up"])
    worker.embed(["warm up the worker"])
    # Every "after" first: threads that called the model directly leave OpenMP teams spinning
    # for a while after they finish, which would slow whatever runs next.
    after = {count: _run(worker.embed, count, per_client, f"a{count}") for count in clients}
    before = {count: _run(direct, count, per_client, f"b{count}") for count in clients}
    return [{"clients": count, "before": before[count], "after": after[count]} for count in clients]


def section(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "## Query embedding under concurrency (`benchmarks/embedding_concurrency.py`)",
        "",
        "Distinct one-line queries; *before*: every client thread calls the model itself; *after*: the",
        "embedder's workers gather what waits into shared forward passes (one core for up to eight texts;",
        "one worker per core).",
        "",
        "| clients | before: queries/s | before: p50 | after: queries/s | after: p50 | throughput ratio |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        b, a = row["before"], row["after"]
        lines.append(
            f"| {row['clients']} | {b['per_second']:.0f} | {b['p50_ms']:.1f} ms | {a['per_second']:.0f} "
            f"| {a['p50_ms']:.1f} ms | {a['per_second'] / b['per_second']:.2f} |"
        )
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clients", default="1,8")
    parser.add_argument("--per-client", type=int, default=15)
    args = parser.parse_args()
    rows = measure([int(c) for c in args.clients.split(",")], args.per_client)
    print("\n".join(section(rows)))
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
