"""Build the layers' dependencies for Lambda without Docker: ``make layer``.

pip fetches wheels for Lambda's platform -- CPython 3.13 on arm64, whose Amazon Linux 2023 has
glibc 2.34, so wheels built for manylinux2014 or for glibc 2.28 both run (some packages, RE2's
among them, ship only the latter for Python 3.13) -- with ``--only-binary=:all:``, so nothing is
compiled on this machine and the result does not depend on it. Two dependency sets, one per kind
of function (nothing in a function that its handler does not import):

* ``core`` -- the service's handlers (API, stream, ingestion, workflows): the project's runtime
  dependencies and the ``aws`` extra (read from pyproject.toml, so there is one list), less
  boto3 (the Lambda runtime provides it), httpx (the SDK's, no handler imports it) and PyJWT
  with cryptography (the authorizer's alone); opensearch-py 3 pulls in opensearch-protobufs,
  grpcio and protobuf, which it never imports, so they are pruned after the install, and
  test suites, type stubs and numpy's build-only parts are stripped (:func:`strip`);
* ``auth`` -- the authorizer, which imports PyJWT (with cryptography for RS256) and Powertools'
  logger and parameters, and nothing of the core.

The third-party modules the handlers import are shipped as Python 3.13 bytecode
(:mod:`infra.bytecode`: Lambda would otherwise compile them at every cold start). The
``episodic`` source is added to the core layer by the CDK asset at every synth, so it is never
stale, with its bytecode beside it and without the tools only a laptop runs
(:data:`infra.components.code.LOCAL_ONLY`). ``build/layer/.complete`` is written last; the CDK
app uses the build only when it exists. The sizes are printed per function, and the episodic
package's whole and as staged, first (they need no install).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

from infra.bytecode import (
    LAMBDA_PYTHON,
    imported_third_party,
    lambda_interpreter,
    replace_with_bytecode,
)
from infra.components.code import core_staging
from infra.config import LAYER_BUILD, LAYER_READY, ROOT

IN_RUNTIME = frozenset({"boto3", "botocore", "s3transfer"})  # provided by Lambda's Python runtime
NOT_IN_CORE = frozenset({"httpx", "pyjwt"})  # the SDK's; the authorizer's (its own layer)
PRUNED = ("opensearch-protobufs", "grpcio", "protobuf")
"""Installed by opensearch-py 3's requirements, never imported by it or by this project."""
NEVER_IMPORTED = ("numpy/f2py", "numpy/_core/include")
"""Parts of installed packages no handler imports: Fortran wrapping and C headers for builds."""
AUTH = ("PyJWT[crypto]>=2.8", "aws-lambda-powertools>=3.10,<4")
# A layer comes first on sys.path, so nothing in it may break the runtime's botocore.
BOTOCORE_COMPATIBLE = ("python-dateutil>=2.1,<3", "jmespath>=0.7.1,<2", "urllib3>=1.25.4,<3")
LAMBDA_GLIBC_TAGS = ("manylinux2014", "manylinux_2_28")
"""The wheel platforms pip may take for Lambda's Python 3.13 (its glibc runs both; see above)."""


def platform_options(machine: str, python: str = "3.13") -> tuple[str, ...]:
    """pip's options for wheels of Lambda's Python ``python`` on ``machine`` (``aarch64``, ``x86_64``)."""
    tags = [option for tag in LAMBDA_GLIBC_TAGS for option in ("--platform", f"{tag}_{machine}")]
    return (*tags, "--implementation", "cp", "--python-version", python)


PLATFORM = platform_options("aarch64")


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def requirements() -> list[str]:
    """The core layer's requirements."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["aws"]]
    return sorted({r for r in wanted if _name(r) not in IN_RUNTIME | NOT_IN_CORE}, key=_name)


def install(target: Path, packages: list[str] | tuple[str, ...], platform: tuple[str, ...] = PLATFORM) -> None:
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-compile", "--only-binary=:all:",
               *platform, "--target", str(target), *packages, *BOTOCORE_COMPATIBLE]  # fmt: skip
    print("+", " ".join(command))
    subprocess.run(command, check=True)
    leaked = sorted(p.name for p in target.iterdir() if p.name in IN_RUNTIME)
    if leaked:
        raise SystemExit(f"a dependency pulled in {leaked}, which the runtime provides; pin it out first")


def prune(target: Path, distributions: tuple[str, ...]) -> list[str]:
    """Remove installed distributions file by file, as their ``RECORD`` lists them."""
    removed = []
    for record in target.glob("*.dist-info/RECORD"):
        dist = record.parent.name.removesuffix(".dist-info").rsplit("-", 1)[0].lower().replace("_", "-")
        if dist not in distributions:
            continue
        for line in record.read_text().splitlines():
            path = target / line.split(",", 1)[0]
            if path.is_file():
                path.unlink()
        shutil.rmtree(record.parent, ignore_errors=True)
        removed.append(dist)
    for folder in sorted((p for p in target.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()
    return sorted(removed)


def strip(target: Path) -> float:
    """Remove what no handler imports from installed packages -- test suites, type stubs,
    :data:`NEVER_IMPORTED` -- and return the MiB saved."""
    before = size_mib(target)
    doomed = [*target.glob("*/**/tests"), *(target / part for part in NEVER_IMPORTED)]
    for folder in doomed:
        if folder.is_dir():
            shutil.rmtree(folder)
    for stub in target.rglob("*.pyi"):
        stub.unlink()
    return before - size_mib(target)


def size_mib(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20


def staged_mib(package: Path) -> float:
    """The size of ``package`` without local caches (the handlers, as their asset holds them)."""
    with tempfile.TemporaryDirectory() as tmp:
        staged = Path(tmp) / package.name
        shutil.copytree(package, staged, ignore=shutil.ignore_patterns("__pycache__", ".mypy_cache"))
        return size_mib(staged)


@dataclass(frozen=True)
class Size:
    files: int
    bytes: int

    @classmethod
    def of(cls, folder: Path) -> Size:
        sizes = [f.stat().st_size for f in folder.rglob("*") if f.is_file()]
        return cls(len(sizes), sum(sizes))

    def __str__(self) -> str:
        return f"{self.files} files, {self.bytes:,} bytes ({self.bytes / 2**20:.2f} MiB)"


def episodic_sizes(python: str | None) -> tuple[Size, Size]:
    """The ``episodic`` package in the core layer if it were whole, and as the CDK stages it
    (:func:`infra.components.code.core_staging`: without the local-only tools), both with their
    bytecode beside them when ``python`` is given."""
    with tempfile.TemporaryDirectory() as tmp:
        whole, staged = Path(tmp) / "whole", Path(tmp) / "staged"
        core_staging(None, python, local_only=()).stage(whole)
        core_staging(None, python).stage(staged)
        return Size.of(whole / "python" / "episodic"), Size.of(staged / "python" / "episodic")


def report_episodic(python: str | None) -> float:
    """Print the episodic package's size whole and as staged; returns the staged MiB."""
    whole, staged = episodic_sizes(python)
    saved = 1 - staged.bytes / whole.bytes
    compiled = f"with Python {LAMBDA_PYTHON} bytecode" if python else "source only"
    print(f"episodic in the core layer ({compiled}): whole package {whole}; staged without the "
          f"local-only tools {staged}: {saved:.0%} smaller")  # fmt: skip
    return staged.bytes / 2**20


def main() -> None:
    python = lambda_interpreter()
    source = report_episodic(python)
    shutil.rmtree(LAYER_BUILD, ignore_errors=True)
    core, auth = LAYER_BUILD / "core" / "python", LAYER_BUILD / "auth" / "python"
    install(core, requirements())
    print(f"pruned from the core layer (never imported): {', '.join(prune(core, PRUNED)) or 'nothing'}")
    install(auth, AUTH)
    saved = strip(core) + strip(auth)
    print(f"stripped {saved:.1f} MiB of test suites, type stubs and build headers")
    if python:
        imported = imported_third_party(ROOT)
        compiled = sum(replace_with_bytecode(layer, imported, python) for layer in (core, auth))
        print(f"replaced {compiled} third-party modules the handlers import with Python {LAMBDA_PYTHON} bytecode")
    else:
        print(f"warning: no Python {LAMBDA_PYTHON} here (set EPISODIC_LAMBDA_PYTHON): the layers ship source, "
              "which Lambda compiles again at every cold start")  # fmt: skip
    LAYER_READY.write_text("built by `make layer`\n")
    handlers = staged_mib(ROOT / "functions")
    print("unzipped, per function (Lambda allows 250 MiB in all):")
    print(f"  API, stream, ingestion, workflows: {size_mib(core) + source + handlers:.1f} MiB "
          f"(dependencies {size_mib(core):.1f} + episodic {source:.1f} + handlers {handlers:.2f})")  # fmt: skip
    print(f"  authorizer: {size_mib(auth) + handlers:.1f} MiB (dependencies {size_mib(auth):.1f})")


if __name__ == "__main__":
    main()
