"""The same all-MiniLM-L6-v2 on PyTorch and on ONNX Runtime, side by side in one process.

On the conversation set's turns and questions (dev and test splits): how far the vectors are
apart, whether every question's top-10 turns by cosine are the same, and each runtime's speed
-- one distinct query at a time (one core, as the embedder's worker runs a pass of one or two)
and the turns in batches of 64 (all cores), alternating runs so the shared machine's drift
falls on both. Figures, not assertions.

    .venv/bin/python benchmarks/embedding_runtime.py [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from episodic.adapters.minilm.runtime import DEFAULT_CACHE, OnnxMiniLM, TorchMiniLM, onnx_model
from episodic.evals.conversations import load_conversations

SUITE = Path(__file__).resolve().parents[1] / "tests" / "evals" / "conversations"


def _corpus() -> list[tuple[list[str], list[str]]]:
    """Per conversation: its turns' texts and its questions."""
    conversations = [c for split in ("dev", "test") for c in load_conversations(SUITE / split)]
    return [
        ([t["text"] for s in c["sessions"] for t in s["turns"]], [q["question"] for q in c["questions"]])
        for c in conversations
    ]


def _agreement(corpus: list[tuple[list[str], list[str]]], runtimes: dict[str, Any]) -> dict[str, float]:
    overlaps, identical, worst = [], 0, 0.0
    for turns, questions in corpus:
        tops, turn_vectors = {}, {}
        for name, runtime in runtimes.items():
            turn_vectors[name] = runtime.encode(turns, threads=2)
            scores = runtime.encode(questions, threads=2) @ turn_vectors[name].T
            tops[name] = np.argsort(-scores, axis=1, kind="stable")[:, :10]
        worst = max(worst, float(np.abs(turn_vectors["onnx"] - turn_vectors["torch"]).max()))
        for mine, theirs in zip(tops["onnx"], tops["torch"], strict=True):
            overlaps.append(len(set(mine) & set(theirs)) / 10)
            identical += list(mine) == list(theirs)
    return {"questions": len(overlaps), "top10_overlap": statistics.mean(overlaps),
            "same_order": identical / len(overlaps), "max_abs_diff": worst}  # fmt: skip


def _speed(corpus: list[tuple[list[str], list[str]]], runtimes: dict[str, Any], rounds: int = 3) -> dict[str, Any]:
    questions = [q for _, qs in corpus for q in qs][:200]
    turns = [t for ts, _ in corpus for t in ts][:1024]
    single: dict[str, list[float]] = {name: [] for name in runtimes}
    batch: dict[str, float] = dict.fromkeys(runtimes, 0.0)
    for _ in range(rounds):
        for name, runtime in runtimes.items():
            runtime.encode(["warm up"], threads=1)
            for question in questions:
                began = time.perf_counter()
                runtime.encode([question], threads=1)
                single[name].append((time.perf_counter() - began) * 1000)
            began = time.perf_counter()
            runtime.encode(turns, threads=2, batch_size=64)
            batch[name] = max(batch[name], len(turns) / (time.perf_counter() - began))
    return {name: {"single_p50_ms": statistics.median(single[name]), "batch_per_s": batch[name]} for name in runtimes}


def measure() -> dict[str, Any]:
    corpus = _corpus()
    began = time.perf_counter()
    path = onnx_model(DEFAULT_CACHE)
    runtimes = {"torch": TorchMiniLM(), "onnx": OnnxMiniLM(path)}
    report = {"export_or_cache_s": time.perf_counter() - began, "agreement": _agreement(corpus, runtimes)}
    report["speed"] = _speed(corpus, runtimes)
    return report


def section(report: dict[str, Any]) -> list[str]:
    """Markdown lines for BENCHMARKS.md."""
    a, s = report["agreement"], report["speed"]
    return [
        "## The model's runtime: ONNX Runtime against PyTorch (`benchmarks/embedding_runtime.py`)",
        "",
        "The same all-MiniLM-L6-v2 weights, side by side in one process, alternating: the conversation set's",
        f"{a['questions']} questions against their conversations' turns (dev and test splits).",
        "",
        "| runtime | one query p50 (one core) | batches of 64 (all cores) | top-10 turns as PyTorch's |",
        "|---|---:|---:|---:|",
        f"| PyTorch (sentence-transformers) | {s['torch']['single_p50_ms']:.2f} ms | {s['torch']['batch_per_s']:.0f}/s "
        "| (reference) |",
        f"| ONNX Runtime (the default) | {s['onnx']['single_p50_ms']:.2f} ms | {s['onnx']['batch_per_s']:.0f}/s "
        f"| overlap {a['top10_overlap']:.4f}, same order {a['same_order']:.4f} |",
        "",
        f"Largest difference between the two runtimes' vectors: {a['max_abs_diff']:.1e}. ONNX Runtime encodes one",
        f"query {s['torch']['single_p50_ms'] / s['onnx']['single_p50_ms']:.2f}x faster and batches "
        f"{s['onnx']['batch_per_s'] / s['torch']['batch_per_s']:.2f}x; every other figure in this file is",
        "measured on it.",
        "",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    report = measure()
    if parser.parse_args().json:
        print(json.dumps(report, indent=2))
        return
    a, s = report["agreement"], report["speed"]
    print(f"{a['questions']} questions: top-10 overlap {a['top10_overlap']:.4f}, same order {a['same_order']:.4f}, "
          f"largest vector difference {a['max_abs_diff']:.1e}")  # fmt: skip
    for name, row in s.items():
        print(f"{name:>5}: one query p50 {row['single_p50_ms']:.2f} ms, batches of 64 {row['batch_per_s']:.0f}/s")
    print(f"onnx vs torch: one query {s['torch']['single_p50_ms'] / s['onnx']['single_p50_ms']:.2f}x faster, "
          f"batches {s['onnx']['batch_per_s'] / s['torch']['batch_per_s']:.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
