"""A small, explainable classifier for routine chatter.

Greetings, thanks, acknowledgements and small talk carry nothing worth remembering;
storing them only dilutes recall. This is a logistic-regression model over word
unigrams and bigrams plus a few shape features (digits, identifiers, proper nouns,
content-word count, event type). It is pure Python so the core layer stays free of
numpy, and it is trained, deterministically and in well under a second, from the
labelled set shipped beside it (``data/chatter_train.jsonl``) the first time it is
used. Its quality is measured on a separate held-out set (``tests/evals/``).
"""

from __future__ import annotations

import itertools
import json
import math
import random
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib import resources

from episodic.domain import linear

_WORD = linear.compile(r"[a-z0-9']+|[^\sa-z0-9]")
_IDENTIFIER_RUN = linear.compile(r"#\d|\b\d{3,}\b|[A-Za-z0-9_-]{3,}")
"""Where an identifier can be: ``#12``, a number of three digits or more, or a run of letters,
digits, ``_`` and ``-`` (an identifier when it mixes letters and digits: ``INV2291``, ``v2-beta``)."""
_PROPER = linear.compile(r"[a-z,;] [A-Z][a-z]")
"""A capitalised word inside a sentence (after a lower-case word or a comma): a name."""
_FILLER = frozenset(
    [
        "a",
        "an",
        "the",
        "i",
        "me",
        "my",
        "we",
        "our",
        "you",
        "your",
        "it",
        "its",
        "this",
        "that",
        "to",
        "of",
        "and",
        "or",
        "but",
        "so",
        "just",
        "really",
        "very",
        "for",
        "with",
        "on",
        "in",
        "at",
        "be",
        "is",
        "am",
        "are",
        "was",
        "were",
        "been",
        "do",
        "did",
        "does",
        "have",
        "has",
        "had",
        "will",
        "would",
        "can",
        "could",
        "ok",
        "okay",
        "sure",
        "yes",
        "yeah",
        "yep",
        "no",
        "nope",
        "hi",
        "hello",
        "hey",
        "thanks",
        "thank",
        "thx",
        "ty",
        "please",
        "great",
        "good",
        "nice",
        "cool",
        "awesome",
        "perfect",
        "sounds",
        "lol",
        "haha",
        "bye",
        "see",
        "later",
        "morning",
        "afternoon",
        "evening",
        "night",
        "day",
        "how",
        "what",
        "all",
        "got",
        "alright",
        "fine",
        "much",
        "appreciate",
        "appreciated",
        "help",
        "helpful",
        "again",
        "there",
    ]
)


def _features(text: str, event_type: str) -> dict[str, float]:
    lowered = text.lower()
    words = [w for w in _WORD.findall(lowered) if w.strip()]
    feats: dict[str, float] = {"bias": 1.0, f"type={event_type}": 1.0}
    for word in words:
        feats[f"w={word}"] = 1.0
    for left, right in itertools.pairwise(words):
        feats[f"b={left}_{right}"] = 1.0
    alpha = [w for w in words if w[0].isalnum()]
    content = [w for w in alpha if w not in _FILLER]
    feats["content_words"] = min(len(content), 12) / 4.0
    feats["no_content"] = 1.0 if not content else 0.0
    feats["short"] = 1.0 if len(alpha) <= 4 else 0.0
    feats["has_digit"] = 1.0 if any(c.isdigit() for c in text) else 0.0
    feats["has_identifier"] = 1.0 if _has_identifier(text) else 0.0
    feats["has_proper_noun"] = 1.0 if _PROPER.search(text) else 0.0
    feats["has_colon"] = 1.0 if ":" in text else 0.0
    return feats


def _has_identifier(text: str) -> bool:
    for found in _IDENTIFIER_RUN.finditer(text):
        run = found.group(0)
        if run[0] == "#" or run.isdigit() or (any(c.isdigit() for c in run) and any(c.isalpha() for c in run)):
            return True
    return False


@dataclass(frozen=True)
class Example:
    text: str
    event_type: str
    chatter: bool


def load_examples(lines: Iterable[str]) -> list[Example]:
    """Parse JSON Lines rows ``{"text", "eventType", "label": "chatter"|"memorable"}``."""
    examples = []
    for line in lines:
        if line.strip():
            row = json.loads(line)
            examples.append(Example(row["text"], row["eventType"], row["label"] == "chatter"))
    return examples


class ChatterClassifier:
    """Logistic regression trained by full-batch gradient descent with L2 regularisation."""

    def __init__(self, weights: dict[str, float], threshold: float = 0.5) -> None:
        self.weights = weights
        self.threshold = threshold

    @classmethod
    def train(
        cls, examples: list[Example], epochs: int = 60, learning_rate: float = 0.5, l2: float = 1e-3
    ) -> ChatterClassifier:
        rows = [(_features(e.text, e.event_type), 1.0 if e.chatter else 0.0) for e in examples]
        order = list(range(len(rows)))
        rng = random.Random(20261129)  # fixed seed: the same data always gives the same model
        weights: dict[str, float] = {}
        for epoch in range(epochs):
            rng.shuffle(order)
            rate = learning_rate / (1.0 + epoch * 0.05)
            for index in order:
                feats, label = rows[index]
                error = _sigmoid(sum(weights.get(k, 0.0) * v for k, v in feats.items())) - label
                for key, value in feats.items():
                    current = weights.get(key, 0.0)
                    weights[key] = current - rate * (error * value + l2 * current)
        return cls(weights)

    def probability(self, text: str, event_type: str) -> float:
        """Probability that the text is routine chatter."""
        feats = _features(text, event_type)
        return _sigmoid(sum(self.weights.get(k, 0.0) * v for k, v in feats.items()))

    def is_chatter(self, text: str, event_type: str) -> bool:
        return self.probability(text, event_type) >= self.threshold

    def explain(self, text: str, event_type: str, top: int = 5) -> list[tuple[str, float]]:
        """The features that pushed the score most, with their contributions."""
        feats = _features(text, event_type)
        contributions = [(k, self.weights.get(k, 0.0) * v) for k, v in feats.items()]
        return sorted(contributions, key=lambda kv: abs(kv[1]), reverse=True)[:top]


def _sigmoid(z: float) -> float:
    if z < -30:
        return 0.0
    if z > 30:
        return 1.0
    return 1.0 / (1.0 + math.exp(-z))


@cache
def default_classifier() -> ChatterClassifier:
    """The classifier trained on the shipped labelled set (built once per process)."""
    data = resources.files("episodic.domain.policy").joinpath("data/chatter_train.jsonl")
    return ChatterClassifier.train(load_examples(data.read_text(encoding="utf-8").splitlines()))
