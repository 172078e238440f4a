"""The Lambda code: the thin handlers as one asset, the ``episodic`` core as one layer, the
authorizer's dependencies as another.

Both are staged by *local* bundling (a Python callback CDK runs instead of Docker), so a
synth needs neither Docker nor network:

* the function asset holds ``functions/*.py`` as the package ``functions`` (handlers are
  ``functions.api.handler`` and so on, as locally) and the ingestion mapping file;
* the core layer holds ``python/episodic`` (current source, always) plus the third-party
  dependencies that ``make layer`` installed for Lambda's Python 3.13 on arm64 into
  ``build/layer/core/python``; the authorizer's layer holds ``build/layer/auth/python``.
  Without that build the core layer carries the pure-Python source only and the authorizer's
  a note: enough to synthesise, test and lint the template, **not** to run -- deploy after
  ``make layer``. With it, ``episodic`` is staged with its Python 3.13 bytecode beside it
  (:mod:`infra.bytecode`), when this machine has that Python.
"""

from __future__ import annotations

import shutil
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
_IGNORE = shutil.ignore_patterns("__pycache__", ".mypy_cache")
"""Local caches of a source tree; never `*.pyc`: `make layer` replaces modules with bytecode."""


@jsii.implements(cdk.ILocalBundling)
class _CopyInto:
    """Copy ``(source, destination)`` pairs into the asset's output directory, in order; then,
    given ``python``, compile the package ``python/<compiled>`` beside its source with it."""

    def __init__(self, *copies: tuple[Path, str], compiled: str | None = None, python: str | None = None) -> None:
        self._copies = copies
        self._compiled, self._python = compiled, python

    def try_bundle(self, output_dir: str, *, image: cdk.DockerImage, **_: object) -> bool:
        for source, destination in self._copies:
            target = Path(output_dir) / destination
            if source.is_dir():
                shutil.copytree(source, target, ignore=_IGNORE, dirs_exist_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
        if self._compiled and self._python:
            compile_beside(Path(output_dir) / "python" / self._compiled, self._python, f"{LAYER_ROOT}/{self._compiled}")
        return True


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
        self.handlers = _bundled(
            FUNCTIONS_DIR, _CopyInto((FUNCTIONS_DIR, "functions"), (mapping_file, MAPPING_IN_ASSET))
        )
        copies = [(dependencies / "core" / "python", "python")] if dependencies else []
        copies.append((CORE_DIR, "python/episodic"))
        # Bytecode only for a deployable layer (`make layer` found the Python it needs, too).
        python = lambda_interpreter() if dependencies else None
        self.layer = self._layer(
            "Core",
            _bundled(CORE_DIR, _CopyInto(*copies, compiled="episodic", python=python)),
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
