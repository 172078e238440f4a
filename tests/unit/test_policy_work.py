"""The write policy's work grows linearly with its input, on the inputs made to make it grow
faster: counted in interpreter steps, never timed.

A step is a line the interpreter runs (``sys.settrace``), in the policy and in the RE2 wrapper
alike. What a regular-expression engine does inside one search is out of its sight, which is
why no backtracking engine may be used at all (``test_linear_patterns``): RE2's searches are
linear by construction, and this test covers everything around them. For each pathological
shape (:mod:`benchmarks.pathological`) the policy judges a proposal of 1 KiB and one of 4 KiB;
linear work gives at most four times the steps (a fixed part makes it less), work that grows
with the square of the input up to sixteen. The default tier tries the shapes that cost a
backtracking engine the most and a sample drawn from the patterns' words; the fuzz tier tries
every word of every pattern, at 2 and 8 KiB, and the known worst at 16 KiB.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import UTC, datetime
from types import FrameType
from typing import Any

import pytest

from benchmarks import pathological
from episodic.domain.model import Caller, Role
from episodic.domain.policy import WritePolicy
from episodic.domain.policy.instruction_model import word_buckets
from tests.support.fuzzing import FUZZ_SELECTED

CALLER = Caller(tenant_id="acme", role=Role.AGENT, principal_id="test:work")
NOW = datetime(2026, 12, 1, tzinfo=UTC)
SLACK = 1.125
"""How much more than in proportion to the input the steps may grow: a little, for what only a
longer text brings (a payload long enough to be decoded, one more reading)."""


def steps(work: Callable[[], Any]) -> int:
    """How many lines the interpreter runs for ``work()``, caches emptied first."""
    word_buckets.cache_clear()
    count = 0

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return tracer

    sys.settrace(tracer)
    try:
        work()
    finally:
        sys.settrace(None)
    return count


def growth(policy: WritePolicy, shape: str, small: int, large: int) -> tuple[int, int]:
    def judge(size: int) -> Callable[[], Any]:
        proposal = pathological.proposal(shape, size)
        return lambda: policy.decide(proposal, CALLER, NOW)

    return steps(judge(small)), steps(judge(large))


def check(shapes: list[str], small: int, large: int) -> None:
    policy = WritePolicy()
    policy.decide(pathological.proposal("warm up", 64), CALLER, NOW)  # the detectors compile once
    failures = []
    for shape in shapes:
        few, many = growth(policy, shape, small, large)
        if many > SLACK * (large / small) * few:
            failures.append(f"{shape!r}: {few} steps at {small} characters, {many} at {large} ({many / few:.1f}x)")
    assert not failures, "the policy's work grows faster than its input:\n  " + "\n  ".join(failures)


def test_given_the_known_worst_shapes_and_a_sample_of_the_patterns_words_when_judged_then_work_is_linear():
    shapes = pathological.shapes(count=40)
    assert set(pathological.KNOWN_WORST) <= set(shapes)
    check(shapes, 1024, 4096)


@pytest.mark.fuzz
@pytest.mark.skipif(not FUZZ_SELECTED, reason="fuzz tier: run with HYPOTHESIS_PROFILE=fuzz (make test-fuzz)")
def test_given_every_word_of_every_pattern_when_judged_up_to_16_kib_then_work_is_linear():
    check(pathological.shapes(), 2048, 8192)
    check(list(pathological.KNOWN_WORST), 4096, 16384)


def test_given_work_that_grows_with_the_square_of_its_input_when_counted_then_it_is_caught():
    """The counter itself: a quadratic loop grows sixteenfold, past the bound."""

    def quadratic(size: int) -> Callable[[], Any]:
        def work() -> None:
            for i in range(size):
                for _ in range(i):
                    pass

        return work

    few, many = steps(quadratic(64)), steps(quadratic(256))
    assert many > SLACK * 4 * few
