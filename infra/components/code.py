"""The Lambda code: the thin handlers as one asset, the ``episodic`` core as one layer, the
authorizer's dependencies as another.

Both are staged by *local* bundling (a Python callback CDK runs instead of Docker), so a
synth needs neither Docker nor network:

* the function asset holds ``functions/*.py`` as the package ``functions`` (handlers are
  ``functions.api.handler`` and so on, as locally) and the ingestion mapping file;
* the core layer holds ``python/episodic`` (current source, always) plus the third-party
  dependencies that ``make layer`` installed for Lambda's Python 3.13 on arm64 into
  ``build/layer/core/python``, less what only a laptop runs (:data:`LOCAL_ONLY`); the
  authorizer's layer holds ``build/layer/auth/python``.
  Without that build the core layer carries the pure-Python source only and the authorizer's
  a note: enough to synthesise, test and lint the template, **not** to run -- deploy after
  ``make layer``. With it, ``episodic`` is staged with its Python 3.13 bytecode beside it
  (:mod:`infra.bytecode`), when this machine has that Python.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Collection
from pathlib import Path

import aws_cdk as cdk
import jsii
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.bytecode import LAYER_ROOT, compile_beside, lambda_interpreter
from infra.config import LAYER_BUILD, LAYER_READY, ROOT

FUNCTIONS_DIR = ROOT / "functions"
UNBUILT_NOTE = ROOT / "infra" / "components" / "unbuilt_layer.txt"
CORE_DIR = ROOT / "layers" / "episodic"
MAPPING_IN_ASSET = "ingest/mapping.json"
_Ignore = Callable[[str, list[str]], set[str]]
_IGNORE = shutil.ignore_patterns("__pycache__", ".mypy_cache")
"""Local caches of a source tree; never `*.pyc`: `make layer` replaces modules with bytecode."""
LOCAL_ONLY = {
    "__main__.py": "`python -m episodic`, which runs the command line",
    "entrypoints/cli": "the `episodic` command line (serve, demo, eval, bench, tokens)",
    "entrypoints/server": "the local HTTP server that `episodic serve` runs",
    "entrypoints/mcp": "the MCP server, run beside an agent",
    "client": "the Python SDK, which calls the service over HTTP from outside",
    "evals": "the evaluation harnesses behind `episodic eval`",
    "bootstrap/local.py": "the composition over SQLite and MiniLM (EPISODIC_BACKEND=local; Lambda runs aws)",
    "bootstrap/aws_on_moto.py": "the AWS backend over moto on loopback (`episodic serve --backend aws-local`)",
    "domain/policy/data/chatter_train.jsonl": "the chatter classifier's labelled set: it ships trained",
}
"""What of ``layers/episodic`` the core layer leaves out, relative to the package, and why: tools
and composition roots for a laptop, which no handler imports (``tests/infra/test_layer_contents.py``
imports every handler from a staged layer without them). Less to upload, unzip and scan."""


@jsii.implements(cdk.ILocalBundling)
class _CopyInto:
    """Copy ``(source, destination)`` pairs into the asset's output directory, in order; then,
    given ``python``, compile the package ``python/<compiled>`` beside its source with it."""

    def __init__(
        self,
        *copies: tuple[Path, str],
        excluded: Collection[str] = (),
        compiled: str | None = None,
        python: str | None = None,
    ) -> None:
        """``excluded``: paths inside the asset (``python/episodic/client``) that no copy writes."""
        self._copies, self._excluded = copies, frozenset(excluded)
        self._compiled, self._python = compiled, python

    def try_bundle(self, output_dir: str, *, image: cdk.DockerImage, **_: object) -> bool:
        self.stage(Path(output_dir))
        return True

    def stage(self, output_dir: Path) -> None:
        """Write the asset into ``output_dir``, as CDK's bundling does (tests and ``make layer``
        call this to see exactly what a deployment ships)."""
        for source, destination in self._copies:
            target = output_dir / destination
            if source.is_dir():
                ignore = _ignoring(source, Path(destination), self._excluded)
                shutil.copytree(source, target, ignore=ignore, dirs_exist_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
        if self._compiled and self._python:
            compile_beside(output_dir / "python" / self._compiled, self._python, f"{LAYER_ROOT}/{self._compiled}")


def _ignoring(source: Path, destination: Path, excluded: frozenset[str]) -> _Ignore:
    """An ``ignore`` for :func:`shutil.copytree` from ``source`` to ``destination`` (in the asset):
    local caches, and the names whose place in the asset is one of ``excluded``."""

    def ignore(folder: str, names: list[str]) -> set[str]:
        inside = destination / Path(folder).relative_to(source)
        return set(_IGNORE(folder, names)) | {n for n in names if (inside / n).as_posix() in excluded}

    return ignore


def handlers_staging(mapping_file: Path) -> _CopyInto:
    """How the function asset is staged: ``functions/`` as the package ``functions``, and the
    ingestion mapping at :data:`MAPPING_IN_ASSET`."""
    return _CopyInto((FUNCTIONS_DIR, "functions"), (mapping_file, MAPPING_IN_ASSET))


def core_staging(
    dependencies: Path | None, python: str | None, local_only: Collection[str] = tuple(LOCAL_ONLY)
) -> _CopyInto:
    """How the core layer is staged: ``make layer``'s dependencies (when built) under ``python``,
    then ``layers/episodic`` less ``local_only`` (:data:`LOCAL_ONLY`) as ``python/episodic``,
    compiled by ``python`` when given (bytecode beside the source)."""
    copies = [(dependencies / "core" / "python", "python")] if dependencies else []
    copies.append((CORE_DIR, "python/episodic"))
    excluded = [f"python/episodic/{path}" for path in local_only]
    return _CopyInto(*copies, excluded=excluded, compiled="episodic", python=python)


def _bundled(source: Path, staging: _CopyInto) -> lambda_.Code:
    return lambda_.Code.from_asset(
        str(source),
        asset_hash_type=cdk.AssetHashType.OUTPUT,
        # Never pulled: local bundling always succeeds, the image is only a required field.
        bundling=cdk.BundlingOptions(image=cdk.DockerImage.from_registry("unused"), local=staging),
    )


def layer_dependencies() -> Path | None:
    """``build/layer`` (``core/python`` and ``auth/python``) when ``make layer`` completed, else
    None (source-only layers)."""
    return LAYER_BUILD if LAYER_READY.exists() else None


class LambdaCode(Construct):
    """The function asset and two layers: ``layer`` (the core and its dependencies) for the
    service's functions, ``auth_layer`` (PyJWT, Powertools) for the authorizer alone."""

    def __init__(self, scope: Construct, id: str, *, mapping_file: Path, dependencies: Path | None) -> None:
        super().__init__(scope, id)
        self.handlers = _bundled(FUNCTIONS_DIR, handlers_staging(mapping_file))
        # Bytecode only for a deployable layer (`make layer` found the Python it needs, too).
        python = lambda_interpreter() if dependencies else None
        self.layer = self._layer(
            "Core",
            _bundled(CORE_DIR, core_staging(dependencies, python)),
            "episodic core + runtime dependencies (make layer)"
            if dependencies
            else "episodic core source only: run `make layer` before deploying",
        )
        auth = (dependencies / "auth" / "python", "python") if dependencies else (UNBUILT_NOTE, "python/UNBUILT.txt")
        self.auth_layer = self._layer(
            "Auth",
            _bundled(UNBUILT_NOTE.parent, _CopyInto(auth)),
            "authorizer dependencies: PyJWT, Powertools (make layer)"
            if dependencies
            else "authorizer layer not built: run `make layer` before deploying",
        )

    def _layer(self, id: str, code: lambda_.Code, description: str) -> lambda_.LayerVersion:
        return lambda_.LayerVersion(
            self,
            id,
            code=code,
            compatible_runtimes=[lambda_.Runtime.PYTHON_3_13],
            compatible_architectures=[lambda_.Architecture.ARM_64],
            description=description,
        )
