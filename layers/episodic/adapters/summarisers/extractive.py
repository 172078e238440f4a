"""The local summariser: extractive, so it cannot invent a fact.

It splits the events' summaries into sentences, embeds them with the real embedder, and
picks the most *central* ones -- those most similar to all the others, i.e. what the window
was mostly about -- skipping near-duplicates of a sentence already chosen and the sentences
the write policy judges chatter ("Hey John!", "Thanks!"), which say nothing a digest should
carry. The chosen sentences are returned verbatim, in the order their events happened.
Every word of the digest is therefore a word of a source.

The work is bounded whatever the events hold: each event offers its first
:data:`SENTENCES_PER_EVENT` sentences and the window at most :data:`MAX_SENTENCES` (taken from every
event in turn), and centrality is each vector's cosine with the sum of all, so memory grows with
the sentences, never with their square. A session of long turns made of thousands of short
sentences would otherwise have held the process for tens of seconds and gigabytes.
"""

from __future__ import annotations

import itertools
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
SENTENCES_PER_EVENT = 8
"""How many sentences of one event (its first) a digest may choose from."""
MAX_SENTENCES = 240
"""How many sentences of the whole window a digest may choose from (the same share of each event
first, so one long event does not crowd out the rest)."""


class ExtractiveSummariser:
    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    @property
    def name(self) -> str:
        return f"extractive:{self.embedder.name}"

    def summarise(self, episodes: Sequence[Episode], max_lines: int = 3) -> list[str]:
        ordered = sorted(episodes, key=lambda e: e.occurred_at)
        sentences = _offered([_sentences(episode.summary) for episode in ordered])
        sentences = [s for s in sentences if not _chatter(s[1])] or sentences
        if not sentences:
            return []
        vectors = np.asarray(self.embedder.embed([s for _, s in sentences]), dtype=np.float32)
        # a sentence's summed cosine with every other: its cosine with the sum of all, less its own
        centrality = vectors @ vectors.sum(axis=0) - np.einsum("ij,ij->i", vectors, vectors)
        chosen: list[int] = []
        for candidate in np.argsort(-centrality):
            if not chosen or float(np.max(vectors[chosen] @ vectors[candidate])) < NEAR_DUPLICATE:
                chosen.append(int(candidate))
            if len(chosen) == max_lines:
                break
        return [sentences[i][1] for i in sorted(chosen, key=lambda i: (sentences[i][0], i))]


def _offered(per_event: list[list[str]]) -> list[tuple[int, str]]:
    """``(event, sentence)`` for what a digest may choose from: each event's first
    :data:`SENTENCES_PER_EVENT` non-empty sentences, at most :data:`MAX_SENTENCES` in all, taken
    one from every event in turn (the first of each, then the second...; past
    :data:`MAX_SENTENCES` events, the first ones': the summariser's callers hand it 50 at most);
    in the events' order."""
    offered = [list(itertools.islice(filter(None, map(str.strip, parts)), SENTENCES_PER_EVENT)) for parts in per_event]
    taken: list[tuple[int, int]] = []  # (event, place in it)
    for place in range(SENTENCES_PER_EVENT):
        for event, sentences in enumerate(offered):
            if place < len(sentences) and len(taken) < MAX_SENTENCES:
                taken.append((event, place))
    return [(event, offered[event][place]) for event, place in sorted(taken)]


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
