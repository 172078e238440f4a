from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from episodic.domain.model import Episode
from episodic.domain.recall.candidates import Candidate
from episodic.domain.recall.ranking import Ranker, RankingWeights
from tests.support import fuzzing  # noqa: F401  (the shared hypothesis tiers)
from tests.support.factories import proposal_dict

NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)


def episode(event_id: str, days_ago: float, **overrides) -> Episode:
    occurred = (NOW - timedelta(days=days_ago)).isoformat()
    return Episode.model_validate(
        {
            **proposal_dict(occurredAt=occurred, **overrides),
            "eventId": event_id,
            "tenantId": "acme",
            "recordedAt": NOW,
            "policyVersion": "v",
        }
    )


def test_given_a_half_life_when_recency_is_computed_then_it_halves_per_half_life():
    ranker = Ranker(RankingWeights(half_life_days=10))
    assert ranker.recency(NOW, NOW) == pytest.approx(1.0)
    assert abs(ranker.recency(NOW - timedelta(days=10), NOW) - 0.5) < 1e-9
    assert abs(ranker.recency(NOW - timedelta(days=20), NOW) - 0.25) < 1e-9


def test_given_no_query_when_weights_are_effective_then_relevance_is_dropped_and_the_rest_sum_to_one():
    weights = RankingWeights().effective(has_query=False)
    assert weights["relevance"] == 0
    assert abs(sum(weights.values()) - 1) < 1e-6


def test_given_two_equally_relevant_episodes_when_ranked_then_the_newer_wins():
    eps = {"old": episode("old", 60), "new": episode("new", 1)}
    cands = [Candidate("old", lexical=2.0, semantic=0.6), Candidate("new", lexical=2.0, semantic=0.6)]
    items = Ranker().rank(cands, eps, NOW, has_query=True, limit=10)
    assert [i.episode.event_id for i in items] == ["new", "old"]


def test_given_a_much_more_relevant_older_episode_when_ranked_then_relevance_beats_recency():
    eps = {"old": episode("old", 20), "new": episode("new", 0)}
    cands = [Candidate("old", lexical=5.0, semantic=0.8), Candidate("new", lexical=0.5, semantic=0.15)]
    items = Ranker().rank(cands, eps, NOW, has_query=True, limit=10)
    assert items[0].episode.event_id == "old"


def test_given_untrusted_and_operator_sources_when_ranked_then_trust_orders_them_and_is_reported():
    eps = {
        "u": episode("u", 1, sourceTrust="untrusted_content"),
        "o": episode("o", 1, sourceTrust="operator_entered"),
    }
    items = Ranker().rank([Candidate("u"), Candidate("o")], eps, NOW, has_query=False, limit=10)
    assert [i.episode.event_id for i in items] == ["o", "u"]
    assert items[0].components.trust == pytest.approx(1.0) and items[1].components.trust == pytest.approx(0.2)


def test_given_components_when_scored_then_the_score_is_their_weighted_sum():
    eps = {"a": episode("a", 3, importance=0.9, confidence="low")}
    item = Ranker().rank([Candidate("a", lexical=3.0, semantic=0.5)], eps, NOW, has_query=True, limit=1)[0]
    c = item.components
    expected = sum(c.weights[k] * getattr(c, k) for k in ("relevance", "recency", "importance", "trust", "confidence"))
    assert abs(item.score - expected) < 1e-5
    assert c.lexical == pytest.approx(1.0)  # the best BM25 in the pool normalises to 1
    assert c.confidence == pytest.approx(0.3) and c.importance == pytest.approx(0.9)


def test_given_an_irrelevant_candidate_when_ranked_with_a_query_then_it_is_not_evidence():
    eps = {"a": episode("a", 0)}
    assert Ranker().rank([Candidate("a", lexical=0.0, semantic=0.02)], eps, NOW, has_query=True, limit=5) == []


def test_given_a_candidate_missing_from_the_store_when_ranked_then_it_is_skipped():
    assert Ranker().rank([Candidate("gone", lexical=1.0)], {}, NOW, has_query=True, limit=5) == []


def test_given_a_lone_word_hit_far_in_meaning_when_ranked_with_a_floor_then_it_is_not_evidence():
    """ "hello" matching one turn's greeting is the best BM25 of its pool (lexical 1.0) but says
    nothing the query asked: the semantic floor keeps it out; the on-topic one stays."""
    eps = {"greeting": episode("greeting", 1), "topic": episode("topic", 1)}
    cands = [Candidate("greeting", lexical=3.1, semantic=0.18), Candidate("topic", lexical=0.0, semantic=0.52)]
    ranker = Ranker(RankingWeights(min_semantic=0.25))
    assert [i.episode.event_id for i in ranker.rank(cands, eps, NOW, has_query=True, limit=10)] == ["topic"]
    unfloored = Ranker(RankingWeights(min_semantic=0.0)).rank(cands, eps, NOW, has_query=True, limit=10)
    assert {i.episode.event_id for i in unfloored} == {"greeting", "topic"}


def test_given_no_comparable_vector_when_ranked_then_relevance_is_lexical_alone_and_no_floor_applies():
    eps = {"a": episode("a", 1), "b": episode("b", 1)}
    cands = [Candidate("a", lexical=4.0), Candidate("b", lexical=1.0)]
    ranker = Ranker(RankingWeights(min_semantic=0.25))
    for semantic in (False, True):  # the query could not be embedded / no stored vector was comparable
        items = ranker.rank(cands, eps, NOW, has_query=True, limit=10, semantic=semantic)
        assert [i.episode.event_id for i in items] == ["a", "b"]
        assert items[0].components.relevance == pytest.approx(1.0) and items[1].components.relevance == pytest.approx(
            0.25
        )


def test_given_settings_without_a_floor_when_weights_are_made_then_the_embedder_declares_it():
    from episodic.application.settings import Settings

    class CalibratedDouble:
        evidence_floor = 0.4

    assert Settings().ranking_weights(CalibratedDouble()).min_semantic == pytest.approx(0.4)
    assert Settings().ranking_weights(object()).min_semantic == pytest.approx(0.0)
    assert Settings(min_semantic=0.1).ranking_weights(CalibratedDouble()).min_semantic == pytest.approx(0.1)


def _turn(event_id: str, summary: str, actor: str) -> Episode:
    return episode(event_id, 1, eventType="conversation_turn", sessionId="s-1", summary=summary, actorId=actor)


def test_given_a_question_turn_and_its_reply_when_ranked_then_the_reply_takes_its_share_and_says_why():
    eps = {
        "q": _turn("q", "So you're leaving the garden centre for good?", "corinne"),
        "r": _turn("r", "Yep, handing my notice in tomorrow", "dana"),
    }
    weights = RankingWeights(min_semantic=0.1)
    cands = [Candidate("q", lexical=4.0, semantic=0.7), Candidate("r", lexical=0.0, semantic=0.3)]
    items = {i.episode.event_id: i for i in Ranker(weights).rank(cands, eps, NOW, True, 10, replies={"r": "q"})}
    own = weights.semantic_share * 0.7 + (1 - weights.semantic_share) * 1.0
    assert items["q"].components.relevance == round(weights.question_share * own, 6)
    assert items["r"].components.relevance == pytest.approx(round(weights.reply_share * own, 6))
    assert items["r"].components.replies_to == "q" and items["q"].components.replies_to is None
    assert items["r"].components.semantic == pytest.approx(0.3)  # its own signals are still shown
    # Without the pairing, the question keeps its share and the reply its own relevance.
    alone = {i.episode.event_id: i for i in Ranker(weights).rank(cands, eps, NOW, True, 10)}
    assert alone["r"].components.relevance == pytest.approx(round(weights.semantic_share * 0.3, 6))
    assert alone["r"].components.replies_to is None


def test_given_a_reply_whose_own_meaning_is_below_the_floor_when_ranked_then_its_question_does_not_carry_it():
    eps = {"q": _turn("q", "How was Lisbon?", "corinne"), "r": _turn("r", "lol same", "dana")}
    cands = [Candidate("q", lexical=4.0, semantic=0.7), Candidate("r", lexical=0.0, semantic=0.05)]
    items = Ranker(RankingWeights(min_semantic=0.1)).rank(cands, eps, NOW, True, 10, replies={"r": "q"})
    assert [i.episode.event_id for i in items] == ["q"]


def test_given_a_reply_more_relevant_than_its_question_when_ranked_then_its_own_relevance_stands():
    eps = {"q": _turn("q", "Any news?", "corinne"), "r": _turn("r", "I got the job at the glasshouses", "dana")}
    cands = [Candidate("q", lexical=0.5, semantic=0.2), Candidate("r", lexical=4.0, semantic=0.8)]
    items = {i.episode.event_id: i for i in Ranker().rank(cands, eps, NOW, True, 10, replies={"r": "q"})}
    assert items["r"].components.replies_to is None
    assert items["r"].components.relevance == pytest.approx(round(RankingWeights().semantic_share * 0.8 + 0.15, 6))


def test_given_a_question_that_is_not_a_turn_when_ranked_then_it_keeps_all_its_relevance():
    eps = {"e": episode("e", 1, summary="Should invoices go out as PDF?")}
    item = Ranker().rank([Candidate("e", lexical=1.0, semantic=1.0)], eps, NOW, True, 10)[0]
    assert item.components.relevance == pytest.approx(1.0)


def test_given_a_pool_when_the_leading_items_are_asked_then_they_are_the_most_relevant_evidence():
    """What a second round takes names from: by relevance alone, a question turn at its share,
    nothing under the floor on meaning, at most ``limit``."""
    eps = {
        "fact": _turn("fact", "Kirsty talked me into the half marathon", "dana"),
        "asked": _turn("asked", "Did Kirsty talk you into the half marathon?", "corinne"),
        "old": episode("old", 300),
        "noise": episode("noise", 0),
    }
    cands = [
        Candidate("asked", lexical=4.0, semantic=0.8),
        Candidate("fact", lexical=3.8, semantic=0.78),
        Candidate("old", lexical=2.0, semantic=0.6),
        Candidate("noise", lexical=4.0, semantic=0.05),  # the best words, nothing in common in meaning
    ]
    ranker = Ranker(RankingWeights(min_semantic=0.25))
    leading = [e.event_id for e in ranker.leading(cands, eps, semantic=True, limit=3)]
    assert leading == ["fact", "asked", "old"]  # the question turn yields to the statement; age does not count
    assert [e.event_id for e in ranker.leading(cands, eps, semantic=True, limit=1)] == ["fact"]
    assert ranker.leading(cands, {}, semantic=True, limit=3) == []


# ------------------------------------------------ scoring stops early, and what is not read stays unread

SUMMARIES = ["Moved the demo to Friday", "How was the trip to Porto?", "Yes, booked it", "Renewed the contract"]
TRUSTS = ["tool_result", "user_provided", "untrusted_content", "operator_entered"]


@st.composite
def pools(draw):
    """Episodes of every kind the score reads, candidates from two rounds with any signals (about
    half found by words), replies to some question turns, and a limit."""
    count = draw(st.integers(1, 30))
    episodes, first, second = {}, [], []
    for n in range(count):
        event_id = f"e{n:02d}"
        turn = draw(st.booleans())
        episodes[event_id] = episode(
            event_id,
            draw(st.floats(0, 400)),
            summary=draw(st.sampled_from(SUMMARIES)),
            importance=draw(st.floats(0, 1)),
            sourceTrust=draw(st.sampled_from(TRUSTS)),
            confidence=draw(st.sampled_from(["high", "medium", "low"])),
            **({"eventType": "conversation_turn", "sessionId": "s-1"} if turn else {}),
        )
        lexical = draw(st.sampled_from([0.0, draw(st.floats(0.1, 12))]))
        first.append(Candidate(event_id, lexical, draw(st.floats(-0.2, 1))))
        if draw(st.booleans()):
            second.append(Candidate(event_id, draw(st.sampled_from([0.0, 3.0])), draw(st.floats(-0.2, 1))))
    ids = list(episodes)
    replies = {r: q for r, q in zip(ids[1:], ids, strict=False) if draw(st.integers(0, 4)) == 0}
    widened = second if draw(st.booleans()) else None
    return episodes, first, widened, replies, draw(st.integers(1, 12))


def _served(items):
    return [(i.episode.event_id, i.score) for i in items]


@given(pools(), st.sampled_from([0.0, 0.25]))
def test_given_any_pool_when_ranked_then_stopping_early_serves_what_scoring_every_candidate_serves(pool, floor):
    episodes, first, widened, replies, limit = pool
    ranker = Ranker(RankingWeights(min_semantic=floor))
    everyone = ranker.rank(first, episodes, NOW, True, len(episodes) + 1, widened=widened, replies=replies)
    assert _served(ranker.rank(first, episodes, NOW, True, limit, widened=widened, replies=replies)) == _served(
        everyone[:limit]
    )


@given(pools(), st.sampled_from([0.0, 0.25]))
def test_given_candidates_found_by_meaning_alone_when_only_those_worth_reading_are_read_then_the_same_are_served(
    pool, floor
):
    episodes, first, widened, _, limit = pool
    ranker = Ranker(RankingWeights(min_semantic=floor))
    by_words = {c.event_id for c in (*first, *(widened or [])) if c.lexical > 0}
    read = {i: e for i, e in episodes.items() if i in by_words}
    reading = ranker.worth_reading(first, read, NOW, limit, True, widened)
    assert set(reading.ids) <= set(episodes) - set(read)
    chosen = {**read, **{i: episodes[i] for i in reading.ids}}
    served = ranker.rank(first, chosen, NOW, True, limit, widened=widened)
    assert _served(served) == _served(ranker.rank(first, episodes, NOW, True, limit, widened=widened))
    if reading.settled is not None:  # nothing was worth reading: its ranking is the one served
        assert not reading.ids
        settled = ranker.rank(first, chosen, NOW, True, limit, widened=widened, settled=reading.settled)
        assert [(i.episode.event_id, i.score, i.components) for i in settled] == [
            (i.episode.event_id, i.score, i.components) for i in served
        ]


def test_given_a_pool_found_mostly_by_meaning_when_the_words_best_are_read_then_the_far_ones_are_not_worth_reading():
    episodes = {f"e{n}": episode(f"e{n}", 1) for n in range(30)}
    by_words = [Candidate(f"e{n}", 12.0 - n, 0.8) for n in range(12)]
    by_meaning = [Candidate(f"e{n}", 0.0, 0.05) for n in range(12, 30)]  # far in meaning
    read = {i: e for i, e in episodes.items() if int(i[1:]) < 12}
    reading = Ranker().worth_reading([*by_words, *by_meaning], read, NOW, 10, True)
    assert reading.ids == [] and reading.settled is not None
    served = Ranker().rank([*by_words, *by_meaning], read, NOW, True, 10, settled=reading.settled)
    assert [i.episode.event_id for i in served] == [
        i.episode.event_id for i in Ranker().rank(by_words, read, NOW, True, 10)
    ]
    close = [Candidate("e29", 0.0, 0.99)]  # as close in meaning as the best: worth reading
    reading = Ranker().worth_reading([*by_words, *by_meaning[:-1], *close], read, NOW, 10, True)
    assert reading.ids == ["e29"] and reading.settled is None
