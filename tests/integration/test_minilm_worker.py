"""The MiniLM embedder's worker (issue #14): concurrent callers share forward passes, and each
still gets the vectors of its own texts, in order; a failure reaches every caller waiting on
that pass. With the real model, but for the failing model, which is a named test double."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from episodic.adapters.local.embedder import MiniLMEmbedder

TEXTS = [f"Ticket {n}: the customer in {city} asked about invoice {n * 7}" for n, city in
         enumerate(["Lisbon", "Porto", "Braga", "Faro", "Leeds", "York", "Bath", "Derby"] * 3)]  # fmt: skip


def test_given_concurrent_callers_when_they_embed_then_each_gets_its_own_vectors_in_order(minilm):
    alone = MiniLMEmbedder(cache_size=0)
    alone._model = minilm._load()  # the same weights, loaded once
    expected = {text: alone.embed([text])[0] for text in TEXTS}
    shared = MiniLMEmbedder(cache_size=0)
    shared._model = minilm._load()
    results: dict[int, list] = {}

    def caller(index: int) -> None:
        texts = TEXTS[index * 3 : index * 3 + 3]
        results[index] = list(zip(texts, shared.embed(texts), strict=True))

    threads = [threading.Thread(target=caller, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(results) == 8 and shared.texts_encoded == len(TEXTS)
    for pairs in results.values():
        for text, vector in pairs:
            assert np.allclose(vector, expected[text], atol=1e-5), text


class FailingModelDouble:
    """A model double whose forward pass fails, as a model that ran out of memory would."""

    def encode(self, *args, **kwargs):
        raise RuntimeError("forward pass failed")


def test_given_a_failing_pass_when_callers_wait_then_each_gets_the_failure_and_the_worker_lives_on(minilm):
    embedder = MiniLMEmbedder(cache_size=0)
    embedder._model = FailingModelDouble()
    with pytest.raises(RuntimeError, match="forward pass failed"):
        embedder.embed(["one"])
    embedder._model = minilm._load()
    assert len(embedder.embed(["two"])[0]) == 384  # the same worker serves the next pass
