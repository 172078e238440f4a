"""The conversation benchmark on the local backend (real SQLite, real MiniLM): every turn of
every conversation in a split written as an agent would, then one recall per question.

``--merged`` writes a split as one long conversation instead
(:func:`~episodic.evals.conversations.merged`): every session of every conversation in one
tenant, in date order, each conversation's speakers renamed to the same two or three names, so
that who speaks no longer tells the conversations apart and only what they say does -- a haystack
of ~1,000 turns, closer to the held-out benchmark's ~600-turn conversations than any one of ours.

Prints evidence recall@10 and nDCG@10 per question kind, the share of gold turns the write
policy denied, and the precision and recall of ``not_memorable`` against the turn labels
(see :mod:`episodic.evals.conversations`), then the in-process latency of the writes (per turn,
batches of one session) and of the recalls (per question, query embedding included). Tune on
``--split dev``; report ``--split test``.

    .venv/bin/python benchmarks/conversations.py --split dev [--out report.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from episodic.application.service import MemoryService
from episodic.application.settings import Settings
from episodic.application.usecases.conversations import Conversations
from episodic.application.usecases.reads import Reads
from episodic.application.usecases.writes import Writes
from episodic.bootstrap.embedders import local_embedder
from episodic.evals.conversations import (
    format_report,
    load_conversations,
    local_services,
    merged,
    run_conversation,
    summarise_scores,
)

SUITE = Path(__file__).resolve().parents[1] / "tests" / "evals" / "conversations"


def measure(
    split: str,
    *,
    only: str | None = None,
    path: str = "batch",
    disclosures: str = "suggest",
    progress: Any = None,
    folder: Path | None = None,
    embedder: str = "minilm",
    merge: bool = False,
) -> dict[str, Any]:
    """Write and ask every conversation of ``split`` (or of ``folder``, any set in the same
    format; or only ``only``): the report of :func:`~episodic.evals.conversations.summarise_scores`
    plus ``latency`` (write ms per turn, recall p50/p99 ms) and ``seconds``."""
    where = folder or SUITE / split
    conversations = load_conversations(where)
    if only:
        conversations = [c for c in conversations if c["conversationId"] == only]
    if not conversations:
        raise SystemExit(f"no conversations in {where}" + (f" named {only}" if only else ""))
    if merge:
        try:
            conversations = [merged(conversations)]
        except ValueError as exc:
            raise SystemExit(str(exc)) from None
    model = local_embedder(Settings(embedder=embedder))
    started = time.perf_counter()
    timings: dict[str, list[float]] = {"write": [], "recall": []}
    with tempfile.TemporaryDirectory(prefix="episodic-conversations-") as tmp:
        settings = {"sensitive_disclosures": disclosures, "embedder": embedder}
        build = timed(local_services(Path(tmp), model, **settings), timings)
        say = progress or (lambda line: print(line, file=sys.stderr))
        runs = [run_conversation(build, c, say, path) for c in conversations]
    report = summarise_scores(runs)
    recall_ms = statistics.quantiles(timings["recall"], n=100) if len(timings["recall"]) > 1 else timings["recall"] * 99
    report["latency"] = {
        "write_ms_per_turn": statistics.mean(timings["write"]),
        "recall_p50_ms": recall_ms[49],
        "recall_p99_ms": recall_ms[98],
        "questions": len(timings["recall"]),
    }
    report["conversations"] = len(conversations)
    report["seconds"] = time.perf_counter() - started
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=("dev", "test"), default="dev")
    parser.add_argument("--set", type=Path, help="a folder of conversations in the same format (instead of --split)")
    parser.add_argument("--only", help="one conversation id (e.g. cv01)")
    parser.add_argument(
        "--path", choices=("batch", "turns"), default="batch", help="POST /v1/episodes/batch or the conversation path"
    )
    parser.add_argument(
        "--disclosures", choices=("private", "suggest"), default="suggest", help="EPISODIC_SENSITIVE_DISCLOSURES"
    )
    parser.add_argument("--embedder", choices=("minilm", "e5"), default="minilm", help="EPISODIC_EMBEDDER")
    parser.add_argument("--merged", action="store_true", help="the split as one long conversation (see above)")
    parser.add_argument("--out", type=Path, help="write the full report (misses included) as JSON")
    args = parser.parse_args(argv)
    report = measure(
        args.split, only=args.only, path=args.path, disclosures=args.disclosures, folder=args.set,
        embedder=args.embedder, merge=args.merged,
    )  # fmt: skip
    print(
        f"{args.set or 'split ' + args.split}{', merged' if args.merged else ''}, {args.path} path, "
        f"{args.embedder}, disclosures {args.disclosures}: "
        f"{report['conversations']} conversations, {report['seconds']:.0f} s"
    )
    print(format_report(report))
    latency = report["latency"]
    print(
        f"latency: write {latency['write_ms_per_turn']:.1f} ms per turn; recall p50 {latency['recall_p50_ms']:.1f} ms, "
        f"p99 {latency['recall_p99_ms']:.1f} ms ({latency['questions']} questions)"
    )
    if args.out:
        args.out.write_text(json.dumps(report, indent=1, default=str))
    return 0


class _Stopwatch:
    """Wraps one use case of a service and appends each call's milliseconds (``per`` divides them
    by the items the call carried) to ``into``; every other attribute passes through."""

    def __init__(self, usecase: Any, method: str, into: list[float], per: Callable[..., int] | None = None) -> None:
        self._usecase, self._method, self._into, self._per = usecase, method, into, per

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._usecase, name)
        if name != self._method:
            return found

        def timed_call(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            result = found(*args, **kwargs)
            elapsed = (time.perf_counter() - started) * 1000
            self._into.append(elapsed / max(self._per(*args) if self._per else 1, 1))
            return result

        return timed_call


def timed(build: Callable[[datetime], MemoryService], timings: dict[str, list[float]]) -> Callable[[datetime], Any]:
    """``build`` whose services time their writes (per turn) and recalls: the batch route's
    ``writes.remember_batch``, the conversation path's ``conversations.add_turns`` and
    ``reads.recall`` (what :func:`~episodic.evals.conversations.run_conversation` calls)."""

    def timed_build(now: datetime) -> MemoryService:
        service = build(now)
        writes = _Stopwatch(service.writes, "remember_batch", timings["write"], lambda _, proposals: len(proposals))
        turns = _Stopwatch(service.conversations, "add_turns", timings["write"], lambda _, __, r: len(r.turns))
        recalls = _Stopwatch(service.reads, "recall", timings["recall"])
        # Each stopwatch stands in for the use case it wraps (every other attribute passes through).
        return dataclasses.replace(
            service, writes=cast(Writes, writes), conversations=cast(Conversations, turns), reads=cast(Reads, recalls)
        )

    return timed_build


if __name__ == "__main__":
    sys.exit(main())
