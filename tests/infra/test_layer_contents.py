"""The core layer without the local-only tools still runs every handler.

The layer and the function asset are staged exactly as the CDK bundling stages them (the same
staging objects, into a temporary folder), then imported by an isolated interpreter whose path
is what Lambda's is: the function asset, the layer's ``python`` folder, and third-party packages
(this venv's site-packages, standing in for ``make layer``'s). ``-I -S`` keeps out the
repository, the working directory and the editable install's finder, which would otherwise
find ``episodic`` in ``layers/`` whatever the layer holds.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from infra.bytecode import HANDLER_MODULES
from infra.components.code import LOCAL_ONLY, core_staging, handlers_staging
from infra.config import ROOT

MAPPING = ROOT / "events" / "ingest" / "mapping.json"
LEFT_OUT_MODULES = (
    "episodic.__main__",
    "episodic.entrypoints.cli",
    "episodic.entrypoints.server",
    "episodic.entrypoints.mcp",
    "episodic.client",
    "episodic.evals",
    "episodic.bootstrap.local",
    "episodic.bootstrap.aws_on_moto",
)
"""What only a laptop runs: none of it may be importable where the handlers run."""
LAZY_LOCAL_BRANCHES = {("episodic.bootstrap.compose", "episodic.bootstrap.local")}
"""Imports of a left-out module that Lambda never reaches: ``build_service`` imports the local
composition only for ``EPISODIC_BACKEND=local``, and every function is configured ``aws``
(``tests/infra/test_functions.py``)."""

_IN_LAMBDA = """
import importlib, importlib.util, json, pkgutil, sys
sys.path[:0] = {path!r}
import episodic
handlers = [h for h in {handlers!r} if callable(getattr(importlib.import_module(h.rpartition(".")[0]),
                                                       h.rpartition(".")[2], None))]
staged = [info.name for info in pkgutil.walk_packages(episodic.__path__, "episodic.")]
for name in staged:
    importlib.import_module(name)
from episodic.domain.policy import WritePolicy
from episodic.domain.policy.chatter import default_classifier
WritePolicy().warm_up()
print(json.dumps({{
    "episodic": episodic.__file__,
    "handlers": handlers,
    "modules": staged,
    "left_out_importable": [n for n in {left_out!r} if importlib.util.find_spec(n) is not None],
    "verdicts": [default_classifier().is_chatter(t)
                 for t in ("thanks, have a great day!", "I'm moving to the Lisbon office on March 3rd")],
}}))
"""


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """``(layer, function asset)`` as a synth without ``make layer`` stages them."""
    root = tmp_path_factory.mktemp("lambda")
    layer, task = root / "opt", root / "task"
    core_staging(None, None).stage(layer)
    handlers_staging(MAPPING).stage(task)
    return layer, task


def _run_as_lambda(layer: Path, task: Path, handlers: list[str]) -> dict:
    site = sorted({sysconfig.get_paths()[k] for k in ("purelib", "platlib")})
    code = _IN_LAMBDA.format(
        path=[str(task), str(layer / "python"), *site], handlers=handlers, left_out=LEFT_OUT_MODULES
    )
    run = subprocess.run([sys.executable, "-I", "-S", "-c", code], cwd=task, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.splitlines()[-1])


def test_given_the_staged_layer_then_the_local_only_tools_and_the_training_set_are_not_in_it(staged):
    layer, _ = staged
    package = layer / "python" / "episodic"
    assert all(not (package / path).exists() for path in LOCAL_ONLY)
    assert not list(layer.rglob("chatter_train.jsonl"))
    assert (package / "domain" / "policy" / "data" / "chatter_model.json").is_file()
    assert (package / "bootstrap" / "aws.py").is_file() and (package / "entrypoints" / "rest" / "app.py").is_file()


def test_given_the_staged_layer_when_imported_as_lambda_does_then_every_handler_and_module_loads(staged, dev):
    layer, task = staged
    functions = dev.resources("AWS::Lambda::Function").values()
    named = sorted({h for f in functions if (h := f["Properties"]["Handler"]).startswith("functions.")})
    found = _run_as_lambda(layer, task, named)

    assert Path(found["episodic"]).is_relative_to(layer / "python")  # not the repository's copy
    assert {name.rpartition(".")[0] for name in named} == set(HANDLER_MODULES)  # every handler module
    assert found["handlers"] == named  # each function's handler, importable and callable
    assert "episodic.bootstrap.aws" in found["modules"] and "episodic.entrypoints.rest.app" in found["modules"]
    assert found["left_out_importable"] == []
    assert found["verdicts"] == [True, False]  # the chatter classifier loads its shipped weights


def test_given_an_interpreter_when_the_layer_is_staged_then_every_module_left_in_gets_its_bytecode(tmp_path):
    """What a deployable layer gets (:func:`infra.bytecode.compile_beside`), on the reduced tree."""
    core_staging(None, sys.executable).stage(tmp_path)
    package = tmp_path / "python" / "episodic"
    sources = sorted(package.rglob("*.py"))
    tag = sys.implementation.cache_tag
    assert sources and all((s.parent / "__pycache__" / f"{s.stem}.{tag}.pyc").is_file() for s in sources)
    assert not (package / "entrypoints" / "cli").exists() and not (package / "client").exists()


def _imported(tree: ast.AST, package: str) -> tuple[set[str], set[str]]:
    """``(modules, names)``: what ``import m`` and ``from m import n`` require to be modules (``m``),
    and every name imported (``m`` and ``m.n``, where ``n`` may be a module or an attribute)."""
    modules: set[str] = set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join([*parts[: len(parts) - node.level + 1], base]).strip(".")
            modules.add(base)
            names |= {f"{base}.{alias.name}" for alias in node.names}
    return modules, modules | names


def test_given_the_staged_layer_then_no_module_imports_one_it_lacks_even_lazily(staged):
    """Importing every module proves the module-level imports; this reads the lazy ones, inside
    functions, too: each must name a module the layer holds, and none a left-out one."""
    layer, _ = staged
    python = layer / "python"
    files = {".".join(p.relative_to(python).with_suffix("").parts).removesuffix(".__init__"): p
             for p in python.rglob("*.py")}  # fmt: skip
    offenders = set()
    for module, path in files.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        required, names = _imported(ast.parse(path.read_text(encoding="utf-8")), package)
        missing = {m for m in required if m.split(".")[0] == "episodic" and m not in files}
        left_out = {m for n in names for m in LEFT_OUT_MODULES if n == m or n.startswith(m + ".")}
        offenders |= {(module, m) for m in missing | left_out}
    assert offenders - LAZY_LOCAL_BRANCHES == set()
