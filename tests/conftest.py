"""Shared fixtures.

The real all-MiniLM-L6-v2 model is loaded once per test process (``minilm``) and used by
every service, contract, API and evaluation test. Unit tests use the test doubles in
``tests/support/doubles.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from episodic.adapters.local.bootstrap import build_local_service
from episodic.adapters.local.embedder import MiniLMEmbedder
from episodic.service import MemoryService
from episodic.settings import Settings
from tests.support.doubles import FixedClock


@pytest.fixture(scope="session")
def minilm() -> MiniLMEmbedder:
    embedder = MiniLMEmbedder()
    embedder.embed(["warm up"])
    return embedder


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock()


@pytest.fixture
def local_service(tmp_path, minilm, clock) -> Iterator[MemoryService]:
    """The real local backend (SQLite + folder archive + MiniLM) on a fresh data dir."""
    service = build_local_service(Settings(data_dir=tmp_path / "data"), embedder=minilm, clock=clock)
    yield service
    service.store.close()  # type: ignore[attr-defined]


@pytest.fixture(params=["local"])
def service(request, tmp_path, minilm, clock) -> Iterator[MemoryService]:
    """The service on each backend the contract suite runs against.

    Today: the real local backend. The AWS backend (DynamoDB/S3 under moto) joins this
    list when it lands; every contract and evaluation test then runs on both, unchanged.
    """
    if request.param == "local":
        svc = build_local_service(Settings(data_dir=tmp_path / "data"), embedder=minilm, clock=clock)
        yield svc
        svc.store.close()  # type: ignore[attr-defined]
    else:  # pragma: no cover - guarded by params
        raise ValueError(request.param)
