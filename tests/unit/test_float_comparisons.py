"""No test compares a float for exact equality: a cosine of 0.99999988 on one CPU is 1.0 on
another, and a sum's last bit depends on the order the machine adds in. Every float a test
checks is compared with a tolerance (``pytest.approx``, ``math.isclose``, ``abs(a - b) < e``)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _holds_a_float(node: ast.AST) -> bool:
    """A float literal, or a tuple, list, set or dict literal with one in it (not inside a call,
    which is where ``pytest.approx`` puts them)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, float)
    if isinstance(node, ast.UnaryOp):
        return _holds_a_float(node.operand)
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_holds_a_float(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return any(_holds_a_float(v) for v in node.values if v is not None)
    return False


def exact_float_comparisons(source: str) -> list[int]:
    """The lines of ``source`` that compare something with ``==`` or ``!=`` to a float literal."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare) or not any(isinstance(op, ast.Eq | ast.NotEq) for op in node.ops):
            continue
        if any(_holds_a_float(operand) for operand in [node.left, *node.comparators]):
            found.append(node.lineno)
    return found


def test_given_every_test_module_when_read_then_no_float_is_compared_exactly():
    offenders = [
        f"{path.relative_to(TESTS)}:{line}"
        for path in sorted(TESTS.rglob("*.py"))
        for line in exact_float_comparisons(path.read_text(encoding="utf-8"))
    ]
    assert not offenders, "compare floats with pytest.approx:\n  " + "\n  ".join(offenders)


def test_given_exact_and_tolerant_comparisons_when_checked_then_only_the_exact_ones_are_reported():
    source = "a == 1.0\nb == pytest.approx(1.0)\nc == ('x', 0.5)\nd == {'k': -0.25}\ne == 3\nf != 0.1\n"
    assert exact_float_comparisons(source) == [1, 3, 4, 6]
