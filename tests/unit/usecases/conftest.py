"""Fixtures for the use-case unit tests: the use cases over a real :class:`Deps` -- the real
SQLite store (also the recall index) in a temporary directory, the real folder archive, the
real write policy and ranker -- with test doubles only for the embedding model, the clock
(``clock`` from ``tests/conftest.py``) and what a test must observe (the review notifier)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from episodic.adapters.files.archive import FolderArchive
from episodic.adapters.sqlite.store import SqliteStore
from episodic.adapters.summarisers.extractive import ExtractiveSummariser
from episodic.application.settings import Settings
from episodic.application.usecases.deps import Deps
from episodic.application.usecases.reads import Reads
from episodic.application.usecases.writes import Writes
from episodic.domain.forgetting.pseudonyms import Pseudonyms
from episodic.domain.policy import WritePolicy
from episodic.domain.recall.ranking import Ranker
from tests.support.doubles import HashingTestEmbedder
from tests.unit.usecases.doubles import CompactionSpyDouble, RecordingReviewNotifierDouble


@pytest.fixture(autouse=True)
def _no_embedding_model() -> Iterator[None]:
    """These tests must never load the embedding model (torch): they would stop being fast.
    Checked per test, since another module in the same worker may have loaded it before."""
    loaded_before = "torch" in sys.modules
    yield
    if not loaded_before:
        assert "torch" not in sys.modules, "a use-case unit test imported torch"


@pytest.fixture
def embedder() -> HashingTestEmbedder:
    return HashingTestEmbedder()


@pytest.fixture(scope="session")
def empty_database(tmp_path_factory) -> Path:
    """An empty database made once by the real store; each test opens its own copy (creating the
    schema afresh costs ~40 ms of fsyncs per test, a copy ~1 ms)."""
    path = tmp_path_factory.mktemp("empty-store") / "episodic.db"
    SqliteStore(path).close()
    return path


@pytest.fixture
def store(tmp_path, embedder, empty_database) -> Iterator[SqliteStore]:
    shutil.copyfile(empty_database, tmp_path / "episodic.db")
    store = SqliteStore(tmp_path / "episodic.db", embedder=embedder.name)
    yield store
    store.close()


@pytest.fixture
def archive(tmp_path, store) -> FolderArchive:
    return FolderArchive(tmp_path / "archive", Pseudonyms(store.pseudonym_key))


@pytest.fixture
def notifier() -> RecordingReviewNotifierDouble:
    return RecordingReviewNotifierDouble()


@pytest.fixture
def compaction(store) -> CompactionSpyDouble:
    return CompactionSpyDouble(store.compaction)


@pytest.fixture
def deps(store, archive, embedder, notifier, compaction, clock) -> Deps:
    settings = Settings()
    return Deps.over_store(
        store,
        compaction=compaction,
        index=store.recall,
        archive=archive,
        embedder=embedder,
        notifier=notifier,
        summariser=ExtractiveSummariser(embedder),
        settings=settings,
        policy=WritePolicy(),
        clock=clock,
        ranker=Ranker(settings.ranking_weights()),
        pseudonyms=archive.pseudonyms,
        backend="unit-sqlite",
    )


@pytest.fixture
def writes(deps) -> Writes:
    return Writes(deps)


@pytest.fixture
def reads(deps) -> Reads:
    return Reads(deps)
