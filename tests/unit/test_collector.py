"""The collector settings of an ``episodic serve`` process (episodic.entrypoints.server.collector)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from episodic.entrypoints.server.collector import YOUNG_THRESHOLD, tune_collector

PEAK = 3_000
"""Containers alive at once, as a request holds at its peak: above the default threshold (700),
well below the tuned one."""


@pytest.fixture
def collector() -> Iterator[None]:
    """The test process's own settings, put back afterwards."""
    saved = gc.get_threshold()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*saved)


def young_collections_during_a_peak() -> int:
    """How many collections of the youngest generation :data:`PEAK` live containers cause."""
    seen: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 0:
            seen.append(1)

    gc.collect()  # every generation's count starts from zero
    gc.callbacks.append(count)
    try:
        held = [[n] for n in range(PEAK)]
        del held
    finally:
        gc.callbacks.remove(count)
    return len(seen)


def test_tuning_raises_the_youngest_threshold_and_keeps_the_older_multiples(collector: None) -> None:
    _, middle, oldest = gc.get_threshold()
    tune_collector()
    assert gc.get_threshold() == (YOUNG_THRESHOLD, middle, oldest)


def test_tuning_freezes_what_the_start_made(collector: None) -> None:
    gc.unfreeze()
    kept = [["made at start"]]
    assert any(o is kept for o in gc.get_objects())
    tune_collector()
    assert gc.get_freeze_count() > 0
    assert not any(o is kept for o in gc.get_objects())  # frozen: no collection walks it again


def test_a_requests_peak_of_temporaries_no_longer_triggers_a_collection(collector: None) -> None:
    gc.set_threshold(700, 10, 10)  # CPython's default
    assert young_collections_during_a_peak() >= PEAK // 700 - 1
    tune_collector()
    assert young_collections_during_a_peak() == 0
