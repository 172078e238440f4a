"""Bytecode for the Lambda layers, compiled here by a Python of Lambda's version.

Why: Lambda's ``/opt`` is read-only, so a layer shipped as source is compiled again at every
cold start and the bytecode thrown away. Measured on this machine with Python 3.13 and the core
layer's packages (see BENCHMARKS.md): importing ``functions.api`` took ~1.1 s from source
against ~0.35 s with bytecode.

What is compiled, and how, keeps the layer's size where it was:

* third-party modules that the handlers import -- at import, and on the AWS adapters' first
  use -- are replaced by their bytecode (``module.pyc`` where ``module.py`` was, which Python
  imports without a source). Their tracebacks still name file and line (``/opt/python/...``),
  without the line's text. Modules no handler imports stay source: they are rarely loaded, and
  their bytecode would add megabytes for nothing;
* the service's own package keeps its source, with checked bytecode beside it in
  ``__pycache__`` (compiled when the CDK stages the layer, so it always matches the source).

Bytecode only loads in the Python version that wrote it, so without a Python 3.13 here
(``EPISODIC_LAMBDA_PYTHON``, ``python3.13`` on the path, or pyenv's) nothing is compiled and
the build says so.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

LAMBDA_PYTHON = "3.13"
"""Lambda's Python (``infra.layer.PLATFORM`` and the functions' runtime)."""
LAYER_ROOT = "/opt/python"
"""Where Lambda mounts a layer's ``python`` folder: the file names tracebacks show."""
HANDLER_MODULES = (
    "functions.api",
    "functions.stream",
    "functions.events",
    "functions.workflows",
    "functions.authorizer",
)
ADAPTER_PACKAGES = (
    "episodic.adapters.dynamodb",
    "episodic.adapters.opensearch",
    "episodic.adapters.s3",
    "episodic.adapters.bedrock",
    "episodic.adapters.stepfunctions",
    "episodic.entrypoints.dynamodb_stream",
    "episodic.entrypoints.eventbridge",
)
"""The AWS adapters and entry points: their modules import, on first use, what the handlers do
not import at start (OpenSearch, numpy)."""

_IMPORTED = """
import importlib, json, pkgutil, sys, sysconfig
for name in {modules!r}:
    importlib.import_module(name)
for name in {packages!r}:
    package = importlib.import_module(name)
    for info in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{{name}}.{{info.name}}")
roots = sorted({{sysconfig.get_paths()[k] for k in ("purelib", "platlib")}}, key=len, reverse=True)
found = set()
for module in list(sys.modules.values()):
    path = getattr(module, "__file__", None) or ""
    root = next((r for r in roots if path.startswith(r + "/")), None)
    if root and path.endswith(".py"):
        found.add(path[len(root) + 1 :])
print(json.dumps(sorted(found)))
"""

_COMPILE = """
import json, os, py_compile, sys
target, prefix = sys.argv[1], sys.argv[2]
done = 0
for relative in json.load(sys.stdin):
    source = os.path.join(target, relative)
    if not os.path.isfile(source):
        continue  # a module of the venv's that the layer does not hold (provided by the runtime)
    py_compile.compile(source, cfile=source + "c", dfile=f"{prefix}/{relative}", doraise=True,
                       invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    os.remove(source)
    done += 1
print(done)
"""


def lambda_interpreter() -> str | None:
    """A Python of :data:`LAMBDA_PYTHON` on this machine, or None."""
    candidates = [
        os.environ.get("EPISODIC_LAMBDA_PYTHON"),
        shutil.which(f"python{LAMBDA_PYTHON}"),
        *sorted(glob.glob(str(Path.home() / ".pyenv" / "versions" / f"{LAMBDA_PYTHON}.*" / "bin" / "python3"))),
    ]
    for candidate in filter(None, candidates):
        try:
            run = subprocess.run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                 capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
        except OSError:
            continue
        if run.returncode == 0 and run.stdout.strip() == LAMBDA_PYTHON:
            return candidate
    return None


def imported_third_party(root: Path) -> list[str]:
    """Paths, relative to site-packages, of the third-party modules the handlers import (at start
    and in the AWS adapters), found by importing them in this venv: the same packages as the
    layer's, for this machine's platform, which decides nothing about pure-Python file names."""
    code = _IMPORTED.format(modules=HANDLER_MODULES, packages=ADAPTER_PACKAGES)
    run = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    return list(json.loads(run.stdout))


def replace_with_bytecode(target: Path, relative: list[str], interpreter: str) -> int:
    """Compile each of ``relative`` under ``target`` with ``interpreter`` into ``module.pyc`` and
    remove its source; returns how many were compiled."""
    run = subprocess.run([interpreter, "-c", _COMPILE, str(target), LAYER_ROOT], input=json.dumps(relative),
                         capture_output=True, text=True, check=True)  # fmt: skip
    return int(run.stdout)


def compile_beside(package: Path, interpreter: str, prefix: str) -> None:
    """Checked bytecode in ``__pycache__`` beside every module of ``package`` (shown in tracebacks
    as under ``prefix``): Python uses it only while it matches the source."""
    command = [interpreter, "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "checked-hash",
               "-d", prefix, str(package)]  # fmt: skip
    subprocess.run(command, check=True, capture_output=True)
