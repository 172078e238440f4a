"""The shape of the core and the handlers (issue #11): short functions and modules, imports
that only run down the layers (handlers -> service -> use cases -> ports <- adapters), and no
``type: ignore`` to reach past a port."""

from __future__ import annotations

from pathlib import Path

from tests.support.layout import imported_modules, long_functions, long_modules, python_files

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "layers" / "episodic"
HANDLERS = ROOT / "functions"
PORT_USERS = [CORE / "application", HANDLERS]


def test_no_function_or_method_in_the_core_or_the_handlers_is_longer_than_60_lines():
    assert long_functions(ROOT, CORE, HANDLERS) == []


def test_no_module_in_the_core_or_the_handlers_is_longer_than_400_lines():
    assert long_modules(ROOT, CORE, HANDLERS) == []


def test_the_core_never_imports_the_handler_package():
    reaching_up = {
        str(module.relative_to(ROOT)): sorted(n for n in imported_modules(module) if n.split(".")[0] == "functions")
        for module in python_files(CORE)
    }
    assert {path: names for path, names in reaching_up.items() if names} == {}


def test_the_use_cases_depend_on_ports_not_on_adapters():
    reaching_out = {
        str(module.relative_to(ROOT)): sorted(n for n in imported_modules(module) if n.startswith("episodic.adapters"))
        for module in python_files(CORE / "application")
    }
    assert {path: names for path, names in reaching_out.items() if names} == {}


def test_no_type_ignore_is_used_where_the_ports_are_used():
    modules = [p for root in PORT_USERS for p in ([root] if root.is_file() else python_files(root))]
    ignored = [
        f"{module.relative_to(ROOT)}:{number}"
        for module in modules
        for number, line in enumerate(module.read_text().splitlines(), start=1)
        if "type: ignore" in line
    ]
    assert ignored == []
