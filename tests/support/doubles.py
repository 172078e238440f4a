"""Test doubles for unit tests only. Service, contract, API and evaluation tests use the real model.

* :class:`HashingTestEmbedder` -- deterministic bag-of-words vectors (a test double for the
  MiniLM embedder, so ranking and policy unit tests run in milliseconds).
* :class:`FixedClock` -- a clock the test moves by hand.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta


class HashingTestEmbedder:
    """TEST DOUBLE: hashes words into a fixed-size unit vector. Never used outside unit tests."""

    name = "test-double/hashing"
    dimension = 64

    def __init__(self) -> None:
        self.calls: list[int] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(len(texts))
        vectors = []
        for text in texts:
            vec = [0.0] * self.dimension
            for word in re.findall(r"\w+", text.lower()):
                vec[int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dimension] += 1.0
            norm = math.sqrt(sum(v * v for v in vec)) or 1.0
            vectors.append([v / norm for v in vec])
        return vectors


class FixedClock:
    def __init__(self, now: datetime | None = None) -> None:
        self.current = now or datetime(2026, 11, 29, 12, 0, tzinfo=UTC)

    def now(self) -> datetime:
        return self.current

    def advance(self, **delta: float) -> None:
        self.current += timedelta(**delta)
