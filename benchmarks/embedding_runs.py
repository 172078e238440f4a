"""How the ONNX embedder groups texts into forward passes, measured: the cost of a pass by texts and
width (the fit behind ``RUN_COST_IN_SLOTS``), and the grouping at the least estimated cost against
the earlier rule -- sorted texts cut wherever a pass would hold more than 1.15 token slots per real
token -- on the groups recall and writes hand the model: a widened recall's two names, a few
gathered questions, a batch of ticket episodes. Both groupings run interleaved in one process on
the same texts. Figures, not assertions.

Run: ``python -m benchmarks.embedding_runs``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from episodic.adapters.minilm import runtime

RATIO_ALLOWANCE = 1.15


def ratio_runs(lengths: Sequence[int], batch_size: int, threads: int = 1) -> list[list[int]]:
    """The baseline: sorted texts, a new pass wherever the next (longer) text would make the pass
    hold more than :data:`RATIO_ALLOWANCE` slots per real token."""
    runs: list[list[int]] = []
    current: list[int] = []
    tokens = 0
    for i in sorted(range(len(lengths)), key=lambda i: lengths[i]):
        slots = (len(current) + 1) * lengths[i]
        if current and (len(current) == batch_size or slots > RATIO_ALLOWANCE * (tokens + lengths[i])):
            runs.append(current)
            current, tokens = [], 0
        current.append(i)
        tokens += lengths[i]
    if current:
        runs.append(current)
    return runs


def pass_costs(model: Any, threads: int, repeats: int) -> dict[tuple[int, int], float]:
    """Median ms of one pass of ``texts`` texts ``width`` tokens wide, on ``threads`` threads."""
    session = model._session(threads)
    rng = np.random.default_rng(0)
    costs: dict[tuple[int, int], list[float]] = {}
    shapes = [(texts, width) for texts in (1, 2, 4, 8, 16) for width in (4, 8, 16, 32, 64, 128)]
    for _ in range(repeats):
        for texts, width in shapes:
            ids = rng.integers(1000, 20000, (texts, width)).astype(np.int64)
            feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
            session.run(None, feed)
            for _ in range(5):
                began = time.perf_counter()
                session.run(None, feed)
                costs.setdefault((texts, width), []).append((time.perf_counter() - began) * 1000)
    return {shape: statistics.median(times) for shape, times in costs.items()}


def fitted(costs: dict[tuple[int, int], float]) -> tuple[float, float]:
    """``fixed`` and ``per_slot`` ms of ``fixed + per_slot * texts * width``, least squares on the
    relative error (so the small passes, where the fixed part shows, count as much as the large)."""
    slots = np.array([texts * width for texts, width in costs], dtype=float)
    ms = np.array(list(costs.values()))
    design = np.column_stack([np.ones_like(slots), slots]) / ms[:, None]
    (fixed, per_slot), *_ = np.linalg.lstsq(design, np.ones_like(ms), rcond=None)
    return float(fixed), float(per_slot)


def groups(seed: int = 5) -> dict[str, tuple[list[list[str]], int]]:
    """The groups of texts to time, each with the threads its passes run on (as the embedder picks)."""
    from benchmarks.tickets import _names, questions, tickets

    rng = random.Random(seed)
    customers, people = _names(True)
    pairs = [[rng.choice(customers), rng.choice(people)] for _ in range(40)]
    asked = questions(120, many_names=True)
    gathered = [asked[i : i + 3] for i in range(0, 120, 3)]
    summaries = [body["summary"] for body in tickets(640, many_names=True)]
    batches = [summaries[i : i + 64] for i in range(0, 640, 64)]
    return {"two names": (pairs, 1), "three gathered questions": (gathered, 1), "64 tickets": (batches, 2)}


def compare(model: Any, rounds: int) -> dict[str, dict[str, float]]:
    """Per group: total ms with each grouping, interleaved pass by pass."""
    least_cost = runtime.padded_runs
    figures: dict[str, dict[str, float]] = {}
    for name, (texts_of, threads) in groups().items():
        totals = {"ratio": 0.0, "least cost": 0.0}
        for _ in range(rounds):
            for texts in texts_of:
                for label, grouping in (("ratio", ratio_runs), ("least cost", least_cost)):
                    runtime.padded_runs = grouping
                    try:
                        began = time.perf_counter()
                        model.encode(texts, threads=threads)
                        totals[label] += (time.perf_counter() - began) * 1000
                    finally:
                        runtime.padded_runs = least_cost
        calls = rounds * len(texts_of)
        figures[name] = {label: total / calls for label, total in totals.items()}
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    model = runtime.load_runtime("onnx")
    for threads in (1, 2):
        fixed, per_slot = fitted(pass_costs(model, threads, repeats=3))
        print(f"{threads} thread(s): a pass ~{fixed:.2f} ms + {per_slot:.3f} ms a slot ({fixed / per_slot:.0f} slots)")
    for name, figures in compare(model, args.rounds).items():
        ratio, least = figures["ratio"], figures["least cost"]
        print(f"{name}: ratio rule {ratio:.2f} ms, least cost {least:.2f} ms ({least / ratio:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
