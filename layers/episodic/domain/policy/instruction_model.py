"""A learned second opinion on instruction-like text, for wordings the patterns have not seen.

The patterns in :mod:`episodic.domain.policy.instructions` are precise but literal: measured on
attack sets written by people who never saw them, they miss paraphrases ("your earlier
directions no longer apply"). This model reads the same normalised text (look-alike letters
and leetspeak undone, encoded payloads decoded) as overlapping character n-grams (3 to 5
characters inside word boundaries, hashed into 2**18 buckets), and a logistic regression
says how instruction-like it is. A proposal is instruction-like when the patterns *or* this
model say so; the model's threshold was chosen by cross-validation for few false alarms.

Why shipped weights instead of training at first use (the chatter classifier ships its own too):
training on character n-grams takes seconds in pure Python, which a Lambda cold start should
not pay, and the labelled sets it learns from live with the tests, not in the layer.
:func:`main` rebuilds ``data/instruction_model.json`` deterministically from them
(``make policy-model``); a test checks the shipped file is what training gives.
"""

from __future__ import annotations

import json
import math
import random
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from itertools import repeat
from pathlib import Path

from episodic.domain.linear import one_line, words
from episodic.domain.policy.text import decoded_payloads, normalise, skeleton

BUCKETS = 2**18
NGRAMS = (3, 4, 5)
THRESHOLD = 0.7
"""Chosen by 5-fold cross-validation on the training sets as the lowest threshold that raises
false alarms on ordinary memories (the retrieval, chatter and write sets) for at most 1% of
them: there it found 80% of the attacks on its own, raising 1.0% false alarms."""
TRAINING_SETS = ("corpus.jsonl", "holdout.jsonl")
"""The poisoning sets used for training and tuning. ``holdout2.jsonl`` is kept out of everything
but the final measurement (see ``tests/evals/poisoning/HOLDOUT2.md``)."""

_SEED = 20261130


def reading(text: str) -> str:
    """What the model reads: one line, look-alikes and leetspeak undone, hidden payloads appended."""
    plain = one_line(normalise(text))
    return skeleton(" ".join([plain, *decoded_payloads(plain)]))


def features(text: str) -> dict[int, float]:
    """Hashed character n-grams of each word (padded with spaces), L2-normalised."""
    buckets: set[int] = set()
    for word in words(reading(text)):
        buckets |= word_buckets(word)
    if not buckets:
        return {}
    value = 1.0 / math.sqrt(len(buckets))
    return dict.fromkeys(buckets, value)


@lru_cache(maxsize=65536)
def word_buckets(word: str) -> frozenset[int]:
    """The buckets of one word's n-grams. Cached: the same few thousand words make up most text,
    and hashing every n-gram of every word was most of the write policy's time."""
    padded = f" {word} "
    return frozenset(
        zlib.crc32(padded[start : start + n].encode()) % BUCKETS
        for n in NGRAMS
        for start in range(max(len(padded) - n + 1, 1))
    )


@dataclass(frozen=True)
class InstructionModel:
    weights: dict[int, float]
    bias: float
    threshold: float = THRESHOLD

    def probability(self, text: str) -> float:
        """The sigmoid of the bias plus the features' weights; every feature has the same value
        (:func:`features`), so the weights are summed first and scaled once."""
        buckets = features(text)
        if not buckets:
            return _sigmoid(self.bias)
        value = next(iter(buckets.values()))
        return _sigmoid(self.bias + value * sum(map(self.weights.get, buckets, repeat(0.0))))

    def is_instruction(self, text: str) -> bool:
        return self.probability(text) >= self.threshold

    def to_json(self) -> str:
        rounded = {str(k): round(w, 4) for k, w in sorted(self.weights.items()) if abs(w) >= 1e-4}
        return json.dumps({"bias": round(self.bias, 6), "threshold": self.threshold, "weights": rounded})

    @classmethod
    def from_json(cls, raw: str) -> InstructionModel:
        data = json.loads(raw)
        return cls({int(k): float(w) for k, w in data["weights"].items()}, float(data["bias"]), data["threshold"])


def train(
    examples: Sequence[tuple[str, bool]], epochs: int = 25, rate: float = 0.5, l2: float = 1e-5
) -> InstructionModel:
    """Logistic regression by stochastic gradient descent, classes weighted to balance, fixed seed."""
    rows = [(features(text), 1.0 if label else 0.0) for text, label in examples]
    positives = sum(label for _, label in rows)
    weight_of = {1.0: len(rows) / (2 * positives), 0.0: len(rows) / (2 * (len(rows) - positives))}
    weights: dict[int, float] = {}
    bias = 0.0
    order = list(range(len(rows)))
    rng = random.Random(_SEED)
    for epoch in range(epochs):
        rng.shuffle(order)
        step = rate / (1.0 + 0.1 * epoch)
        for index in order:
            feats, label = rows[index]
            z = bias + sum(weights.get(k, 0.0) * v for k, v in feats.items())
            gradient = (_sigmoid(z) - label) * weight_of[label]
            bias -= step * gradient
            for key, value in feats.items():
                current = weights.get(key, 0.0)
                weights[key] = current - step * (gradient * value + l2 * current)
    return InstructionModel(weights, bias)


def training_examples(root: Path) -> list[tuple[str, bool]]:
    """The labelled texts the shipped model learns from: the poisoning sets it may learn from
    (:data:`TRAINING_SETS`; never ``holdout2.jsonl``, which measures it), and ordinary memories as
    negatives (the retrieval set, the chatter set, the write scenarios the policy allows)."""
    from episodic.domain.policy import fields

    def rows(path: Path) -> Iterator[dict]:
        yield from (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip())

    def joined(proposal: dict) -> str:
        return " ".join(text for _, text in fields.texts(proposal))

    evals = root / "tests" / "evals"
    examples = [
        (joined(r["proposal"]), r["label"] == "injection")
        for name in TRAINING_SETS
        for r in rows(evals / "poisoning" / name)
    ]
    examples += [(r["summary"], False) for r in rows(evals / "retrieval" / "episodes.jsonl")]
    chatter = root / "layers" / "episodic" / "domain" / "policy" / "data" / "chatter_train.jsonl"
    examples += [(r["text"], False) for r in rows(chatter)]
    examples += [
        (joined(r["proposal"]), False) for r in rows(evals / "scenarios" / "writes.jsonl") if r["expected"] == "allow"
    ]
    return examples


@cache
def default_model() -> InstructionModel:
    data = resources.files("episodic.domain.policy").joinpath("data/instruction_model.json")
    return InstructionModel.from_json(data.read_text(encoding="utf-8"))


def _sigmoid(z: float) -> float:
    if z < -30:
        return 0.0
    if z > 30:
        return 1.0
    return 1.0 / (1.0 + math.exp(-z))


def main(argv: Iterable[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="Train the instruction model from the repository's labelled sets.")
    parser.add_argument("--root", default=".", help="the repository root")
    parser.add_argument("--out", default="layers/episodic/domain/policy/data/instruction_model.json")
    args = parser.parse_args(list(argv) if argv is not None else None)
    model = train(training_examples(Path(args.root)))
    Path(args.out).write_text(model.to_json() + "\n", encoding="utf-8")
    print(f"wrote {args.out}: {len(model.weights)} weights")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
