"""The local summariser: extractive, so it cannot invent a fact.

It splits the events' summaries into sentences, embeds them with the real embedder, and
picks the most *central* ones -- those most similar to all the others, i.e. what the window
was mostly about -- skipping near-duplicates of a sentence already chosen and the sentences
the write policy judges chatter ("Hey John!", "Thanks!"), which say nothing a digest should
carry. The chosen sentences are returned verbatim, in the order their events happened.
Every word of the digest is therefore a word of a source.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from episodic.application.ports import Embedder
from episodic.domain import linear
from episodic.domain.model import Episode
from episodic.domain.policy import memorability
from episodic.domain.policy.chatter import default_classifier

_SENTENCE_BREAK = linear.compile(r"(?P<mark>[.!?])\s+(?P<next>[A-Z0-9\"'])")
"""Between sentences: a full stop, question or exclamation mark, spaces, and what can start one."""
NEAR_DUPLICATE = 0.9


class ExtractiveSummariser:
    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    @property
    def name(self) -> str:
        return f"extractive:{self.embedder.name}"

    def summarise(self, episodes: Sequence[Episode], max_lines: int = 3) -> list[str]:
        ordered = sorted(episodes, key=lambda e: e.occurred_at)
        sentences = [
            (index, sentence.strip())
            for index, episode in enumerate(ordered)
            for sentence in _sentences(episode.summary)
            if sentence.strip()
        ]
        sentences = [s for s in sentences if not _chatter(s[1])] or sentences
        if not sentences:
            return []
        vectors = np.asarray(self.embedder.embed([s for _, s in sentences]), dtype=np.float32)
        similarity = vectors @ vectors.T
        centrality = similarity.sum(axis=1) - np.diag(similarity)
        chosen: list[int] = []
        for candidate in np.argsort(-centrality):
            if all(similarity[candidate, other] < NEAR_DUPLICATE for other in chosen):
                chosen.append(int(candidate))
            if len(chosen) == max_lines:
                break
        return [sentences[i][1] for i in sorted(chosen, key=lambda i: (sentences[i][0], i))]


def _chatter(sentence: str) -> bool:
    """Judged as the write policy judges a sentence of a proposal."""
    verdicts = memorability.judge(sentence, default_classifier())
    return not memorability.memorable(verdicts)


def _sentences(text: str) -> list[str]:
    """``text`` cut at each sentence break; the mark stays with its sentence."""
    mark, following = _SENTENCE_BREAK.groupindex["mark"], _SENTENCE_BREAK.groupindex["next"]
    parts, start = [], 0
    for found in _SENTENCE_BREAK.finditer(text):
        parts.append(text[start : found.end(mark)])
        start = found.start(following)
    return [*parts, text[start:]]
