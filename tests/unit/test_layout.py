"""The shape of the core and the handlers: short functions and modules, and no ``type: ignore``
to reach past a port. Which ring may import which is ``test_import_matrix``'s."""

from __future__ import annotations

from pathlib import Path

from tests.support.layout import long_functions, long_modules, python_files

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "layers" / "episodic"
HANDLERS = ROOT / "functions"
PORT_USERS = [CORE / "application", HANDLERS]


def test_no_function_or_method_in_the_core_or_the_handlers_is_longer_than_60_lines():
    assert long_functions(ROOT, CORE, HANDLERS) == []


def test_no_module_in_the_core_or_the_handlers_is_longer_than_400_lines():
    assert long_modules(ROOT, CORE, HANDLERS) == []


def test_no_type_ignore_is_used_where_the_ports_are_used():
    modules = [p for root in PORT_USERS for p in ([root] if root.is_file() else python_files(root))]
    ignored = [
        f"{module.relative_to(ROOT)}:{number}"
        for module in modules
        for number, line in enumerate(module.read_text().splitlines(), start=1)
        if "type: ignore" in line
    ]
    assert ignored == []
