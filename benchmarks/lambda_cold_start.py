"""Cold import of the API's Lambda handler as Lambda loads it: Python 3.13 with the core layer's
packages, from source (as the layer shipped before) and with the bytecode that ``make layer`` and
the CDK now ship (:mod:`infra.bytecode`).

The packages are the layer's own requirements installed by :func:`infra.layer.install`, pruned
and stripped the same way, but for this machine's platform (x86_64) so that they import here;
Lambda's are the same versions for arm64. Both trees are timed alternately in fresh
interpreters, best of ``--runs``. Needs a Python 3.13 (``EPISODIC_LAMBDA_PYTHON``) and, the first
time, PyPI (the packages are kept in ``build/bench-lambda``). Run from the checkout, as a module,
so that ``infra`` imports (``episodic bench`` runs it so).

    .venv/bin/python -m benchmarks.lambda_cold_start
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
from pathlib import Path

from infra.bytecode import (
    LAMBDA_PYTHON,
    LAYER_ROOT,
    compile_beside,
    imported_third_party,
    lambda_interpreter,
    replace_with_bytecode,
)
from infra.config import ROOT
from infra.layer import PRUNED, install, platform_options, prune, requirements, strip

HERE = ROOT / "build" / "bench-lambda"
PLATFORM_HERE = platform_options("x86_64", LAMBDA_PYTHON)
SOURCE_IGNORED = shutil.ignore_patterns("__pycache__", ".mypy_cache")


def trees(python: str) -> tuple[Path, Path]:
    """``(source, bytecode)``: the core layer's ``python`` folder twice, as source and as shipped."""
    source, bytecode, installed = HERE / "source", HERE / "bytecode", HERE / ".installed"
    wanted = "\n".join(requirements())
    if not installed.exists() or installed.read_text() != wanted:  # kept until pyproject changes
        shutil.rmtree(HERE, ignore_errors=True)
        install(source, requirements(), platform=PLATFORM_HERE)
        prune(source, PRUNED)
        strip(source)
        installed.write_text(wanted)
    shutil.rmtree(source / "episodic", ignore_errors=True)
    shutil.copytree(ROOT / "layers" / "episodic", source / "episodic", ignore=SOURCE_IGNORED)
    shutil.rmtree(bytecode, ignore_errors=True)
    shutil.copytree(source, bytecode)
    replace_with_bytecode(bytecode, imported_third_party(ROOT), python)
    compile_beside(bytecode / "episodic", python, f"{LAYER_ROOT}/episodic")
    return source, bytecode


def import_ms(python: str, tree: Path, module: str) -> float:
    """One cold import of ``module`` in a fresh interpreter with ``tree`` as the layer, in ms
    (the handlers themselves from this checkout, as the function asset holds them)."""
    code = f"import time; t = time.perf_counter(); import {module}; print((time.perf_counter() - t) * 1000)"
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONPYCACHEPREFIX", None)
    run = subprocess.run([python, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"importing {module} from {tree} failed:\n{run.stderr}")
    return float(run.stdout)


def measure(runs: int = 7, module: str = "functions.api") -> dict[str, float]:
    python = lambda_interpreter()
    if python is None:
        raise SystemExit(f"no Python {LAMBDA_PYTHON} here: set EPISODIC_LAMBDA_PYTHON")
    source, bytecode = trees(python)
    timings: dict[str, list[float]] = {"source_ms": [], "bytecode_ms": []}
    for _ in range(runs):
        timings["source_ms"].append(import_ms(python, source, module))
        timings["bytecode_ms"].append(import_ms(python, bytecode, module))
    return {name: min(values) for name, values in timings.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON (for episodic bench)")
    args = parser.parse_args(argv)
    result = measure(args.runs)
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"functions.api cold import, Python {LAMBDA_PYTHON}, best of {args.runs}: "
          f"from source {result['source_ms']:.0f} ms, with the shipped bytecode {result['bytecode_ms']:.0f} ms "
          f"({result['source_ms'] / result['bytecode_ms']:.1f}x)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
