"""Embeddings from Amazon Bedrock: Titan Text Embeddings V2.

Titan V2 embeds one text per ``InvokeModel`` call, so "batching" here means: de-duplicate
the texts and send them concurrently on a bounded thread pool. Results come back in input order.
A tenant's questions are kept in an LRU cache of its own (:meth:`TitanEmbedder.embed_query`).

The bedrock-runtime client comes from the composition root, which decides region,
credentials and retries. It should be built with
``Config(retries={"mode": "adaptive", "max_attempts": 8})``: botocore then retries
throttling, 5xx and connection failures itself, and adaptive mode adds a client-side rate
limiter shared by every worker thread (boto3 clients are thread-safe). Throttling that
still reaches us is retried again here with capped exponential backoff and jitter,
because embedding sits on the write path and a burst of writes should slow down rather
than fail. Each of those attempts may itself be retried by botocore.

Every failure becomes :class:`EmbeddingError` (503 through :class:`StorageError`), naming
the AWS error code but never the text.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import numpy.typing as npt

from episodic.adapters.bedrock.calls import RetryPolicy, call_bedrock
from episodic.adapters.question_cache import QuestionCache
from episodic.domain.errors import StorageError

DEFAULT_MODEL_ID = "amazon.titan-embed-text-v2:0"

SUPPORTED_DIMENSIONS = (256, 512, 1024)
"""The only output sizes Titan V2 accepts; anything else would be a ValidationException per call."""

MAX_INPUT_CHARS = 50_000
"""Titan V2 rejects inputs over 50,000 characters (or 8,192 tokens) instead of truncating them.

Longer texts are cut to this length before the call: embedding the beginning of a text is a
better outcome than refusing the write, and episodes and queries are far shorter anyway, so
this only guards against an unusual caller. The token limit cannot be checked without
Titan's tokenizer; a text under 50,000 characters but over 8,192 tokens still fails, as an
:class:`EmbeddingError` from the ValidationException.
"""

MAX_ATTEMPTS = 5
"""InvokeModel calls per text while Bedrock keeps throttling (each one also retried by botocore)."""

BASE_DELAY = 0.5
MAX_DELAY = 2.0
"""The wait after failed attempt ``n`` (1-based) is drawn from ``[c/2, c]``, ``c = min(MAX_DELAY,
BASE_DELAY * 2**(n-1))``: half fixed, half jitter, so concurrent workers spread out while each
wait up to the cap is longer than the one before. The four waits of a text add up to at most 5.5
seconds (botocore's own retries of each attempt come on top)."""

_RETRYABLE = frozenset(
    {"ThrottlingException", "ServiceUnavailableException", "ModelNotReadyException", "ModelTimeoutException"}
)
_POLICY = RetryPolicy(_RETRYABLE, MAX_ATTEMPTS, BASE_DELAY, MAX_DELAY)
"""Errors that go away by waiting (a model timeout included: Titan answers a short text well
within its limit when it is not overloaded). Everything else (AccessDenied, Validation,
ResourceNotFound, ...) would fail the same way again and is raised at once."""

Float32Vector = npt.NDArray[np.float32]


class EmbeddingError(StorageError):
    """Bedrock could not embed a text: throttled too long, refused the request, or answered
    with something that is not a vector of the configured size."""

    code = "embedding_unavailable"


def titan_name(model_id: str, dimensions: int, normalize: bool = True) -> str:
    """The identity stored with every Titan vector. Unnormalised vectors are not comparable
    with normalised ones, so they get an identity of their own."""
    return f"{model_id}/{dimensions}" + ("" if normalize else "/raw")


class TitanEmbedder:
    """The :class:`~episodic.application.ports.Embedder` port on Titan Text Embeddings V2.

    ``name`` is ``"{model_id}/{dimensions}"`` and is stored with every vector, so vectors of
    another model or size are never silently compared with these. ``normalize`` asks Titan
    for unit-length vectors, which the port promises; turn it off only for experiments.
    ``sleep`` is the wait between throttling retries (injected by tests).

    Vectors are read-only float32 arrays, like the local MiniLM embedder's: float32 is what
    the stores keep anyway, it makes a full cache of 1024-dimension vectors 8 MB instead of
    the ~64 MB of Python floats, and read-only means no caller can alter a cached vector.
    """

    def __init__(
        self,
        client: Any,
        model_id: str = DEFAULT_MODEL_ID,
        dimensions: int = 1024,
        normalize: bool = True,
        max_workers: int = 4,
        cache_size: int = 2048,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if dimensions not in SUPPORTED_DIMENSIONS:
            supported = ", ".join(map(str, SUPPORTED_DIMENSIONS))
            raise ValueError(f"Titan V2 supports dimensions {supported}, not {dimensions!r}")
        if max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, not {max_workers!r}")
        self._client = client
        self._model_id = model_id
        self._dimensions = dimensions
        self._normalize = normalize
        self._max_workers = max_workers
        self._sleep = sleep
        self._cache = QuestionCache(cache_size)

    @property
    def name(self) -> str:
        return titan_name(self._model_id, self._dimensions, self._normalize)

    @property
    def dimension(self) -> int:
        return self._dimensions

    def embed(self, texts: Sequence[str]) -> list[Any]:
        """One vector per text, in input order; each distinct text is sent to Bedrock once. Stored
        texts are not kept: a faster write would tell a tenant that someone wrote the same text.

        If a text fails, the texts not yet sent are cancelled and the first error is raised.
        """
        inputs = [text[:MAX_INPUT_CHARS] for text in texts]
        misses = list(dict.fromkeys(inputs))
        if not misses:
            return []
        workers = min(self._max_workers, len(misses))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="titan-embed") as pool:
            found = dict(zip(misses, pool.map(self._embed_one, misses), strict=True))
        return [found[text] for text in inputs]

    def embed_query(self, text: str, tenant: str | None = None) -> Float32Vector:
        """A question (or a name recall widens with): kept in the LRU for ``tenant``'s next ones
        when given (agents repeat them), never for another tenant's, whose faster answer would
        tell it what this one asked or holds."""
        text = text[:MAX_INPUT_CHARS]
        vector: Float32Vector | None = self._cache.get(tenant, text)
        if vector is None:
            vector = self._embed_one(text)
            self._cache.put(tenant, text, vector)
        return vector

    def forget_tenant(self, tenant: str) -> None:
        """Drop the vectors kept for ``tenant``'s questions and names (its episodes were erased)."""
        self._cache.forget_tenant(tenant)

    def _embed_one(self, text: str) -> Float32Vector:
        """Invoke Titan for one text, waiting and retrying while it is throttled or not ready."""
        body = json.dumps({"inputText": text, "dimensions": self._dimensions, "normalize": self._normalize})
        response = call_bedrock(
            lambda: self._client.invoke_model(
                modelId=self._model_id,
                body=body.encode("utf-8"),
                contentType="application/json",
                accept="application/json",
            ),
            what="Titan embedding",
            error=EmbeddingError,
            policy=_POLICY,
            sleep=self._sleep,
        )
        return self._vector_from(response["body"].read())

    def _vector_from(self, payload: bytes) -> Float32Vector:
        try:
            vector = np.array(json.loads(payload)["embedding"], dtype=np.float32)
        except (ValueError, TypeError, KeyError) as exc:
            raise EmbeddingError("Titan embedding: the response holds no readable embedding") from exc
        if vector.shape != (self._dimensions,):
            raise EmbeddingError(f"Titan embedding: expected {self._dimensions} dimensions, got shape {vector.shape}")
        vector.flags.writeable = False
        return vector
