"""The core's rings import only what the import matrix allows (``tests/support/rings.py``):
the domain and the application use no I/O library, each adapter folder uses only its own
technology's SDK, entry points reach the composition roots only from inside a function, and
the checker itself reports every kind of break."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.layout import python_files
from tests.support.rings import MATRIX, ring_of, violations

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "layers" / "episodic"


def test_every_import_in_the_core_is_allowed_by_the_matrix():
    assert violations(CORE) == []


def test_every_rule_of_the_matrix_is_about_a_ring_that_exists():
    rings = {ring_of(CORE, module) for module in python_files(CORE)}
    assert set(MATRIX) - rings == set()


def test_the_core_has_its_rings_as_folders_and_at_most_four_modules_at_its_root():
    folders = {p.name for p in CORE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert {"domain", "application", "adapters", "entrypoints", "bootstrap"} <= folders
    assert len(list(CORE.glob("*.py"))) <= 4


@pytest.fixture
def core(tmp_path: Path) -> Path:
    """A miniature core whose modules break one rule each (and one that keeps them all)."""
    root = tmp_path / "episodic"
    files = {
        "__init__.py": "",
        "domain/__init__.py": "",
        "domain/cloud.py": "import boto3\n",
        "domain/disk.py": "import sqlite3\n",
        "domain/fine.py": "import json\nfrom urllib.parse import quote\nfrom pydantic import BaseModel\n",
        "application/__init__.py": "",
        "application/reach.py": "from episodic.adapters.sqlite.store import SqliteStore\n",
        "adapters/__init__.py": "",
        "adapters/s3/__init__.py": "",
        "adapters/s3/wrong_sdk.py": "import opensearchpy\n",
        "entrypoints/__init__.py": "",
        "entrypoints/rest/__init__.py": "",
        "entrypoints/rest/eager.py": "from episodic.bootstrap.compose import build_service\n",
        "entrypoints/rest/lazy.py": "def root():\n    from episodic.bootstrap.compose import build_service\n",
        "stray/__init__.py": "",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_the_checker_reports_each_broken_rule_and_nothing_else(core: Path):
    found = violations(core)
    assert found == [
        "episodic/adapters/s3/wrong_sdk.py:1: adapters.s3 uses the library opensearchpy",
        "episodic/application/reach.py:1: application imports episodic.adapters.sqlite.store (ring adapters.sqlite)",
        "episodic/domain/cloud.py:1: domain uses the library boto3",
        "episodic/domain/disk.py:1: domain does I/O through sqlite3",
        "episodic/entrypoints/rest/eager.py:1: entrypoints.rest imports episodic.bootstrap.compose at module level "
        "(ring bootstrap)",
        "episodic/stray/__init__.py: ring 'stray' is not in the import matrix",
    ]


def test_a_real_module_breaking_a_rule_is_caught(tmp_path: Path):
    """The real core with one import added where it may not be: the checker names it."""
    import shutil

    copy = tmp_path / "episodic"
    shutil.copytree(CORE, copy, ignore=shutil.ignore_patterns("__pycache__", "*.json", "*.jsonl"))
    target = copy / "domain" / "model" / "audit.py"
    target.write_text(target.read_text() + "\nimport numpy\n")
    assert [v.split(": ", 1)[1] for v in violations(copy)] == ["domain uses the library numpy"]
