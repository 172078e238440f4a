"""The recall ports: an index that returns scoped candidates with raw signals, and the
projection the timeline's changes keep in step."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from episodic.application.ports.providers import Vector
from episodic.application.ports.store import Scope
from episodic.domain.model import Episode
from episodic.domain.recall.ranking import Candidate


@dataclass(frozen=True)
class RecallCandidates:
    """What an index found for one recall, and what it could not do.

    ``degraded`` names each part of the search that failed or came back incomplete
    (``lexical_partial``, ``semantic_unavailable``, ``fallback_index``, ...): recall still
    answers with what it has and tells the caller, instead of failing or pretending.
    """

    items: list[Candidate] = field(default_factory=list)
    degraded: tuple[str, ...] = ()


class RecallIndex(Protocol):
    """A projection of the timeline for recall: returns scoped candidates with raw signals."""

    def candidates(
        self,
        scope: Scope,
        query_text: str | None,
        query_vector: Vector | None,
        pool_size: int,
        embedder: str | None = None,
    ) -> RecallCandidates:
        """Only episodes inside ``scope``. With a query: the best ``pool_size`` by BM25 and by
        cosine, comparing the query vector only with vectors made by ``embedder`` (the model
        that made the query vector). Without a query: the newest ``pool_size``."""
        ...


class RecallProjection(Protocol):
    """A search index fed from the timeline (the stream processor keeps OpenSearch in step)."""

    def upsert(self, episode: Episode, vector: Vector | None, embedder: str | None = None) -> None: ...

    def remove(self, tenant_id: str, event_id: str) -> None: ...
