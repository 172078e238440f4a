"""Where a proposal's time goes on the write path without embedding, stage by stage.

``remember_batch`` in batches of 100 on a fresh local service, with vectors handed out ready (the
embedder given), each stage timed by the wall clock around its own calls: the write policy, building
the episode, staging its change set (with the audit record and the result), each change set's
statements in the store, and the store's transaction around them (the commit and its fsync, the
savepoints when a set failed, what the store tells its indexes afterwards). What none of them
holds is ``remember_batch``'s own work (checks, idempotency, the results). The timers are patched
onto one service for the run and add ~0.25 us a call (measured); cProfile, which the policy's own
profile uses, would inflate the Python stages against SQLite's.

    .venv/bin/python benchmarks/write_profile.py --proposals 3000
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

STAGES = (
    "the write policy",
    "building the episode",
    "its change set, audit record and result",
    "the store: each change set's statements",
    "the store: the transaction around them (its commit and fsync; savepoints only when a set fails)",
    "the rest of remember_batch",
)
"""The stages :func:`path_profile` reports, in the order a proposal passes them."""


def path_profile(embedder: Any, proposals: list[Any], batch: int = 100) -> dict[str, float]:
    """Microseconds a proposal spends in each of :data:`STAGES` (``embedder``: one that hands out
    vectors without running a model), and ``per_s``, the rate of the timed run."""
    import episodic.adapters.sqlite.episodes as sqlite_episodes
    from episodic.application.settings import Settings
    from episodic.bootstrap.local import build_local_service
    from episodic.domain.model import Caller, Role

    caller = Caller(tenant_id="acme", role=Role.AGENT, principal_id="bench")
    spent: dict[str, float] = dict.fromkeys(STAGES, 0.0)
    with tempfile.TemporaryDirectory() as tmp:
        service = build_local_service(Settings(data_dir=Path(tmp)), embedder=embedder)
        service.deps.policy.warm_up()  # classifiers and detectors outside the timers
        timed = [
            (service.deps.policy, "decide", STAGES[0]),
            (service.writes, "_build_episode", STAGES[1]),
            (service.writes, "_stage_item", STAGES[2]),
            (sqlite_episodes, "write_changes", STAGES[3]),
            (service.deps.episodes, "apply_many", STAGES[4]),
        ]
        with _timers(timed, spent):
            started = time.perf_counter()
            for start in range(0, len(proposals), batch):
                service.writes.remember_batch(caller, proposals[start : start + batch])
            total = time.perf_counter() - started
        service.close()
    spent[STAGES[4]] -= spent[STAGES[3]]  # the statements run inside the transaction
    spent[STAGES[5]] = total - sum(spent[stage] for stage in STAGES[:5])
    count = len(proposals)
    return {**{stage: seconds / count * 1e6 for stage, seconds in spent.items()}, "per_s": count / total}


@contextmanager
def _timers(timed: list[tuple[Any, str, str]], spent: dict[str, float]) -> Iterator[None]:
    """Each ``(owner, attribute, stage)``'s callable replaced by one that adds its wall time to
    ``spent[stage]``, for the duration; afterwards each owner is as it was (an attribute it held
    itself put back, one it had from its class removed again)."""
    saved = [(owner, name, vars(owner).get(name)) for owner, name, _ in timed]
    for owner, name, stage in timed:
        setattr(owner, name, _timer(getattr(owner, name), stage, spent))
    try:
        yield
    finally:
        for owner, name, own in saved:
            if own is None:
                delattr(owner, name)
            else:
                setattr(owner, name, own)


def _timer(call: Callable[..., Any], stage: str, spent: dict[str, float]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return call(*args, **kwargs)
        finally:
            spent[stage] += time.perf_counter() - started

    return timed


def section(profile: dict[str, float]) -> list[str]:
    """The BENCHMARKS.md lines: each stage's microseconds a proposal and share of the path."""
    whole = sum(profile[stage] for stage in STAGES)
    return [
        f"Where a proposal's time goes on the path without embedding (`benchmarks/write_profile.py`: wall "
        f"time around each stage's calls, {profile['per_s']:,.0f} proposals a second in that run):",
        "",
        *[f"- {stage}: {profile[stage]:.0f} us ({profile[stage] / whole:.0%})" for stage in STAGES],
        "",
    ]


def main(argv: list[str] | None = None) -> int:
    from benchmarks.ingest_throughput import proposals
    from benchmarks.run import _forget_policy_caches, _Precomputed
    from episodic.adapters.minilm.embedder import MiniLMEmbedder
    from episodic.application.settings import Settings
    from episodic.bootstrap.local import build_local_service
    from episodic.domain.model import Caller, Role

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--proposals", type=int, default=3000)
    args = parser.parse_args(argv)
    recorder = _Precomputed(MiniLMEmbedder(cache_size=0))
    items = proposals(args.proposals, "profile")
    caller = Caller(tenant_id="acme", role=Role.AGENT, principal_id="bench")
    with (
        tempfile.TemporaryDirectory() as tmp,
        build_local_service(Settings(data_dir=Path(tmp)), embedder=recorder) as dry,
    ):
        for start in range(0, len(items), 100):  # the vectors, made untimed
            dry.writes.remember_batch(caller, items[start : start + 100])
    recorder.recording = False
    _forget_policy_caches()
    print("\n".join(section(path_profile(recorder, items))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
