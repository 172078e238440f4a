"""Recall at scale: one OpenSearch index serving filtered k-NN and BM25, fed from the timeline.

The index is a *projection* of the DynamoDB timeline (the stream processor keeps it in step
through :class:`~episodic.adapters.aws.stream_processor.RecallProjection`). It holds, per
episode, only what recall filters and matches on: the scope fields as keywords and dates,
``episode.search_text()`` for BM25 and the unit-length embedding. No other episode text is
stored; recall re-reads the episodes from the timeline and re-checks the scope there.

**Scope first.** Every query carries one filter built from the :class:`~episodic.ports.Scope`
-- tenant (always, first), statuses, privacy classes, actor, project, event types, every tag,
the occurrence window and retention (``expiresAt`` missing or still in the future). The
k-NN query carries it *inside* the ``knn`` clause (faiss efficient filtering, OpenSearch
2.9+), so the engine returns the ``k`` nearest episodes of the scope, never a post-filtered
remainder of a global top ``k``. The k-NN filter also requires ``embedder`` = this index's
embedder, so vectors of another model are never compared with the query's (a query vector
made by another model skips the k-NN search altogether). The lexical
query and the no-query listing use the scope filter without that term: an episode indexed
without a vector (or with another model's) stays findable by its text and by time.

**Signals, not a ranking.** With a query, the k-NN and BM25 searches go in one ``_msearch``
round trip and :meth:`OpenSearchRecallIndex.candidates` returns the union of both hit lists
with their raw signals: ``lexical`` = the BM25 ``_score``, ``semantic`` = the cosine
similarity recovered from faiss' inner-product score. Fusion and ranking are the service's
job, not OpenSearch's: :class:`~episodic.ranking.Ranker` normalises BM25 by the best score
in the pool and combines it with the cosine, recency, importance, trust and confidence, and
reports every component. (A candidate found by only one of the two searches carries 0 for
the other signal.)

**Writes** are idempotent: the document id is ``<tenantId>#<eventId>`` (tenant ids cannot
contain ``#``) and every write is an ``index`` operation, so a redelivered stream record
rewrites the same document. A delete of a missing document is a no-op. Bulk loads retry
documents rejected with 429 with exponential backoff.

**Errors** from ``opensearchpy`` become :class:`~episodic.errors.StorageError` carrying the
operation, the HTTP status and the error type only: OpenSearch error reasons can quote
document content (a mapping failure previews the field's value), so they never reach a
message or a log line from here.

Caveat for Serverless: AWS documents that *vector search* collections of OpenSearch
Serverless assign document ids themselves and refuse custom ids on index requests; the
id-keyed idempotent upsert here is written for managed domains (service ``es``). Check the
collection type before pointing this adapter at a Serverless collection.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlparse

from opensearchpy import OpenSearch, RequestsAWSV4SignerAuth, RequestsHttpConnection
from opensearchpy.exceptions import ConnectionError as OpenSearchConnectionError
from opensearchpy.exceptions import NotFoundError, OpenSearchException, TransportError
from opensearchpy.helpers import streaming_bulk

from episodic.errors import EpisodicError, InvalidRequestError, StorageError
from episodic.model import Episode
from episodic.ports import RecallCandidates, Scope, Vector
from episodic.ranking import Candidate

logger = logging.getLogger(__name__)

SERVICES = ("es", "aoss")
"""SigV4 service names: ``es`` for managed domains, ``aoss`` for Serverless collections."""

HNSW_M = 16
HNSW_EF_CONSTRUCTION = 128
BULK_CHUNK_DOCS = 500
BULK_CHUNK_BYTES = 10 * 1024 * 1024  # the smallest HTTP payload limit of managed domains
_ERROR_TYPE = re.compile(r"^[a-z_]{1,80}$")


def client_for(endpoint: str, region: str, service: str = "es", *, timeout: float = 10.0) -> OpenSearch:
    """The one place a client is built: HTTPS with certificate checks, every request SigV4-signed.

    ``endpoint`` is the domain or collection endpoint (``https://search-x.eu-west-1.es.amazonaws.com``
    or ``https://abc123.eu-west-1.aoss.amazonaws.com``; the scheme may be omitted). Credentials
    come from the default boto3 chain (the Lambda role), refreshed as they expire.
    """
    if service not in SERVICES:
        raise ValueError(f"service must be one of {SERVICES}, not {service!r}")
    parsed = urlparse(endpoint if "://" in endpoint else f"https://{endpoint}")
    if parsed.scheme != "https" or not parsed.hostname:
        raise ValueError("the OpenSearch endpoint must be an https:// URL or a host name")
    import boto3

    credentials = boto3.Session().get_credentials()
    if credentials is None:
        raise ValueError("no AWS credentials found to sign OpenSearch requests")
    return OpenSearch(
        hosts=[{"host": parsed.hostname, "port": parsed.port or 443}],
        http_auth=RequestsAWSV4SignerAuth(credentials, region, service),
        use_ssl=True,
        verify_certs=True,
        connection_class=RequestsHttpConnection,
        timeout=timeout,
        max_retries=2,
        retry_on_timeout=True,
    )


def index_body(dimension: int) -> dict[str, Any]:
    """Settings and mapping of the recall index (``dynamic: strict``: nothing else gets stored)."""
    keyword = {"type": "keyword"}
    date = {"type": "date", "format": "strict_date_optional_time||epoch_millis"}
    return {
        "settings": {"index": {"knn": True}},
        "mappings": {
            "dynamic": "strict",
            "properties": {
                "eventId": keyword,
                "tenantId": keyword,
                "actorId": keyword,
                "projectId": keyword,
                "eventType": keyword,
                "status": keyword,
                "privacyClass": keyword,
                "tags": keyword,
                "embedder": keyword,
                "occurredAt": date,
                "expiresAt": date,
                "text": {"type": "text", "analyzer": "english"},
                "vector": {
                    "type": "knn_vector",
                    "dimension": dimension,
                    "method": {
                        "name": "hnsw",
                        "engine": "faiss",
                        "space_type": "innerproduct",
                        "parameters": {"m": HNSW_M, "ef_construction": HNSW_EF_CONSTRUCTION},
                    },
                },
            },
        },
    }


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


def _as_list(vector: Sequence[float]) -> list[float]:
    return [float(x) for x in vector]


def _doc_time(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _ms_floor(value: datetime) -> str:
    """A bound at millisecond precision (OpenSearch ``date`` keeps milliseconds, truncated)."""
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _ms_ceil(value: datetime) -> datetime:
    value = value.astimezone(UTC)
    if value.microsecond % 1000:
        value += timedelta(microseconds=1000 - value.microsecond % 1000)
    return value


def _describe(error: OpenSearchException) -> tuple[Any, str]:
    """Status and error type of an ``opensearchpy`` error -- never its reason text."""
    if isinstance(error, OpenSearchConnectionError):
        return None, "connection_error"
    if isinstance(error, TransportError):
        kind = error.error if isinstance(error.error, str) and _ERROR_TYPE.match(error.error) else "unknown"
        return error.status_code, kind
    return None, type(error).__name__


@contextmanager
def _storage_errors(operation: str) -> Iterator[None]:
    try:
        yield
    except OpenSearchException as exc:
        status, kind = _describe(exc)
        logger.warning("opensearch %s failed: status=%s type=%s", operation, status, kind)
        if status is None:
            message = f"the recall index is unreachable ({operation}: {kind})"
        else:
            message = f"the recall index failed ({operation}: HTTP {status} {kind})"
        raise StorageError(message, operation=operation, status=status, type=kind) from None


class OpenSearchRecallIndex:
    """:class:`~episodic.ports.RecallIndex` and :class:`RecallProjection` over one OpenSearch index."""

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

    # ------------------------------------------------------------------ index

    def ensure_index(self) -> bool:
        """Create the index with its mapping if it does not exist; True when it was created."""
        with _storage_errors("ensure_index"):
            if self.client.indices.exists(index=self.index):
                return False
            try:
                self.client.indices.create(index=self.index, body=index_body(self.dimension))
            except TransportError as exc:
                if exc.status_code == 400 and exc.error == "resource_already_exists_exception":
                    return False  # another writer created it between the check and the create
                raise
        return True

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
            "text": episode.search_text(),
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
        return f"{tenant_id}#{event_id}"

    def upsert(self, episode: Episode, vector: Vector | None, embedder: str | None = None) -> None:
        with _storage_errors("upsert"):
            self.client.index(
                index=self.index,
                id=self.doc_id(episode.tenant_id, episode.event_id),
                body=self.document(episode, vector, embedder),
            )

    def remove(self, tenant_id: str, event_id: str) -> None:
        with _storage_errors("remove"), suppress(NotFoundError):  # already gone: removal is idempotent
            self.client.delete(index=self.index, id=self.doc_id(tenant_id, event_id))

    def bulk_upsert(self, items: Iterable[tuple[Episode, Vector | None]]) -> int:
        """Index many episodes (backfills, re-indexing); returns how many were indexed.

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
        with _storage_errors("bulk_upsert"):
            for ok, result in streaming_bulk(
                self.client,
                actions,
                index=self.index,
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

    def scope_filter(self, scope: Scope) -> list[dict[str, Any]]:
        """The scope as ``bool.filter`` clauses; the tenant term always comes first."""
        if not scope.tenant_id:
            raise InvalidRequestError("recall needs a tenant scope")
        clauses: list[dict[str, Any]] = [
            {"term": {"tenantId": scope.tenant_id}},
            {"terms": {"status": [s.value for s in scope.statuses]}},
            {"terms": {"privacyClass": [p.value for p in scope.privacy_classes]}},
        ]
        if scope.actor_id:
            clauses.append({"term": {"actorId": scope.actor_id}})
        if scope.project_id:
            clauses.append({"term": {"projectId": scope.project_id}})
        if scope.event_types:
            clauses.append({"terms": {"eventType": [t.value for t in scope.event_types]}})
        clauses.extend({"term": {"tags": tag}} for tag in scope.tags)
        window: dict[str, str] = {}
        if scope.occurred_after is not None:
            window["gte"] = _ms_floor(scope.occurred_after)
        if scope.occurred_before is not None:
            window["lt"] = _ms_floor(_ms_ceil(scope.occurred_before))
        if window:
            clauses.append({"range": {"occurredAt": window}})
        clauses.append(
            {
                "bool": {
                    "should": [
                        {"bool": {"must_not": [{"exists": {"field": "expiresAt"}}]}},
                        {"range": {"expiresAt": {"gt": _ms_floor(scope.now)}}},
                    ],
                    "minimum_should_match": 1,
                }
            }
        )
        return clauses

    def candidates(
        self,
        scope: Scope,
        query_text: str | None,
        query_vector: Vector | None,
        pool_size: int,
        embedder: str | None = None,
    ) -> RecallCandidates:
        """Scoped candidates with raw signals (BM25 score, cosine); ranking is the service's.

        ``embedder`` names the model that made ``query_vector``. This index holds vectors of
        one model only; a query vector from another one is not compared with them (the
        k-NN search is left out and every candidate's ``semantic`` is 0)."""
        filters = self.scope_filter(scope)
        if pool_size < 1:
            raise InvalidRequestError("pool_size must be at least 1")
        text = query_text.strip() if query_text else ""
        if not text and query_vector is None:
            return RecallCandidates(self._newest(scope, filters, pool_size))

        searches: list[str] = []
        body: list[dict[str, Any]] = []
        if query_vector is not None and embedder not in (None, self.embedder):
            logger.warning("query vector of embedder %s not compared with %s vectors", embedder, self.embedder)
        elif query_vector is not None:
            if len(query_vector) != self.dimension:
                raise EpisodicError(
                    f"the query vector has {len(query_vector)} dimensions; the recall index holds {self.dimension}"
                )
            knn_filter = {"bool": {"filter": [*filters, {"term": {"embedder": self.embedder}}]}}
            searches.append("semantic")
            body += [
                {},
                {
                    "size": pool_size,
                    "_source": False,
                    "query": {
                        "knn": {
                            "vector": {
                                "vector": _as_list(query_vector),
                                "k": pool_size,
                                "filter": knn_filter,
                            }
                        }
                    },
                },
            ]
        if text:
            searches.append("lexical")
            body += [
                {},
                {
                    "size": pool_size,
                    "_source": False,
                    "query": {"bool": {"must": [{"match": {"text": {"query": text}}}], "filter": filters}},
                },
            ]
        if not searches:
            return RecallCandidates()
        with _storage_errors("recall"):
            response = self.client.msearch(index=self.index, body=body)

        found: dict[str, dict[str, float]] = {}
        for kind, result in zip(searches, response["responses"], strict=True):
            if "error" in result or result.get("status", 200) >= 300:
                error = result.get("error")
                error_type = error.get("type") if isinstance(error, dict) else "unknown"
                logger.warning("opensearch %s search failed: status=%s type=%s", kind, result.get("status"), error_type)
                raise StorageError(
                    f"the recall index failed (recall: HTTP {result.get('status')} {error_type})",
                    operation="recall",
                    status=result.get("status"),
                    type=error_type,
                )
            for event_id, score in self._hits(scope, result):
                signals = found.setdefault(event_id, {"lexical": 0.0, "semantic": 0.0})
                signals[kind] = cosine_from_score(score) if kind == "semantic" else score
        return RecallCandidates(
            [Candidate(event_id=k, lexical=v["lexical"], semantic=v["semantic"]) for k, v in found.items()]
        )

    def _newest(self, scope: Scope, filters: list[dict[str, Any]], pool_size: int) -> list[Candidate]:
        body = {
            "size": pool_size,
            "_source": False,
            "query": {"bool": {"filter": filters}},
            "sort": [{"occurredAt": {"order": "desc"}}, {"eventId": {"order": "desc"}}],
        }
        with _storage_errors("recall"):
            response = self.client.search(index=self.index, body=body)
        return [Candidate(event_id=event_id) for event_id, _ in self._hits(scope, response)]

    def _hits(self, scope: Scope, result: dict[str, Any]) -> Iterator[tuple[str, float]]:
        """(eventId, score) of each hit; a hit outside the scope's tenant is dropped, loudly."""
        for hit in result["hits"]["hits"]:
            tenant, sep, event_id = str(hit["_id"]).partition("#")
            if not sep or tenant != scope.tenant_id:
                logger.error("recall index returned a document outside the tenant scope; dropped")
                continue
            score = hit.get("_score")
            yield event_id, float(score) if isinstance(score, int | float) and math.isfinite(score) else 0.0
