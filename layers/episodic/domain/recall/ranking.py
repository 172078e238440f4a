"""Explainable ranking of a scoped candidate set.

Scope filters have already been applied by the store or index; this module only orders
what is allowed to be returned. The score is a weighted sum of components in [0, 1],
each reported back to the caller so a ranking can always be explained:

* relevance -- hybrid of lexical (BM25, normalised by the best BM25 in the candidate
  set) and semantic (cosine similarity of embeddings, negatives clipped to 0);
* recency -- exponential decay with a configurable half-life;
* importance -- as proposed (0..1);
* trust -- from the source's trust class;
* confidence -- from the episode's confidence.

Without a query, relevance carries no information, so its weight is dropped and the
other weights are renormalised.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cached_property

from episodic.domain.model import Confidence, Episode, EventType, RecallItem, ScoreComponents, SourceTrust
from episodic.domain.recall.candidates import Candidate
from episodic.domain.recall.languages import language_name

TRUST_SCORES: Mapping[SourceTrust, float] = {
    SourceTrust.OPERATOR_ENTERED: 1.0,
    SourceTrust.APPROVED_SOURCE: 0.9,
    SourceTrust.TOOL_RESULT: 0.8,
    SourceTrust.USER_PROVIDED: 0.7,
    SourceTrust.UNTRUSTED_CONTENT: 0.2,
}

COMPONENTS = ("relevance", "recency", "importance", "trust", "confidence")
_Entry = tuple[float, Episode, tuple[float, ...], float, float, float | None, str | None]
"""A scored candidate: score, episode, components, lexical, semantic, widened relevance, question replied to."""
_ROUNDING = 1e-6
"""More than a score can gain from being rounded to six places (and from float error)."""
"""The weighted components of a score, in the order they are summed and reported."""

CONFIDENCE_SCORES: Mapping[Confidence, float] = {
    Confidence.HIGH: 1.0,
    Confidence.MEDIUM: 0.6,
    Confidence.LOW: 0.3,
}


@dataclass(frozen=True)
class RankingWeights:
    # With a query, relevance decides and the rest break ties; without one, the rest decide
    # (renormalised). Relevance weight, semantic share and both floors were tuned on the dev
    # split of the conversation benchmark (tests/evals/conversations/dev) and the labelled
    # retrieval set; the test split reports them.
    relevance: float = 0.9
    recency: float = 0.04
    importance: float = 0.02
    trust: float = 0.02
    confidence: float = 0.02
    semantic_share: float = 0.85
    """Share of relevance that comes from the embeddings; the rest comes from BM25."""
    unfamiliar_semantic_share: float = 0.6
    """The share instead, for a question in a language the embedder was not trained on (see
    ``embedder_languages``): its cosines then say less, and the words -- stemmed in that
    language (:mod:`~episodic.domain.recall.languages`) -- more."""
    embedder_languages: frozenset[str] | None = None
    """The languages the embedder was trained on (its ``languages``; names as
    :func:`~episodic.domain.recall.languages.language_name` gives them); None: every language."""
    half_life_days: float = 30.0
    min_relevance: float = 0.2
    """With a query, candidates less relevant than this are not evidence and are dropped."""
    min_semantic: float = 0.0
    """With a query the embedder could read, candidates whose meaning is further from it than
    this are not evidence, however many of its words they share: a lone hit on "hello" or
    "lol" is the best BM25 score of its pool, and would otherwise pass. Cosines are on each
    model's own scale, so the floor comes from the embedder (``evidence_floor``; see
    :class:`~episodic.adapters.minilm.embedder.MiniLMEmbedder`) or from settings."""
    unrelated_cosine: float = 0.0
    """The cosine of unrelated texts on the embedder's scale (its ``similarity_floor``): a cosine is
    read as its distance above this, on [0, 1], so models whose cosines crowd near 1 weigh meaning
    as much against words as those whose cosines spread from 0."""
    question_share: float = 0.9
    """Share of its relevance a question turn keeps: a question asks, it rarely tells, and it
    matches the questions asked of the memory best (see :mod:`episodic.application.usecases.replies`)."""
    reply_share: float = 0.95
    """A question turn's reply is at least this share of the question's relevance."""

    def effective(self, has_query: bool) -> dict[str, float]:
        raw = {
            "relevance": self.relevance if has_query else 0.0,
            "recency": self.recency,
            "importance": self.importance,
            "trust": self.trust,
            "confidence": self.confidence,
        }
        total = sum(raw.values()) or 1.0
        return {k: v / total for k, v in raw.items()}


Settled = tuple[dict[str, float], list[_Entry]]
"""A ranking made before its items were built: the effective weights and the best entries."""


@dataclass(frozen=True)
class Reading:
    """What :meth:`Ranker.worth_reading` found: the ids worth reading, and, when there are none, the
    ranking it made of the episodes read (each candidate's relevance is the same among them as among
    all: that is when it reads no more), which :meth:`Ranker.rank` serves unless replies join them."""

    ids: list[str]
    settled: Settled | None = None


@dataclass
class Ranker:
    weights: RankingWeights = field(default_factory=RankingWeights)

    def for_question(self, query: str | None) -> Ranker:
        """The ranker for ``query``: this one, or for a question in a language the embedder was
        not trained on, one that weighs its words more (``unfamiliar_semantic_share``). One recall
        uses one ranker throughout, so what it prunes and what it ranks agree."""
        languages = self.weights.embedder_languages
        if query is None or languages is None or language_name(query) in languages:
            return self
        return Ranker(replace(self.weights, semantic_share=self.weights.unfamiliar_semantic_share))

    def recency(self, occurred_at: datetime, now: datetime) -> float:
        age_days = max((now - occurred_at).total_seconds(), 0.0) / 86400.0
        return float(0.5 ** (age_days / self.weights.half_life_days))

    def rank(
        self,
        candidates: Iterable[Candidate],
        episodes: Mapping[str, Episode],
        now: datetime,
        has_query: bool,
        limit: int,
        semantic: bool = True,
        widened: Iterable[Candidate] | None = None,
        replies: Mapping[str, str] | None = None,
        settled: Settled | None = None,
    ) -> list[RecallItem]:
        """The best ``limit`` of ``candidates`` (those in ``episodes``), scored and explained.

        ``semantic`` says whether the query could be embedded. When it could not, or when no
        candidate's vector could be compared with it (all made by another model, say),
        relevance is lexical alone and the semantic floor does not apply.

        ``widened`` are the candidates of a second round (the query widened by the names its
        best answers mention): each episode's relevance is then the mean of its relevance to
        the query and to the widened query, both reported, and it is evidence if either
        round's meaning passes the floor.

        ``replies`` maps a reply turn's id to the question turn it answers (both in
        ``episodes``): a reply is at least ``reply_share`` as relevant as its question (it must
        still pass the floor on meaning by itself: a reply about something else is no evidence);
        a question turn keeps ``question_share`` of its own relevance.

        ``settled``: what :meth:`worth_reading` ranked of the same candidates, episodes and limit when
        it found nothing more worth reading; served as it is when no reply joins them."""
        if settled is not None and has_query and not replies:
            weights, best = settled
        else:
            rounds = _Rounds(
                self._relevance([c for c in candidates if c.event_id in episodes], semantic),
                None if widened is None else self._relevance([c for c in widened if c.event_id in episodes], semantic),
            )
            weights, best = self._best(rounds, episodes, now, has_query, limit, replies)
        # Only the items served are built and validated (a pool holds hundreds of candidates).
        return [_served(*entry, weights) for entry in best]

    def worth_reading(
        self,
        candidates: Iterable[Candidate],
        episodes: Mapping[str, Episode],
        now: datetime,
        limit: int,
        semantic: bool,
        widened: Iterable[Candidate] | None = None,
    ) -> Reading:
        """The ids of ``candidates`` (and ``widened``) not in ``episodes`` yet that could still be among
        the ``limit`` best of a query once read: every one, unless reading them cannot change how
        those read are scored (none is more relevant by words than the best read, and what is read
        already compares meaning); then only those whose best possible score reaches the ``limit``-th
        best score of those read. Most of a pool found by meaning alone is far below it. When none
        is, the ranking made of those read is :meth:`rank`'s answer too (``settled``)."""
        first, second = list(candidates), None if widened is None else list(widened)
        unread = list(dict.fromkeys(c.event_id for c in (*first, *(second or ())) if c.event_id not in episodes))
        if not unread or limit <= 0:
            return Reading(unread)
        for round_ in (first, second or []):
            if not round_:
                continue
            read = [c for c in round_ if c.event_id in episodes]
            best_read = max((c.lexical for c in read), default=0.0)
            if any(c.lexical > best_read for c in round_ if c.event_id not in episodes):
                return Reading(unread)  # the words' scores would be normalised anew
            if semantic and not any(c.semantic for c in read):
                return Reading(unread)  # the round's meaning would start to count
        # So each candidate's relevance is the same among all of them as among those read.
        rounds = _Rounds(
            self._relevance(first, semantic), None if second is None else self._relevance(second, semantic)
        )
        if semantic and not any(meaning for i, (_, _, meaning) in rounds.first.items() if i in episodes):
            return Reading(unread)  # no floor on meaning applies yet: reading more could start one
        weights, best = self._best(rounds, episodes, now, True, limit, None)
        if len(best) < limit:
            return Reading(unread)
        floor, share = best[-1][0], weights["relevance"]
        relevance_of = rounds.relevances
        worth = [i for i in unread if share * relevance_of.get(i, 0.0) + (1.0 - share) + _ROUNDING >= floor]
        return Reading(worth, None if worth else (weights, best))

    def _best(
        self,
        rounds: _Rounds,
        episodes: Mapping[str, Episode],
        now: datetime,
        has_query: bool,
        limit: int,
        replies: Mapping[str, str] | None,
    ) -> tuple[dict[str, float], list[_Entry]]:
        """The effective weights and the best ``limit`` entries (for :func:`_served`, best first) of the
        candidates of ``rounds`` that are in ``episodes``.

        Candidates are scored in the order of the most their relevance allows (a reply at its
        question's share), and scoring stops once none left can reach the ``limit``-th best score:
        every other component is at most 1, so a candidate can score at most its relevance's weight
        times its relevance plus the other weights."""
        weights = self.weights.effective(has_query)
        if limit <= 0:
            return weights, []
        replies = {r: q for r, q in (replies or {}).items() if r in episodes and q in episodes}
        compared = any(meaning for i, (_, _, meaning) in rounds.first.items() if i in episodes)  # else no floor
        w_relevance, w_recency, w_importance, w_trust, w_confidence = (weights[k] for k in COMPONENTS)
        rest = w_recency + w_importance + w_trust + w_confidence
        relevance_of = rounds.relevances
        if not has_query:
            relevance_of = dict.fromkeys(relevance_of, 0.0)
        reach = {event_id: w_relevance * most + rest for event_id, most in relevance_of.items() if event_id in episodes}
        for event_id, question in replies.items():
            most = max(relevance_of.get(event_id, 0.0), self.weights.reply_share * relevance_of.get(question, 0.0))
            reach[event_id] = w_relevance * most + rest
        kept: list[float] = []  # the best ``limit`` scores so far, least first
        scored: list[_Entry] = []
        for event_id in sorted(reach, key=reach.__getitem__, reverse=True):
            if len(kept) == limit and reach[event_id] + _ROUNDING < kept[0]:
                break  # sorted: no candidate left can reach the limit-th best
            episode = episodes[event_id]
            relevance, lexical, own_meaning, meaning, again = rounds.of(event_id)
            relevance, asked = self._in_conversation(episode, relevance, replies.get(event_id), rounds)
            if not has_query:
                relevance = 0.0
            elif not self._is_evidence(relevance, meaning, compared):
                continue
            parts = (relevance, self.recency(episode.occurred_at, now), episode.importance,
                     TRUST_SCORES[episode.source_trust], CONFIDENCE_SCORES[episode.confidence])  # fmt: skip
            # the weighted sum in COMPONENTS' order, as the components are reported
            score = round(
                w_relevance * parts[0] + w_recency * parts[1] + w_importance * parts[2] + w_trust * parts[3]
                + w_confidence * parts[4],
                6,
            )  # fmt: skip
            scored.append((score, episode, parts, lexical, own_meaning, again, asked))
            (heapq.heappush if len(kept) < limit else heapq.heappushpop)(kept, score)
        scored.sort(key=lambda s: (-s[0], -s[1].occurred_at.timestamp(), s[1].event_id))
        return weights, scored[:limit]

    def _in_conversation(
        self, episode: Episode, relevance: float, question: str | None, rounds: _Rounds
    ) -> tuple[float, str | None]:
        """A turn's relevance once questions and answers are weighed: a question turn keeps its
        share; a reply takes its question's share when that is more. Also the question it
        answers when that decided (reported as ``repliesTo``)."""
        if is_question(episode):
            relevance *= self.weights.question_share
        if question is not None:
            inherited = self.weights.reply_share * rounds.of(question)[0]
            if inherited > relevance:
                return inherited, question
        return relevance, None

    def leading(
        self, candidates: Iterable[Candidate], episodes: Mapping[str, Episode], semantic: bool, limit: int
    ) -> list[Episode]:
        """The ``limit`` episodes most relevant to the query that are evidence (a question turn
        at its share): what a second round takes names from, without scoring the whole pool
        twice (recency, importance and trust barely move the first few of a query's items)."""
        relevance = self._relevance([c for c in candidates if c.event_id in episodes], semantic)
        compared = any(meaning for _, _, meaning in relevance.values())
        share = self.weights.question_share
        shared = (  # a question turn at its share, then the floor, as :meth:`rank` weighs them
            (relevance_ * (share if is_question(episodes[event_id]) else 1.0), meaning, event_id)
            for event_id, (relevance_, _, meaning) in relevance.items()
        )
        evidence = [(r, event_id) for r, meaning, event_id in shared if self._is_evidence(r, meaning, compared)]
        evidence.sort(key=lambda pair: (-pair[0], pair[1]))
        return [episodes[event_id] for _, event_id in evidence[:limit]]

    def questions(
        self, candidates: Iterable[Candidate], episodes: Mapping[str, Episode], semantic: bool, limit: int
    ) -> list[Episode]:
        """The ``limit`` question turns of ``episodes`` most relevant to the query: those whose
        replies are worth looking up (:mod:`episodic.application.usecases.replies`)."""
        pool = [c for c in candidates if c.event_id in episodes]
        if not any(is_question(episodes[c.event_id]) for c in pool):
            return []  # most tenants' episodes are no conversation turns: nothing to score
        relevance = self._relevance(pool, semantic)
        asking = [event_id for event_id in relevance if is_question(episodes[event_id])]
        asking.sort(key=lambda event_id: -relevance[event_id][0])
        return [episodes[event_id] for event_id in asking[:limit]]

    def _relevance(self, pool: list[Candidate], semantic: bool) -> dict[str, tuple[float, float, float]]:
        """``{event_id: (relevance, lexical, semantic)}``: BM25 normalised by the pool's best, cosine
        put on [0, 1] (its distance above the unrelated cosine, negatives clipped), mixed by the
        semantic share (lexical alone without a usable vector: then every semantic is reported 0)."""
        semantic = semantic and any(c.semantic for c in pool)
        best_lexical = max((c.lexical for c in pool), default=0.0)
        share = self.weights.semantic_share if semantic else 0.0
        origin = self.weights.unrelated_cosine if semantic else 0.0
        span = 1.0 - origin
        signals = {}
        for event_id, lexical_score, cosine in pool:  # hundreds a recall: no call per candidate
            lexical = lexical_score / best_lexical if best_lexical > 0 else 0.0
            meaning = (cosine - origin) / span if semantic and cosine > origin else 0.0
            signals[event_id] = (share * meaning + (1.0 - share) * lexical, lexical, meaning)
        return signals

    def _is_evidence(self, relevance: float, meaning: float, semantic: bool) -> bool:
        if relevance < self.weights.min_relevance:
            return False
        return not semantic or meaning >= self.weights.min_semantic


def is_question(episode: Episode) -> bool:
    """A conversation turn that ends by asking (``?``): it asks more than it tells."""
    return episode.event_type is EventType.CONVERSATION_TURN and episode.summary.rstrip().endswith("?")


@dataclass(frozen=True)
class _Rounds:
    """Each candidate's ``(relevance, lexical, semantic)`` in the first round and, when one ran,
    the second (widened) one."""

    first: dict[str, tuple[float, float, float]]
    second: dict[str, tuple[float, float, float]] | None

    @cached_property
    def relevances(self) -> dict[str, float]:
        """Each candidate's relevance (:meth:`of`'s first), for all of them at once (computed once:
        :meth:`Ranker.worth_reading` reads it for the best and for the unread)."""
        if self.second is None:
            return {event_id: signals[0] for event_id, signals in self.first.items()}
        first, second, nothing = self.first, self.second, (0.0, 0.0, 0.0)
        return {
            event_id: (first.get(event_id, nothing)[0] + second.get(event_id, nothing)[0]) / 2
            for event_id in dict.fromkeys([*first, *second])
        }

    def of(self, event_id: str) -> tuple[float, float, float, float, float | None]:
        """``(relevance, lexical, own semantic, best semantic, widened relevance)``: relevance is
        the mean of both rounds when a second ran; an episode a round did not find scores 0."""
        relevance, lexical, meaning = self.first.get(event_id, (0.0, 0.0, 0.0))
        if self.second is None:
            return relevance, lexical, meaning, meaning, None
        again, _, meaning_again = self.second.get(event_id, (0.0, 0.0, 0.0))
        return (relevance + again) / 2, lexical, meaning, max(meaning, meaning_again), again


def _served(
    score: float,
    episode: Episode,
    parts: tuple[float, ...],
    lexical: float,
    semantic: float,
    widened: float | None,
    replies_to: str | None,
    weights: dict[str, float],
) -> RecallItem:
    """One ranked item with its score explained (components rounded as reported)."""
    components = ScoreComponents(
        lexical=round(lexical, 6),
        semantic=round(semantic, 6),
        widened=None if widened is None else round(widened, 6),
        replies_to=replies_to,
        weights=weights,
        **{k: round(v, 6) for k, v in zip(COMPONENTS, parts, strict=True)},
    )
    return RecallItem(episode=episode, score=score, components=components)
