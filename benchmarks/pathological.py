"""Pathological text for the write policy: each pattern's words repeated, at a chosen size.

A backtracking pattern is slowest on text that keeps starting a match and never finishing one:
its opening word again and again ("pw,pw,pw,..."), with the separators its next step expects.
The shapes here are drawn from the patterns themselves -- every literal word of every pattern
:mod:`episodic.domain.linear` has compiled, each followed by a separator -- so a pattern added later is
covered too. Used by the benchmark (:func:`measure`), the step-counting test and the
/health-while-writing test.
"""

from __future__ import annotations

import random
import statistics
import time
from datetime import UTC, datetime
from typing import Any

from episodic.domain import linear
from episodic.domain.model import EpisodeProposal
from episodic.domain.policy import WritePolicy

SEPARATORS = ("", " ", ",", ".", ":", "=", "-", "1", "\n")
KNOWN_WORST = ("pw,", "password is ", "from now on ", "secret ", "1 ", "4111 ", "aaaa1111", "QUJD", "&#x41;", "%41")
"""Shapes that cost a backtracking engine the most (the first took 11.7 s at 16 KiB), always tried."""
_LETTERS = linear.compile(r"\pL{2,}")


def pattern_words() -> list[str]:
    """Every literal word (two letters or more) of every compiled pattern, in order."""
    WritePolicy()  # the detectors compile their patterns on first use
    import episodic.domain.policy.instructions  # noqa: F401
    import episodic.domain.policy.sensitivity as sensitivity

    sensitivity.disclosures("")
    words: list[str] = []
    for source in linear.sources():
        unescaped = source.replace("\\s", " ").replace("\\b", " ").replace("\\w", " ").replace("\\d", " ")
        words += [w.lower() for w in _LETTERS.findall(unescaped) if w not in ("pL", "pN", "Nd", "pZ")]
    return list(dict.fromkeys(words))


def shapes(count: int | None = None, seed: int = 20261204) -> list[str]:
    """:data:`KNOWN_WORST`, then every word of the patterns with a separator drawn for it (or
    ``count`` of them), the same on every machine."""
    rng = random.Random(seed)
    drawn = [word + rng.choice(SEPARATORS) for word in pattern_words()]
    if count is not None:
        drawn = rng.sample(drawn, min(count, len(drawn)))
    return list(dict.fromkeys([*KNOWN_WORST, *drawn]))


def repeated(shape: str, size: int) -> str:
    return (shape * (size // max(len(shape), 1) + 1))[:size]


def proposal(shape: str, size: int) -> EpisodeProposal:
    """A proposal whose details hold ``size`` characters of ``shape`` and whose summary holds half
    as many (at most 4,000): the two places the policy reads most, never the same text twice (a
    cache would then spare the second reading)."""
    return EpisodeProposal.model_validate(proposal_body(shape, size))


def proposal_body(shape: str, size: int) -> dict[str, Any]:
    return {
        "eventType": "tool_observed_event",
        "actorId": "probe",
        "occurredAt": datetime(2026, 11, 28, tzinfo=UTC).isoformat(),
        "summary": repeated(shape, min(size // 2, 4000)).strip() or "probe",
        "details": {"input": {"note": repeated(shape, size)}},
        "sourceRefs": ["probe:pathological"],
        "sourceTrust": "tool_result",
    }


NORMAL = (
    "Deploy of checkout 4.2 failed on the payment step; the team rolled back at 14:05 and opened INC-2291. "
    "Customer asked for the March invoices as PDF, sent to the finance mailbox, and a call on Thursday. "
)
"""Ordinary memory text, repeated to the same size as a shape: what the policy's cost is compared with."""
SIZE = 64 * 1024


def _judge_seconds(policy: WritePolicy, proposal: EpisodeProposal) -> float:
    from episodic.domain.model import Caller, Role
    from episodic.domain.policy import instruction_model

    instruction_model.word_buckets.cache_clear()
    caller = Caller(tenant_id="bench", role=Role.AGENT, principal_id="bench:policy")
    started = time.perf_counter()
    policy.decide(proposal, caller, datetime.now(UTC))
    return time.perf_counter() - started


def measure(sampled: int = 20, size: int = SIZE) -> dict[str, Any]:
    """The policy's time on ``size`` characters of each pathological shape beside the same size of
    ordinary text, judged alternately (three rounds, medians), as a ratio."""
    policy = WritePolicy()
    policy.warm_up()
    normal = fitting(NORMAL, size)
    rows: list[dict[str, Any]] = []
    for shape in shapes(count=sampled):
        proposal_ = fitting(shape, size)
        times = [(_judge_seconds(policy, normal), _judge_seconds(policy, proposal_)) for _ in range(3)]
        base = statistics.median(t[0] for t in times)
        worst = statistics.median(t[1] for t in times)
        rows.append({"shape": shape, "normal_ms": base * 1000, "shape_ms": worst * 1000, "ratio": worst / base})
    rows.sort(key=lambda row: row["ratio"], reverse=True)
    return {"size": size, "rows": rows}


def fitting(shape: str, size: int) -> EpisodeProposal:
    """:func:`proposal` at ``size``, or as much of it as the 64 KiB details limit holds (a shape
    that JSON escapes takes more bytes than characters)."""
    while True:
        try:
            return proposal(shape, size)
        except ValueError:
            size = int(size * 0.8)


def section(result: dict[str, Any], health: dict[str, Any]) -> list[str]:
    rows = result["rows"]
    return [
        f"## The write policy on pathological input ({result['size'] // 1024} KiB of each repeated shape)",
        "",
        "Each shape is a word of the policy's own patterns repeated (`benchmarks/pathological.py`), in a",
        "proposal's details and (up to 4,000 characters) its summary, judged by `WritePolicy.decide`",
        "alternately with the same size of ordinary text; medians of three. Every pattern runs on RE2, in",
        "time linear in its input, so no shape costs much more than ordinary text of its size.",
        "",
        "| shape | ordinary text | the shape | ratio |",
        "|---|---:|---:|---:|",
        *[
            f"| `{row['shape']!r}` | {row['normal_ms']:.1f} ms | {row['shape_ms']:.1f} ms | {row['ratio']:.2f} |"
            for row in rows[:12]
        ],
        "",
        f"The worst of {len(rows)} shapes costs {rows[0]['ratio']:.2f}x ordinary text of the same size; the median "
        f"{statistics.median(row['ratio'] for row in rows):.2f}x.",
        "",
        *health_lines(health),
    ]


def health_lines(health: dict[str, Any]) -> list[str]:
    return [
        "### `GET /v1/health` while the worst write runs",
        "",
        f"A batch of {health['items']} proposals of {health['item_kib']} KiB of the costliest shape "
        f"(`{health['shape']!r}`, {health['body_kib']} KiB in all) posted {health['writes']} times to "
        "`episodic serve`'s application over HTTP, each taking "
        f"{health['write_p50_ms']:.0f} ms at p50; meanwhile another connection asks for `/v1/health` every "
        f"20 ms ({health['checks']} times), alternating with as many checks while nothing is written.",
        "",
        "| /v1/health | p50 | p99 | worst |",
        "|---|---:|---:|---:|",
        f"| nothing written | {health['idle_p50_ms']:.1f} ms | {health['idle_p99_ms']:.1f} ms "
        f"| {health['idle_max_ms']:.1f} ms |",
        f"| during the worst write | {health['busy_p50_ms']:.1f} ms | {health['busy_p99_ms']:.1f} ms "
        f"| {health['busy_max_ms']:.1f} ms |",
        "",
    ]


def health_during_worst_write(shape: str = KNOWN_WORST[1], writes: int = 5) -> dict[str, Any]:
    """``/v1/health`` timed every 20 ms on its own connection while a 1 MiB batch of ``shape``
    proposals is written ``writes`` times over HTTP, alternating with as long a stretch of checks
    while nothing is written: what one costly write takes from everyone else."""
    import tempfile
    import threading
    from pathlib import Path

    import httpx

    from episodic.application.settings import Settings
    from episodic.bootstrap.local import build_local_service
    from episodic.entrypoints.rest import concurrent_handler
    from episodic.entrypoints.server.http import create_server
    from episodic.entrypoints.server.tokens import TokenBook, parse_tokens
    from functions import api

    token = "bench-health-token-0001"
    item = proposal_body(shape, 60 * 1024)
    items = [dict(item, actorId=f"probe-{n}") for n in range(15)]
    with tempfile.TemporaryDirectory() as tmp:
        service = build_local_service(Settings(data_dir=Path(tmp)))
        service.deps.policy.warm_up()
        api.set_service(service)
        server = create_server("127.0.0.1", 0, TokenBook(parse_tokens(f"{token}=bench:agent"), "bench"),
                               concurrent_handler)  # fmt: skip
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{server.server_address[1]}"
        writer = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=300)
        checker = httpx.Client(base_url=base, timeout=60)
        busy: list[float] = []
        idle: list[float] = []
        write_ms: list[float] = []
        body_kib = len(httpx.Request("POST", base, json={"episodes": items}).content) // 1024
        try:
            for _ in range(writes):
                done = threading.Event()

                def write(done: threading.Event = done) -> None:
                    started = time.perf_counter()
                    writer.post("/v1/episodes/batch", json={"episodes": items}).raise_for_status()
                    write_ms.append((time.perf_counter() - started) * 1000)
                    done.set()

                thread = threading.Thread(target=write)
                thread.start()
                while not done.is_set():
                    busy.append(_check(checker))
                    time.sleep(0.02)
                thread.join()
                for _ in range(max(len(busy) // writes, 5)):
                    idle.append(_check(checker))
                    time.sleep(0.02)
        finally:
            writer.close()
            checker.close()
            server.shutdown()
            server.server_close()
            api.set_service(None)
            service.close()
    return {
        "shape": shape, "items": len(items), "item_kib": 60, "body_kib": body_kib, "writes": writes,
        "checks": len(busy), "write_p50_ms": statistics.median(write_ms),
        **_percentiles("busy", busy), **_percentiles("idle", idle),
    }  # fmt: skip


def _check(client: Any) -> float:
    started = time.perf_counter()
    client.get("/v1/health").raise_for_status()
    return (time.perf_counter() - started) * 1000


def _percentiles(name: str, values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        f"{name}_p50_ms": statistics.median(ordered),
        f"{name}_p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
        f"{name}_max_ms": ordered[-1],
    }
