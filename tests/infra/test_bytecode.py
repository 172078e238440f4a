"""The layers' bytecode (for the cold import): Lambda's ``/opt`` is read-only, so a layer of
source is compiled at every cold start. These tests compile with this interpreter (the build
uses a Python 3.13, :func:`infra.bytecode.lambda_interpreter`; the mechanism is the same)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from infra.bytecode import imported_third_party, replace_with_bytecode
from infra.components.code import _CopyInto
from infra.config import ROOT


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def run_in(tree: Path, code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-c", code], cwd=tree, env=env, capture_output=True, text=True)


def test_given_listed_modules_when_replaced_with_bytecode_then_they_import_without_source_and_name_their_place(
    tmp_path,
):
    write(tmp_path / "pkg" / "__init__.py", "VALUE = 41\n")
    write(tmp_path / "pkg" / "mod.py", "from pkg import VALUE\n\ndef fail():\n    raise ValueError(VALUE + 1)\n")
    write(tmp_path / "other.py", "X = 1\n")

    compiled = replace_with_bytecode(tmp_path, ["pkg/__init__.py", "pkg/mod.py", "absent/gone.py"], sys.executable)

    assert compiled == 2  # a module the layer does not hold is skipped
    assert sorted(p.name for p in (tmp_path / "pkg").iterdir()) == ["__init__.pyc", "mod.pyc"]
    assert (tmp_path / "other.py").exists()  # not listed: stays source
    run = run_in(tmp_path, "import pkg.mod, other; pkg.mod.fail()")
    assert "ValueError: 42" in run.stderr
    assert 'File "/opt/python/pkg/mod.py", line 4, in fail' in run.stderr


def test_given_the_handlers_when_their_third_party_imports_are_listed_then_the_core_packages_are_in_and_ours_are_not():
    imported = imported_third_party(ROOT)

    assert "pydantic/main.py" in imported
    assert "aws_lambda_powertools/event_handler/api_gateway.py" in imported
    assert "opensearchpy/__init__.py" in imported  # imported by the AWS adapters on first use
    assert not any(path.startswith(("episodic/", "functions/")) for path in imported)


def test_given_a_built_layer_when_staged_then_its_bytecode_is_kept_and_the_source_gets_checked_bytecode(tmp_path):
    dependencies, source, out = tmp_path / "deps", tmp_path / "src", tmp_path / "out"
    write(dependencies / "lib" / "__init__.pyc", "bytecode from make layer")
    write(source / "core.py", "def answer():\n    return 42\n")
    write(source / "__pycache__" / "gone.cpython-311.pyc", "a local cache of a removed module")
    staging = _CopyInto(
        (dependencies, "python"), (source, "python/episodic"), compiled="episodic", python=sys.executable
    )

    staging.try_bundle(str(out), image=None)  # type: ignore[arg-type]

    assert (out / "python" / "lib" / "__init__.pyc").read_text() == "bytecode from make layer"
    caches = list((out / "python" / "episodic" / "__pycache__").iterdir())
    assert [p.name for p in caches] == [f"core.{sys.implementation.cache_tag}.pyc"]
    assert caches[0].read_bytes()[4:8] == (3).to_bytes(4, "little")  # hash-based, checked (PEP 552)
    run = run_in(out / "python", "import episodic.core as c; print(c.answer(), c.__cached__)")
    assert run.stdout.startswith("42 ")
