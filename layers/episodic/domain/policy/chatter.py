"""A small, explainable classifier for routine chatter.

Greetings, thanks, acknowledgements and small talk carry nothing worth remembering;
storing them only dilutes recall. This is a logistic-regression model over word
unigrams and bigrams plus a few shape features (digits, identifiers, proper nouns,
content-word count). It reads the text alone, never the event type: the same words are chatter or
not whichever route and type bring them (a conversation turn sent as a batch item is judged as the
conversation path judges it). It is pure Python so the core layer stays free of
numpy. Its quality is measured on a separate held-out set (``tests/evals/``).

The weights ship trained (``data/chatter_model.json``), as the instruction model's do: the
labelled set they come from (``data/chatter_train.jsonl``) is a tool's input, not the service's,
so it stays out of the Lambda layer, and a cold start loads numbers instead of training.
Training is deterministic; :func:`main` (``make policy-model``) rewrites the file from the
labelled set, and a test checks the shipped file is what training gives.
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
from pathlib import Path

from episodic.domain import linear

TRAINING_SET = "data/chatter_train.jsonl"
"""The labelled set, beside this module in the repository (not in the Lambda layer)."""
MODEL_FILE = "data/chatter_model.json"
"""The trained weights the service loads, written by :func:`main`."""
SIGNIFICANT_DIGITS = 7
"""Each shipped weight keeps this many significant digits: the file stays small and its
probabilities differ from the trained model's by far less than any verdict's margin."""

_WORD = linear.compile(r"[a-z0-9']+|[^\sa-z0-9]")
_IDENTIFIER_RUN = linear.compile(r"#\d|\b\d{3,}\b|[A-Za-z0-9_-]{3,}")
"""Where an identifier can be: a number sign before a digit (an order number), a number of three
digits or more, or a run of letters, digits, ``_`` and ``-`` (an identifier when it mixes letters
and digits: ``INV2291``, ``v2-beta``)."""
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


def _features(text: str) -> dict[str, float]:
    lowered = text.lower()
    words = [w for w in _WORD.findall(lowered) if w.strip()]
    feats: dict[str, float] = {"bias": 1.0}
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
    chatter: bool


def load_examples(lines: Iterable[str]) -> list[Example]:
    """Parse JSON Lines rows ``{"text", "label": "chatter"|"memorable"}`` (a row's ``eventType``
    says where its text was found; the classifier does not read it)."""
    examples = []
    for line in lines:
        if line.strip():
            row = json.loads(line)
            examples.append(Example(row["text"], row["label"] == "chatter"))
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
        rows = [(_features(e.text), 1.0 if e.chatter else 0.0) for e in examples]
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

    def to_json(self) -> str:
        """Threshold and weights, keys sorted, one weight a line (a retrained model diffs by line),
        each rounded to :data:`SIGNIFICANT_DIGITS`: the same model always gives the same text."""
        weights = {k: float(f"{w:.{SIGNIFICANT_DIGITS}g}") for k, w in self.weights.items()}
        return json.dumps({"threshold": self.threshold, "weights": weights}, sort_keys=True, indent=0)

    @classmethod
    def from_json(cls, raw: str) -> ChatterClassifier:
        data = json.loads(raw)
        return cls({str(k): float(w) for k, w in data["weights"].items()}, float(data["threshold"]))

    def probability(self, text: str) -> float:
        """Probability that the text is routine chatter."""
        feats = _features(text)
        return _sigmoid(sum(self.weights.get(k, 0.0) * v for k, v in feats.items()))

    def is_chatter(self, text: str) -> bool:
        return self.probability(text) >= self.threshold

    def explain(self, text: str, top: int = 5) -> list[tuple[str, float]]:
        """The features that pushed the score most, with their contributions."""
        feats = _features(text)
        contributions = [(k, self.weights.get(k, 0.0) * v) for k, v in feats.items()]
        return sorted(contributions, key=lambda kv: abs(kv[1]), reverse=True)[:top]


def _sigmoid(z: float) -> float:
    if z < -30:
        return 0.0
    if z > 30:
        return 1.0
    return 1.0 / (1.0 + math.exp(-z))


def trained_on_shipped_set() -> ChatterClassifier:
    """The classifier trained on the labelled set beside this module (the repository's copy:
    the Lambda layer does not carry it)."""
    data = resources.files("episodic.domain.policy").joinpath(TRAINING_SET)
    return ChatterClassifier.train(load_examples(data.read_text(encoding="utf-8").splitlines()))


@cache
def default_classifier() -> ChatterClassifier:
    """The classifier with the shipped trained weights (loaded once per process)."""
    data = resources.files("episodic.domain.policy").joinpath(MODEL_FILE)
    return ChatterClassifier.from_json(data.read_text(encoding="utf-8"))


def main(argv: Iterable[str] | None = None) -> int:
    """Train on the labelled set and write the weights the service loads (``make policy-model``)."""
    import argparse

    parser = argparse.ArgumentParser(description="Train the chatter classifier from its labelled set.")
    parser.add_argument("--out", default=f"layers/episodic/domain/policy/{MODEL_FILE}")
    args = parser.parse_args(list(argv) if argv is not None else None)
    classifier = trained_on_shipped_set()
    Path(args.out).write_text(classifier.to_json() + "\n", encoding="utf-8")
    print(f"wrote {args.out}: {len(classifier.weights)} weights")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
