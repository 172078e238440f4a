"""Exact, scope-first recall straight from the DynamoDB timeline.

Without an OpenSearch collection (small deployments, and the contract tests under moto,
which has no OpenSearch data plane), recall reads the scoped episodes through the most
selective timeline index, then ranks them in-process: BM25 (``bm25s``, English stop
words and Snowball stemming) over their text and cosine similarity over their stored
vectors. It is exact for the scope, and its cost grows with the scope's size, so it
refuses to read more than ``max_scope`` episodes per query: beyond that, configure the
OpenSearch recall index (filtered k-NN and BM25 in one engine).
"""

from __future__ import annotations

from typing import Any

import bm25s
import numpy as np
import numpy.typing as npt
import Stemmer

from episodic.application.ports import PendingVector, RecallCandidates, Scope, ScopeReader, Vector, resolved
from episodic.domain.errors import InvalidRequestError
from episodic.domain.recall.candidates import Candidate
from episodic.domain.recall.languages import indexed, searched


class ScopeTooLargeError(InvalidRequestError):
    """The scope holds more episodes than this index ranks per query (``max_scope``)."""


class DynamoScopedIndex:
    """:class:`~episodic.application.ports.RecallIndex` over a :class:`~episodic.application.ports.ScopeReader` (the
    DynamoDB timeline store)."""

    def __init__(self, store: ScopeReader, max_scope: int = 20_000, embedder: str | None = None) -> None:
        self.store = store
        self.embedder = embedder
        self.max_scope = max_scope
        self._stemmer = Stemmer.Stemmer("english")

    def candidates(
        self,
        scope: Scope,
        query_text: str | None,
        pending: Vector | PendingVector | None,
        pool_size: int,
        embedder: str | None = None,
    ) -> RecallCandidates:
        embedder = embedder or self.embedder
        if query_text is None and pending is None:
            newest = []
            for stored in self.store.read_scope(scope):
                newest.append(Candidate(event_id=stored.episode.event_id))
                if len(newest) == pool_size:
                    break
            return RecallCandidates(newest)

        ids: list[str] = []
        texts: list[str] = []
        vectors: list[Any] = []
        words = searched(query_text) if query_text else None
        stemmed = words is not None and words != query_text  # an English question reads the texts as written
        for stored in self.store.read_scope(scope):
            if len(ids) == self.max_scope:
                raise ScopeTooLargeError(
                    f"the scope holds more than {self.max_scope} episodes; narrow it (actor, project, "
                    "type, tags, time) or configure the OpenSearch recall index",
                    maxScope=self.max_scope,
                )
            ids.append(stored.episode.event_id)
            text = stored.episode.search_text()
            texts.append(indexed(text) if stemmed else text)
            same_model = stored.vector is not None and stored.embedder == embedder
            vectors.append(stored.vector if same_model else None)  # never compare two models' vectors
        if not ids:
            return RecallCandidates()

        lexical = self._lexical(texts, words)
        semantic = np.zeros(len(ids), dtype=np.float32)
        compared = np.zeros(len(ids), dtype=bool)
        query_vector = resolved(pending)  # after the words: the model may have run meanwhile
        if query_vector is not None:
            query = np.asarray(query_vector, dtype=np.float32)
            for i, vector in enumerate(vectors):
                if vector is not None:
                    semantic[i] = float(np.asarray(vector, dtype=np.float32) @ query)
                    compared[i] = True

        # Only episodes a signal speaks for: one whose vector was not compared is no semantic hit.
        chosen = {i for i in np.argsort(-semantic)[:pool_size].tolist() if compared[i]}
        chosen |= {i for i in np.argsort(-lexical)[:pool_size].tolist() if lexical[i] > 0}
        return RecallCandidates(
            [Candidate(event_id=ids[i], lexical=float(lexical[i]), semantic=float(semantic[i])) for i in sorted(chosen)]
        )

    def _lexical(self, texts: list[str], query_text: str | None) -> npt.NDArray[np.float32]:
        """BM25 of every text in the scope against the query (zeros without known query terms)."""
        lexical = np.zeros(len(texts), dtype=np.float32)
        if not query_text:
            return lexical
        query_tokens = bm25s.tokenize(
            [query_text], stopwords="en", stemmer=self._stemmer, show_progress=False, return_ids=False
        )[0]
        if not query_tokens:
            return lexical
        retriever = bm25s.BM25()
        retriever.index(
            bm25s.tokenize(texts, stopwords="en", stemmer=self._stemmer, show_progress=False), show_progress=False
        )
        known = [tok for tok in query_tokens if tok in retriever.vocab_dict]
        return np.asarray(retriever.get_scores(known), dtype=np.float32) if known else lexical
