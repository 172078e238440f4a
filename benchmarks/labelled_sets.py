"""Evidence recall on every labelled conversation set, with each local embedding model.

The sets (``tests/evals``): the English conversations (dev and test, each also as one long
conversation), the Spanish and German ones (dev and test), and two test-only domain sets unlike
the chats (support tickets with tool results, an incident log with handoffs). Each is written
through the batch route and asked one recall per question, as ``benchmarks/conversations.py``
does. Dev splits were tuned on; test splits and the domain sets never were. The write policy's
figures (turns denied, gold turns denied, ``not_memorable`` precision and recall) do not depend on
the model.

    .venv/bin/python benchmarks/labelled_sets.py [--embedders minilm,e5] [--out sets.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.conversations import measure

EVALS = Path(__file__).resolve().parents[1] / "tests" / "evals"
SETS = (
    "conversations/dev", "conversations/test", "conversations_es/dev", "conversations_es/test",
    "conversations_de/dev", "conversations_de/test", "domains/support", "domains/incidents",
)  # fmt: skip
MERGED = ("conversations/dev", "conversations/test")
"""The sets also measured as one long conversation (``benchmarks/conversations.py --merged``), listed
as ``<set>, merged``: the length at which the held-out benchmark is read."""
KINDS = ("all", "single_hop", "multi_hop", "temporal", "open_domain")


def measure_all(embedders: tuple[str, ...] = ("minilm", "e5"), progress: Any = None) -> dict[str, Any]:
    """``{"rows": [...]}``: one row per set and model (recall@10 by kind, write figures, recall p50)."""
    rows = []
    for embedder in embedders:
        for name, merge in [*((name, False) for name in SETS), *((name, True) for name in MERGED)]:
            label = f"{name}, merged" if merge else name
            if progress:
                progress(f"{label} with {embedder}")
            r = measure("test", folder=EVALS / name, embedder=embedder, progress=lambda line: None, merge=merge)
            recall = {k: r[k]["recall"] for k in KINDS}
            rows.append({"set": label, "embedder": embedder, **recall, "sessions": r["all"]["sessionRecall"],
                         "questions": r["all"]["n"], "writes": r["writes"],
                         "recall_p50_ms": r["latency"]["recall_p50_ms"]})  # fmt: skip
    return {"rows": rows}


def section(result: dict[str, Any]) -> list[str]:
    lines = [
        "## Every labelled set, with each local embedding model",
        "",
        "`benchmarks/labelled_sets.py`: each set written through the batch route, one recall per question",
        "(evidence recall@10, in-process; sessions: the share of gold turns whose session is among the",
        "sessions of the ten items' turns). Dev splits were tuned on; test splits and the domain sets never were.",
        "",
        "| set | model | questions | recall@10 | sessions | single-hop | multi-hop | temporal | open-domain "
        "| recall p50 |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in result["rows"]:
        lines.append(
            f"| {row['set']} | {row['embedder']} | {row['questions']} | {row['all']:.3f} | {row['sessions']:.3f} "
            f"| {row['single_hop']:.3f} "
            f"| {row['multi_hop']:.3f} | {row['temporal']:.3f} | {row['open_domain']:.3f} "
            f"| {row['recall_p50_ms']:.1f} ms |"
        )
    lines += ["", "The write policy on each set (the same for either model):", "",
              "| set | turns | denied | gold turns denied | `not_memorable` precision | recall |",
              "|---|---:|---:|---:|---:|---:|"]  # fmt: skip
    for row in result["rows"]:
        if row["embedder"] == result["rows"][0]["embedder"]:
            w = row["writes"]
            lines.append(f"| {row['set']} | {w['turns']} | {w['deniedShare']:.1%} | {w['goldDenied']:.1%} "
                         f"| {w['notMemorablePrecision']:.3f} | {w['notMemorableRecall']:.3f} |")  # fmt: skip
    return [*lines, ""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedders", default="minilm,e5")
    parser.add_argument("--out", type=Path, help="the rows as JSON")
    args = parser.parse_args(argv)
    result = measure_all(tuple(args.embedders.split(",")), progress=lambda line: print(line, file=sys.stderr))
    print("\n".join(section(result)))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
