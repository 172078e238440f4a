"""The embedded backend's store: one SQLite database in WAL mode.

:class:`SqliteStore` is both the :class:`~episodic.application.ports.TimelineStore` (episodes, reviews,
idempotency keys, the append-only audit log, the kill-switch) and the
:class:`~episodic.application.ports.RecallIndex` (FTS5 for BM25, embeddings stored with each episode and
searched exactly with numpy over the scoped candidate set). It is composed of one part per
port group, each in its own module over the database of :mod:`.sqlite_database` (schema,
writer connection and reader pool, the one transaction shape):

| module | part | ports it serves |
|---|---|---|
| ``sqlite_writes`` | ``EpisodeWrites`` | ``EpisodeStore.apply`` and ``record_access``; ``ErasureCompaction`` |
| ``sqlite_reads`` | ``EpisodeReads`` | the rest of ``EpisodeStore`` |
| ``sqlite_recall`` | ``RecallReads`` | ``RecallIndex`` |
| ``sqlite_governance`` | ``Governance`` | ``ReviewQueue``, ``AuditLog``, ``TenantSettings`` |
| ``sqlite_maintenance`` | ``Maintenance`` | ``MaintenanceScans``, ``VectorMaintenance`` |

Tenant-facing reads of episodes filter through the one WHERE clause of :mod:`.sqlite_scope`.

Why it is durable: every ``apply`` is one ``BEGIN IMMEDIATE`` transaction with
``synchronous=FULL``, so a write acknowledged to a caller has reached the WAL on disk;
a crash mid-write rolls the open transaction back and loses nothing acknowledged.
The recall index (FTS rows, tags, vectors) is written in the same transaction as the
episode, so it can never drift from the timeline.

Why erased text does not linger: ``secure_delete`` zeroes freed pages, the FTS index is
optimised (its segments rewritten without deleted rows) and the WAL is checkpointed
and truncated after every erasure.
"""

from __future__ import annotations

from pathlib import Path

from episodic.adapters.sqlite.database import SCHEMA_VERSION
from episodic.adapters.sqlite.fts_terms import TermFrequencies
from episodic.adapters.sqlite.governance import Governance
from episodic.adapters.sqlite.maintenance import Maintenance
from episodic.adapters.sqlite.reads import EpisodeReads
from episodic.adapters.sqlite.recall import RecallReads
from episodic.adapters.sqlite.scope_cache import ScopeCache
from episodic.adapters.sqlite.writes import EpisodeWrites
from episodic.adapters.vectors.index import DEFAULT_ANN_THRESHOLD, VectorSearch

__all__ = ["SCHEMA_VERSION", "SqliteStore"]


class SqliteStore(EpisodeWrites, EpisodeReads, RecallReads, Governance, Maintenance):
    """Timeline store, audit log and recall index in one SQLite file."""

    def __init__(
        self, path: Path | str, embedder: str | None = None, ann_threshold: int = DEFAULT_ANN_THRESHOLD
    ) -> None:
        """``embedder`` names the model whose vectors recall compares with a query's: episodes
        embedded by another model take part by BM25 only until they are re-embedded."""
        self.embedder = embedder
        self.vectors = VectorSearch(ann_threshold=ann_threshold, directory=vector_index_directory(Path(path)))
        self.scopes = ScopeCache()
        self.terms = TermFrequencies()
        super().__init__(path)
        self.refresh_search_text()

    def close(self) -> None:
        self.vectors.close()
        super().close()


def vector_index_directory(path: Path) -> Path | None:
    """Where the tenants' vector indexes are kept: beside the database file (none for an
    in-memory database)."""
    return None if str(path) == ":memory:" else path.with_name(f"{path.name}.ann")
