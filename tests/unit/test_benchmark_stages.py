"""The benchmark's profile stages name functions that exist: a renamed or moved function would
otherwise read 0% in BENCHMARKS.md without any error."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from benchmarks.run import POLICY_STAGES, RECALL_STAGES

PACKAGE = Path(__file__).resolve().parents[2] / "layers" / "episodic"


def _defines(path: Path, function: str) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(n, ast.FunctionDef) and n.name == function for n in ast.walk(tree))


@pytest.mark.parametrize(
    ("stage", "where"),
    [(stage, where) for stage, keys in [*POLICY_STAGES.items(), *RECALL_STAGES.items()] for where in keys],
)
def test_given_a_profile_stage_then_a_module_of_that_name_defines_its_function(stage, where):
    file_name, function = where
    defined = any(_defines(path, function) for path in PACKAGE.rglob(file_name))
    assert defined, f"{stage}: no {file_name} defines {function}"


def test_given_the_write_path_profile_then_every_stage_is_timed_and_the_service_is_left_as_it_was():
    """The path's profile over a few proposals (a hashing test double stands in for the model):
    each timed stage took some time, the statements are not counted twice (the transaction around
    them, and what no stage holds, are left at zero or more), and the store's module function is
    itself again afterwards (the other timers sit on the run's own service)."""
    import episodic.adapters.sqlite.episodes as sqlite_episodes
    from benchmarks.ingest_throughput import proposals
    from benchmarks.write_profile import STAGES, path_profile, section
    from tests.support.doubles import HashingTestEmbedder

    before = sqlite_episodes.write_changes
    profile = path_profile(HashingTestEmbedder(), proposals(40, "stages"), batch=20)
    assert all(profile[stage] > 0 for stage in STAGES[:4])
    assert profile[STAGES[4]] >= 0 and profile[STAGES[5]] >= 0
    assert sqlite_episodes.write_changes is before
    lines = section(profile)
    assert all(any(line.startswith(f"- {stage}: ") for line in lines) for stage in STAGES)
