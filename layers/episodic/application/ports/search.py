"""The recall ports: an index that returns scoped candidates with raw signals, and the
projection the timeline's changes keep in step."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from episodic.application.ports.providers import Vector
from episodic.application.ports.store import Scope
from episodic.domain.errors import StorageError
from episodic.domain.model import Episode
from episodic.domain.recall.candidates import Candidate


class PendingVector:
    """A query's embedding that the model may still be computing: an index searches by words
    first and reads the vector (:func:`resolved`) only for its search by meaning, so the two
    overlap. ``wait`` returns the vector; an embedder that failed (``StorageError``) leaves
    ``None`` and :attr:`failed` set, and recall goes on by words, as it does without a vector."""

    def __init__(
        self, wait: Callable[[], Vector | None], ready: Callable[[], bool] | None = None, *, here: bool = False
    ) -> None:
        """``ready``, when the maker of ``wait`` can tell, says whether ``wait`` would return at once;
        ``here``: ``wait`` runs the model on the thread that first reads the vector, so a reader with
        other work to do meanwhile hands that work to another thread first."""
        self._wait: Callable[[], Vector | None] | None = wait
        self._ready = ready
        self.here = here
        self._value: Vector | None = None
        self._lock = threading.Lock()
        self.failed = False

    def ready(self) -> bool:
        """Whether :meth:`value` would answer without waiting (``False`` when that is not known)."""
        return self._wait is None or (self._ready is not None and self._ready())

    def value(self) -> Vector | None:
        """The vector (waited for once, then kept), or ``None`` when it could not be made."""
        with self._lock:
            if self._wait is not None:
                wait, self._wait = self._wait, None
                try:
                    self._value = wait()
                except StorageError:
                    self.failed = True
            return self._value


def resolved(vector: Vector | PendingVector | None) -> Vector | None:
    """The vector itself: waited for when it is still pending."""
    return vector.value() if isinstance(vector, PendingVector) else vector


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
    """A projection of the timeline for recall: returns scoped candidates with raw signals.

    An index that searches words and meaning apart, so that asking for each on its own costs no
    more than asking for both, says so with a class attribute ``searches_apart = True`` and offers
    :meth:`SearchesApart.by_meaning`: recall then asks it for the words while the model embeds the
    question, and for both rounds' meaning at once (:mod:`~episodic.application.usecases.rounds`)."""

    def candidates(
        self,
        scope: Scope,
        query_text: str | None,
        query_vector: Vector | PendingVector | None,
        pool_size: int,
        embedder: str | None = None,
    ) -> RecallCandidates:
        """Only episodes inside ``scope``. With a query: the best ``pool_size`` by BM25 and by
        cosine, comparing the query vector only with vectors made by ``embedder`` (the model
        that made the query vector). Without a query: the newest ``pool_size``.

        A pending vector is read with :func:`resolved` as late as the index can (after its
        search by words, where the two are separate); resolved to ``None``, the search is by
        words alone."""
        ...


@dataclass(frozen=True)
class Leaning:
    """A query vector given as another of the same request's vectors (the one at ``base``) leaning
    toward ``toward`` by ``weight``: ``base + weight * toward``, made unit length (both are unit
    vectors). Its cosine with a stored unit vector is ``(cos(base) + weight * cos(toward))`` over
    that sum's length, so an index that has the cosines of ``toward`` already (measured by
    :meth:`SearchesApart.place`) and those of ``base`` needs no product of its own for it."""

    base: int
    toward: Vector
    weight: float


class SearchesApart(RecallIndex, Protocol):
    """A :class:`RecallIndex` that says ``searches_apart = True``."""

    searches_apart: bool

    def place(self, scope: Scope, embedder: str | None = None, toward: Vector | None = None) -> Any:
        """What a search of ``scope`` by meaning reads before it needs a vector, read now (while the
        model embeds the question) and handed back to :meth:`by_meaning`; opaque to the caller. With
        ``toward`` (a :class:`Leaning`'s), the cosines of the scope with it are measured now too."""
        ...

    def by_meaning(
        self,
        scope: Scope,
        vectors: Sequence[Vector | Leaning],
        pool_size: int,
        embedder: str | None = None,
        placement: Any = None,
    ) -> list[RecallCandidates]:
        """For each of ``vectors``, the best ``pool_size`` of ``scope`` by cosine alone (as
        :meth:`RecallIndex.candidates` finds them with no query text), in one request; with what
        :meth:`place` read for the same scope and model, that is not read again."""
        ...


class RecallProjection(Protocol):
    """A search index fed from the timeline (the stream processor keeps OpenSearch in step)."""

    def upsert(self, episode: Episode, vector: Vector | None, embedder: str | None = None) -> None: ...

    def remove(self, tenant_id: str, event_id: str) -> None: ...
