"""Measures of a source tree's shape, shared by the layout tests of the core,
the handlers and the CDK app: how long each function and module is, and what a module imports."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 400


def python_files(*roots: Path) -> Iterator[Path]:
    for root in roots:
        yield from sorted(root.rglob("*.py"))


def long_functions(base: Path, *roots: Path, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """``path:line name (n lines)`` of every def longer than ``limit`` lines."""
    found = []
    for module in python_files(*roots):
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > limit:
                    found.append(f"{module.relative_to(base)}:{node.lineno} {node.name} ({length} lines)")
    return found


def long_modules(base: Path, *roots: Path, limit: int = MAX_MODULE_LINES) -> list[str]:
    """``path (n lines)`` of every module longer than ``limit`` lines."""
    return [
        f"{module.relative_to(base)} ({lines} lines)"
        for module in python_files(*roots)
        if (lines := len(module.read_text().splitlines())) > limit
    ]
