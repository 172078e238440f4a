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
