"""Recall at scale: one OpenSearch index serving filtered k-NN and BM25, fed from the timeline.

**OpenSearch 2.13 or newer.** Filtered k-NN returned fewer than ``k`` hits before 2.10 and
exact-search inner-product scores differed before 2.13 (details in
:mod:`~episodic.adapters.opensearch.schema`). The cluster's version (``GET /``) is
checked when the index is ensured (the stream processor, on start) and before the first
recall of each instance; an older cluster, or one that is not OpenSearch, is refused with
:class:`~episodic.adapters.opensearch.schema.RecallIndexSetupError`.

The index is a *projection* of the DynamoDB timeline (the stream processor keeps it in step
through :class:`~episodic.entrypoints.dynamodb_stream.processor.RecallProjection`). It holds, per
episode, only what recall filters and matches on: the scope fields as keywords and dates,
``episode.search_text()`` for BM25 and the unit-length embedding. No other episode text is
stored; recall re-reads the episodes from the timeline and re-checks the scope there.

**Scope first.** Every search carries the :class:`~episodic.application.ports.Scope` as a filter, tenant
first -- inside the ``knn`` clause for the k-NN search, so the engine never post-filters a
global top ``k`` (the bodies are built, and explained, in
:mod:`~episodic.adapters.opensearch.queries`). A query vector made by another model than
this index's skips the k-NN search altogether.

**Signals, not a ranking.** With a query, the k-NN search and the counts of the query's words
over what the caller may read go in one ``_msearch`` round trip, and the search by words, each
word weighed by those counts, in a second (the engine's own BM25 statistics are the whole
index's: :mod:`~episodic.adapters.opensearch.queries`).
:meth:`OpenSearchRecallIndex.candidates` returns the union of both hit lists with their raw
signals: ``lexical`` = the search by words' ``_score``, ``semantic`` = the cosine similarity
recovered from faiss' inner-product score. Fusion and ranking are the service's
job, not OpenSearch's: :class:`~episodic.domain.recall.ranking.Ranker` normalises BM25 by the best score
in the pool and combines it with the cosine, recency, importance, trust and confidence, and
reports every component. (A candidate found by only one of the two searches carries 0 for
the other signal.)

**What worked is kept, and what did not is said.** ``_msearch`` answers each search on its
own. A search that failed adds ``semantic_unavailable`` / ``lexical_unavailable`` to
:attr:`~episodic.application.ports.RecallCandidates.degraded` and the other search's hits still count;
one that timed out or lost shards (``timed_out``, ``_shards.failed``) keeps the hits it has
and adds ``semantic_partial`` / ``lexical_partial`` (``listing_partial`` for the no-query
listing). Only when every search failed is it a :class:`~episodic.domain.errors.StorageError`.

**Writes** are idempotent: the document id is a SHA-256 of tenant and event id, in hex --
deterministic, so a redelivered stream record rewrites the same document, and free of
characters a URL path must escape (``#`` or ``:`` would be percent-encoded, and SigV4
signers and services have disagreed on how to canonicalise encoded paths). Hits are
mapped back through the ``tenantId`` and ``eventId`` fields of their ``_source``, never by
parsing an id, and a hit of another tenant is dropped. Every write goes through the index
alias with ``require_alias=true``, so no write can create the index without its mapping
(see :mod:`~episodic.adapters.opensearch.schema`); a write that finds the index gone
re-creates it, mapping included, and writes again. A delete of a missing document is a
no-op. Bulk loads retry documents rejected with 429 with exponential backoff.

**Errors** become :class:`~episodic.domain.errors.StorageError` carrying the operation, the HTTP
status and the error type only (:mod:`~episodic.adapters.opensearch.client`).

Caveat for Serverless: AWS documents that *vector search* collections of OpenSearch
Serverless assign document ids themselves and refuse custom ids on index requests, and
Serverless has neither index aliases nor a cluster version to check; this adapter is
written for managed domains (service ``es``).
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Iterable, Iterator
from contextlib import suppress
from datetime import UTC, datetime
from typing import Any

from opensearchpy import OpenSearch
from opensearchpy.exceptions import NotFoundError
from opensearchpy.helpers import streaming_bulk

from episodic.adapters.opensearch.client import error_type, storage_errors
from episodic.adapters.opensearch.queries import (
    lexical_search,
    newest_search,
    scope_filter,
    semantic_search,
    word_counts,
)
from episodic.adapters.opensearch.schema import check_cluster, ensure_index
from episodic.application.ports import PendingVector, RecallCandidates, Scope, Vector, resolved
from episodic.domain.errors import EpisodicError, InvalidRequestError, StorageError
from episodic.domain.model import Episode
from episodic.domain.recall.candidates import Candidate, word_weights
from episodic.domain.recall.languages import indexed, searched
from episodic.domain.recall.query import lexical_terms

logger = logging.getLogger(__name__)

WORDS_SEARCHED = 32
"""At most this many of a query's words are searched."""
BULK_CHUNK_DOCS = 500
BULK_CHUNK_BYTES = 10 * 1024 * 1024  # the smallest HTTP payload limit of managed domains


def cosine_from_score(score: float) -> float:
    """Undo faiss' inner-product scoring: OpenSearch reports ``1 + ip`` for ``ip >= 0`` and
    ``1 / (1 - ip)`` for ``ip < 0``. Vectors are unit length, so ``ip`` is the cosine."""
    if score >= 1.0:
        ip = score - 1.0
    elif score > 0.0:
        ip = 1.0 - 1.0 / score
    else:
        ip = -1.0
    return max(-1.0, min(1.0, ip))


def _as_list(vector: Vector) -> list[float]:
    return [float(x) for x in vector]


def _doc_time(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _total(counted: dict[str, Any]) -> int:
    """The number of texts a count (:func:`word_counts`) found."""
    total = counted.get("hits", {}).get("total", {})
    value = total.get("value") if isinstance(total, dict) else total
    return value if isinstance(value, int) and value >= 0 else 0


def _incomplete(result: dict[str, Any], search: str) -> bool:
    """Whether a search answered with only part of the index (it timed out, or shards failed)."""
    shards = result.get("_shards")
    failed = shards.get("failed", 0) if isinstance(shards, dict) else 0
    timed_out = result.get("timed_out") is True
    if timed_out or (isinstance(failed, int) and failed > 0):
        logger.warning("opensearch %s search incomplete: timed_out=%s failed_shards=%s", search, timed_out, failed)
        return True
    return False


class OpenSearchRecallIndex:
    """:class:`~episodic.application.ports.RecallIndex` and :class:`RecallProjection` over one OpenSearch index,
    reached through the alias ``index``."""

    def __init__(
        self,
        client: OpenSearch,
        index: str,
        dimension: int,
        embedder: str,
        max_retries: int = 5,
        *,
        initial_backoff: int = 2,
    ) -> None:
        self.client = client
        self.index = index
        self.dimension = dimension
        self.embedder = embedder
        self.max_retries = max_retries
        self.initial_backoff = initial_backoff
        self._cluster_version: str | None = None

    # ------------------------------------------------------------------ index

    def verify_cluster(self) -> str:
        """The cluster's version, once it passed :func:`check_cluster` (asked once per instance)."""
        if self._cluster_version is None:
            with storage_errors("info"):
                info = self.client.info()
            self._cluster_version = check_cluster(info)
        return self._cluster_version

    def ensure_index(self) -> bool:
        """Check the cluster, then create the index with its mapping behind the alias if it is
        missing; True when it was created."""
        self.verify_cluster()
        return ensure_index(self.client, self.index, self.dimension)

    # ------------------------------------------------------------------ projection

    def document(self, episode: Episode, vector: Vector | None, embedder: str | None = None) -> dict[str, Any]:
        """The indexed form of an episode. The vector is kept only if it is this index's model's
        (``embedder``, when the caller knows it) and has this index's dimension."""
        doc: dict[str, Any] = {
            "eventId": episode.event_id,
            "tenantId": episode.tenant_id,
            "actorId": episode.actor_id,
            "eventType": episode.event_type.value,
            "status": episode.status.value,
            "privacyClass": episode.privacy_class.value,
            "tags": list(episode.tags),
            "occurredAt": _doc_time(episode.occurred_at),
            "text": indexed(episode.search_text()),
        }
        if episode.project_id is not None:
            doc["projectId"] = episode.project_id
        if episode.retention.expires_at is not None:
            doc["expiresAt"] = _doc_time(episode.retention.expires_at)
        if vector is not None:
            if embedder not in (None, self.embedder):
                logger.warning("vector of another embedder not indexed: event_id=%s", episode.event_id)
            elif len(vector) != self.dimension:
                logger.warning(
                    "vector of %d dimensions not indexed (index has %d): event_id=%s",
                    len(vector),
                    self.dimension,
                    episode.event_id,
                )
            else:
                doc["embedder"] = self.embedder
                doc["vector"] = _as_list(vector)
        return doc

    @staticmethod
    def doc_id(tenant_id: str, event_id: str) -> str:
        """Deterministic and URL-safe (ids cannot contain ``/``, so the pair is unambiguous)."""
        return hashlib.sha256(f"{tenant_id}/{event_id}".encode()).hexdigest()

    def upsert(self, episode: Episode, vector: Vector | None, embedder: str | None = None) -> None:
        doc_id = self.doc_id(episode.tenant_id, episode.event_id)
        body = self.document(episode, vector, embedder)
        with storage_errors("upsert"):
            try:
                self.client.index(index=self.index, id=doc_id, body=body, require_alias=True)
            except NotFoundError as exc:
                if error_type(exc.error) != "index_not_found_exception":
                    raise
                # The alias went with its index: re-create both, mapping included, then write.
                logger.error("recall index %s is gone; re-creating it: rebuild it from the timeline", self.index)
                self.ensure_index()
                self.client.index(index=self.index, id=doc_id, body=body, require_alias=True)

    def remove(self, tenant_id: str, event_id: str) -> None:
        with storage_errors("remove"), suppress(NotFoundError):  # already gone: removal is idempotent
            self.client.delete(index=self.index, id=self.doc_id(tenant_id, event_id))

    def bulk_upsert(self, items: Iterable[tuple[Episode, Vector | None]]) -> int:
        """Index many episodes (backfills, re-indexing); returns how many were indexed.

        Call :meth:`ensure_index` first: like every write, this one never creates the index
        (documents sent while the alias is missing fail with ``index_not_found_exception``).
        Documents rejected with 429 are retried up to ``max_retries`` times, waiting
        ``initial_backoff`` seconds, doubling each time. Anything still failing raises
        :class:`StorageError` naming the document ids and statuses, never their content."""
        actions = (
            {
                "_op_type": "index",
                "_id": self.doc_id(episode.tenant_id, episode.event_id),
                "_source": self.document(episode, vector),
            }
            for episode, vector in items
        )
        indexed = 0
        failed: list[dict[str, Any]] = []
        with storage_errors("bulk_upsert"):
            for ok, result in streaming_bulk(
                self.client,
                actions,
                index=self.index,
                require_alias=True,
                chunk_size=BULK_CHUNK_DOCS,
                max_chunk_bytes=BULK_CHUNK_BYTES,
                max_retries=self.max_retries,
                initial_backoff=self.initial_backoff,
                raise_on_error=False,
            ):
                if ok:
                    indexed += 1
                    continue
                item = next(iter(result.values()))
                error = item.get("error")
                kind = error.get("type") if isinstance(error, dict) else None
                failed.append({"id": item.get("_id"), "status": item.get("status"), "type": kind})
        if failed:
            logger.warning("bulk upsert: %d indexed, %d failed: %s", indexed, len(failed), failed[:20])
            raise StorageError(
                f"{len(failed)} episode(s) could not be indexed", operation="bulk_upsert", failed=failed[:100]
            )
        return indexed

    # ------------------------------------------------------------------ recall

    def candidates(
        self,
        scope: Scope,
        query_text: str | None,
        pending: Vector | PendingVector | None,
        pool_size: int,
        embedder: str | None = None,
    ) -> RecallCandidates:
        """Scoped candidates with raw signals (BM25 score, cosine); ranking is the service's.

        ``embedder`` names the model that made the query vector. This index holds vectors of
        one model only; a query vector from another one is not compared with them (the
        k-NN search is left out and every candidate's ``semantic`` is 0). One request carries
        both searches, so a pending vector is waited for first."""
        query_vector = resolved(pending)
        filters = scope_filter(scope)
        if pool_size < 1:
            raise InvalidRequestError("pool_size must be at least 1")
        text = query_text.strip() if query_text else ""
        if not text and query_vector is None:
            return self._newest(scope, filters, pool_size)

        searches: dict[str, dict[str, Any]] = {}
        if query_vector is not None and embedder not in (None, self.embedder):
            logger.warning("query vector of embedder %s not compared with %s vectors", embedder, self.embedder)
        elif query_vector is not None:
            if len(query_vector) != self.dimension:
                raise EpisodicError(
                    f"the query vector has {len(query_vector)} dimensions; the recall index holds {self.dimension}"
                )
            searches["semantic"] = semantic_search(filters, _as_list(query_vector), pool_size, self.embedder)
        words = lexical_terms(searched(text))[:WORDS_SEARCHED] if text else []
        if not searches and not words:
            return RecallCandidates()
        self.verify_cluster()
        bodies = [*searches.values(), *(word_counts(scope_filter(scope.readable()), words) if words else [])]
        with storage_errors("recall"):
            response = self.client.msearch(index=self.index, body=[line for body in bodies for line in ({}, body)])
        names, answers = list(searches), response["responses"][: len(searches)]
        if words:
            names.append("lexical")
            answers.append(self._by_words(filters, words, response["responses"][len(answers) :], pool_size))
        return self._merge(scope, names, answers)

    def _by_words(
        self, filters: list[dict[str, Any]], words: list[str], counted: list[dict[str, Any]], pool_size: int
    ) -> dict[str, Any]:
        """The search by words' answer, its words weighed by the counts of :func:`word_counts`: a
        count that failed stands for it, and one that was incomplete marks it incomplete."""
        failed = next((c for c in counted if "error" in c or c.get("status", 200) >= 300), None)
        if failed is not None:
            return failed
        total, *holding = (_total(c) for c in counted)
        weights = word_weights(total, dict(zip(words, holding, strict=True)))
        if not weights:  # the scope holds none of the words
            return {"hits": {"hits": []}}
        try:
            with storage_errors("recall"):
                body = [{}, lexical_search(filters, weights, pool_size)]
                answer: dict[str, Any] = self.client.msearch(index=self.index, body=body)["responses"][0]
        except StorageError as error:  # what the first request found still counts
            return {"error": {"type": error.details.get("type")}, "status": error.details.get("status") or 503}
        if any(_incomplete(c, "word count") for c in counted):
            answer = {**answer, "timed_out": True}
        return answer

    def _merge(self, scope: Scope, searches: list[str], responses: list[dict[str, Any]]) -> RecallCandidates:
        """The union of the searches' hits, and what was missing; an error only if nothing answered."""
        found: dict[str, dict[str, float]] = {}
        degraded: list[str] = []
        failures: list[tuple[Any, str]] = []
        for search, result in zip(searches, responses, strict=True):
            if "error" in result or result.get("status", 200) >= 300:
                error = result.get("error")
                failure = (result.get("status"), error_type(error.get("type") if isinstance(error, dict) else None))
                logger.warning("opensearch %s search failed: status=%s type=%s", search, *failure)
                failures.append(failure)
                degraded.append(f"{search}_unavailable")
                continue
            if _incomplete(result, search):
                degraded.append(f"{search}_partial")
            for event_id, score in self._hits(scope, result):
                signals = found.setdefault(event_id, {"lexical": 0.0, "semantic": 0.0})
                signals[search] = cosine_from_score(score) if search == "semantic" else score
        if len(failures) == len(searches):
            status, kind = failures[0]
            raise StorageError(
                f"the recall index failed (recall: HTTP {status} {kind})", operation="recall", status=status, type=kind
            )
        items = [Candidate(event_id=k, lexical=v["lexical"], semantic=v["semantic"]) for k, v in found.items()]
        return RecallCandidates(items, tuple(degraded))

    def _newest(self, scope: Scope, filters: list[dict[str, Any]], pool_size: int) -> RecallCandidates:
        self.verify_cluster()
        with storage_errors("recall"):
            response = self.client.search(index=self.index, body=newest_search(filters, pool_size))
        items = [Candidate(event_id=event_id) for event_id, _ in self._hits(scope, response)]
        return RecallCandidates(items, ("listing_partial",) if _incomplete(response, "listing") else ())

    def _hits(self, scope: Scope, result: dict[str, Any]) -> Iterator[tuple[str, float]]:
        """(eventId, score) of each hit, read from its ``_source``; a hit outside the scope's
        tenant (or without ids) is dropped, loudly."""
        for hit in result.get("hits", {}).get("hits", []):
            source = hit.get("_source")
            tenant, event_id = (
                (source.get("tenantId"), source.get("eventId")) if isinstance(source, dict) else (None, None)
            )
            if tenant != scope.tenant_id or not isinstance(event_id, str) or not event_id:
                logger.error("recall index returned a document outside the tenant scope; dropped")
                continue
            score = hit.get("_score")
            yield event_id, float(score) if isinstance(score, int | float) and math.isfinite(score) else 0.0
