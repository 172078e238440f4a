"""The embedded backend's store: one SQLite database in WAL mode.

:class:`SqliteStore` is the :class:`~episodic.application.ports.TimelineStore` (episodes, reviews,
idempotency keys, the append-only audit log, the kill-switch) and, through :attr:`SqliteStore.recall`,
the :class:`~episodic.application.ports.RecallIndex` (indexed texts and embeddings stored with each
episode, searched in memory with numpy over the scope's rows: BM25 and cosine). It is composed of one
part per port group, each in its own module, all over the one :class:`~.database.Database`
(schema, writer connection and reader pool, the one transaction shape):

| attribute | part (module) | ports |
|---|---|---|
| ``episodes`` | ``Episodes`` (``episodes``) | ``EpisodeStore`` |
| ``reviews``, ``audit_log``, ``tenants`` | ``Governance`` (``governance``) | ``ReviewQueue``, ``AuditLog``, |
| | | ``TenantSettings`` |
| ``scans``, ``vectors`` | ``Maintenance`` (``maintenance``) | ``MaintenanceScans``, ``VectorMaintenance`` |
| ``recall`` | ``RecallReads`` (``recall``) | ``RecallIndex`` |
| ``compaction`` | the ``Database`` itself | ``ErasureCompaction`` |
| ``outbox`` | ``Outbox`` (``outbox``) | ``EventOutbox`` (the audit table, read past a cursor) |

Tenant-facing reads of episodes filter through the one WHERE clause of :mod:`.scope`.

Why it is durable: every change set is part of one ``BEGIN IMMEDIATE`` transaction (a group
commit's) with ``synchronous=FULL``, so a write acknowledged to a caller has reached the WAL
on disk; a crash mid-write rolls the open transaction back and loses nothing acknowledged.
The recall index (indexed texts, tags, vectors) is written in the same transaction as the
episode, so it can never drift from the timeline.

Why erased text does not linger: ``secure_delete`` zeroes freed pages, and the WAL is
checkpointed and truncated after every erasure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from episodic.adapters.sqlite.database import SCHEMA_VERSION, Database
from episodic.adapters.sqlite.episodes import Episodes
from episodic.adapters.sqlite.governance import Governance
from episodic.adapters.sqlite.maintenance import Maintenance
from episodic.adapters.sqlite.outbox import Outbox
from episodic.adapters.sqlite.recall import RecallReads
from episodic.adapters.sqlite.scope_cache import ScopeCache
from episodic.adapters.sqlite.word_index import WordIndex
from episodic.adapters.vectors.index import DEFAULT_ANN_THRESHOLD, VectorSearch

__all__ = ["SCHEMA_VERSION", "SqliteStore"]


class SqliteStore:
    """Timeline store, audit log and recall index in one SQLite file, as parts over one database."""

    def __init__(
        self,
        path: Path | str,
        embedder: str | None = None,
        ann_threshold: int = DEFAULT_ANN_THRESHOLD,
        on_erasures: Callable[[str], None] | None = None,
        on_new_texts: Callable[[str, Sequence[str]], None] | None = None,
    ) -> None:
        """``embedder`` names the model whose vectors recall compares with a query's: episodes
        embedded by another model take part by BM25 only until they are re-embedded. ``on_erasures``
        hears of a tenant whose episodes any process deleted (this one's at once, another's at this
        one's next search of it: :class:`RecallReads`); ``on_new_texts``
        of a tenant's texts written by any process, when this one first reads them (:class:`WordIndex`)."""
        self.database = Database(path)
        self.vector_search = VectorSearch(ann_threshold=ann_threshold, directory=vector_index_directory(Path(path)))
        self.word_index = WordIndex(on_new_texts)
        self.episodes = Episodes(self.database, self.vector_search, self.word_index, on_erasures)
        governance = Governance(self.database)
        self.reviews, self.audit_log, self.tenants = governance, governance, governance
        maintenance = Maintenance(self.database, self.vector_search, self.word_index)
        self.scans, self.vectors = maintenance, maintenance
        self.recall = RecallReads(
            self.database, self.vector_search, self.word_index, ScopeCache(), embedder, on_erasures
        )
        self.compaction = self.database
        self.outbox = Outbox(self.database)
        maintenance.refresh_search_text()

    def pseudonym_key(self) -> bytes:
        """The key of this store's actor pseudonyms (:mod:`episodic.domain.forgetting.pseudonyms`),
        kept in the database beside what it pseudonymises: a copy of the file carries it."""
        return self.database.pseudonym_key()

    def close(self) -> None:
        self.vector_search.close()
        self.database.close()


def vector_index_directory(path: Path) -> Path | None:
    """Where the tenants' vector indexes are kept: beside the database file (none for an
    in-memory database)."""
    return None if str(path) == ":memory:" else path.with_name(f"{path.name}.ann")
