"""The conversation benchmark on the local backend (real SQLite, real MiniLM): every turn of
every conversation in a split written as an agent would, then one recall per question.

Prints evidence recall@10 and nDCG@10 per question kind, the share of gold turns the write
policy denied, and the precision and recall of ``not_memorable`` against the turn labels
(see :mod:`episodic.conversation_eval`). Tune on ``--split dev``; report ``--split test``.

    .venv/bin/python benchmarks/conversations.py --split dev [--out report.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from episodic.adapters.local.embedder import MiniLMEmbedder
from episodic.conversation_eval import (
    format_report,
    load_conversations,
    local_services,
    run_conversation,
    summarise_scores,
)

SUITE = Path(__file__).resolve().parents[1] / "tests" / "evals" / "conversations"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=("dev", "test"), default="dev")
    parser.add_argument("--only", help="one conversation id (e.g. cv01)")
    parser.add_argument(
        "--path", choices=("batch", "turns"), default="batch", help="POST /v1/episodes/batch or the conversation path"
    )
    parser.add_argument(
        "--disclosures", choices=("private", "suggest"), default="private", help="EPISODIC_SENSITIVE_DISCLOSURES"
    )
    parser.add_argument("--out", type=Path, help="write the full report (misses included) as JSON")
    args = parser.parse_args(argv)
    conversations = load_conversations(SUITE / args.split)
    if args.only:
        conversations = [c for c in conversations if c["conversationId"] == args.only]
    if not conversations:
        print(f"no conversations in {SUITE / args.split}", file=sys.stderr)
        return 2
    embedder = MiniLMEmbedder()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="episodic-conversations-") as tmp:
        build = local_services(Path(tmp), embedder, sensitive_disclosures=args.disclosures)
        runs = [run_conversation(build, c, lambda line: print(line, file=sys.stderr), args.path) for c in conversations]
    report = summarise_scores(runs)
    elapsed = time.perf_counter() - started
    print(
        f"split {args.split}, {args.path} path, disclosures {args.disclosures}: "
        f"{len(conversations)} conversations, {elapsed:.0f} s"
    )
    print(format_report(report))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
