"""The shape of ``infra/`` (issue #11): short functions and modules, so each construct can be
read on its own -- a constructor that grows past a screen is a sign it owns too much."""

from __future__ import annotations

import ast

from infra.config import ROOT

INFRA = ROOT / "infra"
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 400


def test_no_function_or_method_in_infra_is_longer_than_60_lines():
    too_long = []
    for module in sorted(INFRA.rglob("*.py")):
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    too_long.append(f"{module.relative_to(ROOT)}:{node.lineno} {node.name} ({length} lines)")
    assert too_long == []


def test_no_module_in_infra_is_longer_than_400_lines():
    too_long = [
        f"{module.relative_to(ROOT)} ({lines} lines)"
        for module in sorted(INFRA.rglob("*.py"))
        if (lines := len(module.read_text().splitlines())) > MAX_MODULE_LINES
    ]
    assert too_long == []
