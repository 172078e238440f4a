"""Sentence-level memorability and sensitive disclosures (policies 2026-12-01.1 to 2026-12-02.1, issue #12):
a greeting or thanks around a fact does not make a turn chatter; a personal disclosure is
kept, private, with the kind named."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from episodic.model import Caller, EpisodeProposal, PrivacyClass, Role
from episodic.policy import WritePolicy, memorability
from episodic.policy.chatter import default_classifier
from episodic.policy.sensitivity import disclosures

NOW = datetime(2026, 12, 1, tzinfo=UTC)
AGENT = Caller(tenant_id="acme", role=Role.AGENT, principal_id="agent-1")


def turn(text: str, **extra: object) -> EpisodeProposal:
    return EpisodeProposal.model_validate(
        {"eventType": "conversation_turn", "actorId": "sam", "occurredAt": NOW.isoformat(), "summary": text,
         "sourceRefs": ["t1"], "sourceTrust": "user_provided", **extra}
    )  # fmt: skip


@pytest.mark.parametrize(
    ("text", "opens_with_small_talk"),
    [
        ("Hey Sam! Long time no talk! I had a health scare last week, a sudden heart palpitation incident.", True),
        ("Hey John, how's it going? I took a creative writing class recently.", True),
        ("Hey Evan, long time no see! I've started eating healthier.", True),
        ("I took your recommendation and watched the Lord of the Rings trilogy last night!", False),
        ("Thanks so much! Oh, and the plumber is coming on Tuesday at 9.", True),
    ],
)
def test_given_a_fact_wrapped_in_pleasantries_when_judged_then_it_is_kept(
    text: str, opens_with_small_talk: bool
) -> None:
    decision, _ = WritePolicy().decide(turn(text), AGENT, NOW)
    assert "not_memorable" not in decision.reasons
    assert (decision.sentences[0].verdict == "chatter") is opens_with_small_talk
    assert decision.sentences[-1].verdict == "memorable"


@pytest.mark.parametrize(
    "text",
    ["Thanks! Have a great weekend", "Haha fair. Talk soon x", "Oh no, are you OK?", "Hey you! How's it going??"],
)
def test_given_only_small_talk_when_judged_then_it_is_not_memorable_with_every_sentence_explained(text: str) -> None:
    decision, _ = WritePolicy().decide(turn(text), AGENT, NOW)
    assert decision.decision == "deny" and "not_memorable" in decision.reasons
    assert decision.sentences and all(s.verdict == "chatter" for s in decision.sentences)
    assert [s.index for s in decision.sentences] == list(range(len(decision.sentences)))


@pytest.mark.parametrize(
    "text",
    [
        "He'd love that. I'll ask him properly.",
        "Kez. Are you sitting down. Owen proposed!!!",
        "Mum's planning a party.",
    ],
)
def test_given_a_short_plan_or_decision_when_judged_then_it_is_kept_as_a_plan(text: str) -> None:
    decision, _ = WritePolicy().decide(turn(text), AGENT, NOW)
    assert "not_memorable" not in decision.reasons
    assert any(s.verdict == "memorable" and s.why == "plan" for s in decision.sentences)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("I'll be ready, I'm off that whole weekend.", "time"),
        ("We're away next week!", "time"),
        ("Yes, both of us! I need a night out", "preference"),
        ("We'd rather not.", "preference"),
    ],
)
def test_given_a_short_personal_fact_when_judged_then_few_words_are_enough(text: str, why: str) -> None:
    decision, _ = WritePolicy().decide(turn(text), AGENT, NOW)
    assert "not_memorable" not in decision.reasons
    assert any(s.verdict == "memorable" and s.why == why for s in decision.sentences)


@pytest.mark.parametrize("text", ["Have a good weekend!", "See you next week x", "I know, right?"])
def test_given_a_short_pleasantry_with_a_time_or_a_pronoun_when_judged_then_it_stays_chatter(text: str) -> None:
    decision, _ = WritePolicy().decide(turn(text), AGENT, NOW)
    assert "not_memorable" in decision.reasons


@pytest.mark.parametrize("text", ["Dingle's even better. Book it.", "Priya\u2019s moving!!", "Rafa's flat is tiny"])
def test_given_a_sentence_opening_with_a_possessive_name_when_judged_then_it_names_a_thing(text: str) -> None:
    decision, _ = WritePolicy().decide(turn(text), AGENT, NOW)
    assert "not_memorable" not in decision.reasons
    assert decision.sentences[0].verdict == "memorable" and decision.sentences[0].why == "named_thing"


@pytest.mark.parametrize("text", ["It's fine!", "Who's in?", "That\u2019s so nice", "Everyone's well x"])
def test_given_a_possessive_pronoun_or_question_word_first_when_judged_then_it_is_no_name(text: str) -> None:
    verdicts = memorability.judge(text, "conversation_turn", default_classifier())
    assert all(v.why != "named_thing" for v in verdicts)


def test_given_sentences_joined_by_dashes_and_semicolons_when_split_then_each_is_judged() -> None:
    parts = memorability.sentences("Hiya \u2013 I moved to Leeds; the flat is tiny.\nLove you x")
    assert parts == ["Hiya", "I moved to Leeds", "the flat is tiny.", "Love you x"]


def test_given_a_shouted_greeting_when_judged_then_its_capitals_are_not_names() -> None:
    verdicts = memorability.judge("GOOD MORNING KEZ", "conversation_turn", default_classifier())
    assert [v.verdict for v in verdicts] == ["chatter"]


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("I've got about £6,000 on credit cards and rang a debt advice line", "finances"),
        ("They referred Mum to the memory clinic after the bloods", "health"),
        ("I started therapy for the panic attacks", "mental_health"),
        ("I came out to my dad last night", "sexuality_identity"),
        ("Sol and Priyanka are separating", "family_trouble"),
        ("We went to church together for the first time in years", "beliefs"),
    ],
)
def test_given_a_personal_disclosure_when_checked_then_its_kind_is_named(text: str, kind: str) -> None:
    assert kind in disclosures(text)


@pytest.mark.parametrize(
    "text", ["The new rota came out and I'm on nights", "The church hall hosts the village show", "I paid the rent"]
)
def test_given_ordinary_words_that_look_sensitive_when_checked_then_nothing_is_named(text: str) -> None:
    assert disclosures(text) == []


def test_given_a_disclosure_marked_internal_when_decided_then_it_keeps_its_class_and_sensitive_is_suggested() -> None:
    decision, stored = WritePolicy().decide(turn("Hi! I was diagnosed with diabetes on Monday."), AGENT, NOW)
    assert decision.decision == "allow"
    assert stored.privacy_class is PrivacyClass.INTERNAL
    assert decision.suggested_privacy_class is PrivacyClass.SENSITIVE
    assert "sensitive:health" in decision.reasons and "privacy_raised_to_private" not in decision.reasons


def test_given_private_disclosures_configured_when_one_marked_internal_is_decided_then_it_is_stored_private() -> None:
    policy = WritePolicy(private_disclosures=True)
    decision, stored = policy.decide(turn("Hi! I was diagnosed with diabetes on Monday."), AGENT, NOW)
    assert decision.decision == "allow"
    assert stored.privacy_class is PrivacyClass.PRIVATE
    assert decision.suggested_privacy_class is PrivacyClass.SENSITIVE
    assert {"sensitive:health", "privacy_raised_to_private"} <= set(decision.reasons)


def test_given_a_disclosure_already_private_when_decided_then_only_the_suggestion_is_added() -> None:
    decision, stored = WritePolicy().decide(turn("My divorce came through", privacyClass="private"), AGENT, NOW)
    assert stored.privacy_class is PrivacyClass.PRIVATE and "privacy_raised_to_private" not in decision.reasons
    assert decision.suggested_privacy_class is PrivacyClass.SENSITIVE
