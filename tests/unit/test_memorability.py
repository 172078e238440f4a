"""Sentence-level memorability and sensitive disclosures (policies 2026-12-01.1 to 2026-12-02.4):
a greeting or thanks around a fact does not make a turn chatter; a personal disclosure is
kept, private, with the kind named."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from episodic.domain.model import Caller, EpisodeProposal, PrivacyClass, Role
from episodic.domain.policy import WritePolicy, memorability, replied_turn
from episodic.domain.policy.chatter import ChatterClassifier, default_classifier
from episodic.domain.policy.sensitivity import disclosures

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
        ("It's from my grandma.", "relation"),
        ("Haha yeah, my dog loves it", "relation"),
        ("I love it, the colours are so vibrant.", "preference"),
        ("We really enjoyed the ferry crossing", "preference"),
    ],
)
def test_given_a_short_personal_fact_when_judged_then_few_words_are_enough(text: str, why: str) -> None:
    decision, _ = WritePolicy().decide(turn(text), AGENT, NOW)
    assert "not_memorable" not in decision.reasons
    assert any(s.verdict == "memorable" and s.why == why for s in decision.sentences)


@pytest.mark.parametrize("text", ["I love you too x", "I like that!", "Love you, miss you"])
def test_given_affection_made_only_of_pleasantries_when_judged_then_it_stays_chatter(text: str) -> None:
    decision, _ = WritePolicy().decide(turn(text), AGENT, NOW)
    assert "not_memorable" in decision.reasons


@pytest.mark.parametrize(
    "text",
    [
        "Thanks! Still saving up for a new car.",
        "Training for a marathon.",
        "Learning to play guitar.",
        "Saving for a house.",
        "Working on a new painting.",
    ],
)
def test_given_what_the_speaker_is_doing_with_the_speaker_left_out_when_judged_then_it_is_their_news(
    text: str,
) -> None:
    decision, _ = WritePolicy().decide(turn(text), AGENT, NOW)
    assert decision.decision.value == "allow"
    assert decision.sentences[-1].why == "ongoing"


@pytest.mark.parametrize(
    "text",
    [
        "Counting down the days!",
        "Wishing you the best.",
        "Getting ready for bed.",
        "Interesting point.",
        "King of the world!",
        "Heading to bed",
    ],
)
def test_given_an_opening_in_ing_that_greets_wishes_or_feels_when_judged_then_it_is_not_news(text: str) -> None:
    decision, _ = WritePolicy().decide(turn(text), AGENT, NOW)
    assert all(s.why != "ongoing" for s in decision.sentences)
    assert decision.decision.value == "deny"


@pytest.mark.parametrize(
    "text",
    [
        "Thanks! Still saving up for a new car.",
        "It's from my grandma.",
        "haha ok",
        "Can't wait to hear more.",
        "The vet says it's just a sprain.",
        "Cool, what kind of car?",
    ],
)
def test_given_the_same_text_under_any_event_type_when_decided_then_the_verdicts_are_the_same(text: str) -> None:
    """The batch route may send a turn under any event type; the conversation path sends
    ``conversation_turn``. The sentence judge reads the words only, so the routes decide alike."""
    verdicts = {
        kind: [(s.verdict, s.why) for s in WritePolicy().decide(turn(text, eventType=kind), AGENT, NOW)[0].sentences]
        for kind in ("conversation_turn", "tool_observed_event", "feedback", "session_summary")
    }
    assert len({tuple(v) for v in verdicts.values()}) == 1, verdicts


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
    verdicts = memorability.judge(text, default_classifier())
    assert all(v.why != "named_thing" for v in verdicts)


@pytest.mark.parametrize(
    "text", ["Sold the car.", "Dad retired.", "Got engaged!", "We're expecting!", "Kids loved the zoo.", "Went vegan."]
)
def test_given_a_short_turn_saying_what_happened_when_judged_then_it_is_kept_as_an_event(text: str) -> None:
    decision, _ = WritePolicy().decide(turn(text), AGENT, NOW)
    assert "not_memorable" not in decision.reasons
    assert [s.why for s in decision.sentences] == ["event"]


@pytest.mark.parametrize(
    "text",
    [
        "Fingers crossed!",
        "So thrilled for you both!",
        "User thanked the assistant.",
        "Customer opened the chat with a greeting.",
        "Who won?",
        "Hope you had fun at the party!",
        "You ran a marathon!",
        "Are you engaged?!",
    ],
)
def test_given_a_feeling_a_narrated_pleasantry_a_question_or_the_listeners_news_then_it_is_no_event(
    text: str,
) -> None:
    verdicts = memorability.judge(text, default_classifier())
    assert all(v.why != "event" for v in verdicts)


SHORT_TURNS = Path(__file__).parents[1] / "evals" / "short_turns.jsonl"


@pytest.mark.parametrize(("split", "denied_facts", "kept_chatter"), [("dev", 4, 0), ("test", 2, 1)])
def test_given_one_line_turns_of_news_and_of_small_talk_then_the_news_is_kept(
    split: str, denied_facts: int, kept_chatter: int
) -> None:
    """Whole turns of a few words ("Got engaged!", "Haha stop it."), written for this check: the
    dev half was tuned on, the test half written before the event rule was measured on it, once
    (policy 2026-12-02.1 denied 34 of the 50 and 24 of the 40 facts)."""
    rows = [json.loads(line) for line in SHORT_TURNS.read_text().splitlines()]
    rows = [r for r in rows if r["split"] == split]
    kept = {r["text"]: memorability.memorable(memorability.judge(r["text"], default_classifier()))
            for r in rows}  # fmt: skip
    facts = [r["text"] for r in rows if r["label"] == "memorable"]
    chatter = [r["text"] for r in rows if r["label"] == "chatter"]
    denied = [t for t in facts if not kept[t]]
    kept_small_talk = [t for t in chatter if kept[t]]
    print(
        f"\n{split}: {len(denied)} of {len(facts)} facts denied, {len(kept_small_talk)} of {len(chatter)} chatter kept"
    )
    assert len(facts) >= 40 and len(chatter) >= 30
    assert len(denied) <= denied_facts, denied
    assert len(kept_small_talk) <= kept_chatter, kept_small_talk


CONTEXT_TURNS = Path(__file__).parents[1] / "evals" / "context_turns.jsonl"


@pytest.mark.parametrize(("split", "denied_facts", "kept_chatter"), [("dev", 0, 7), ("test", 0, 3)])
def test_given_turns_after_a_pleasantry_or_in_reply_then_their_facts_are_kept(
    split: str, denied_facts: int, kept_chatter: int
) -> None:
    """News after a pleasantry ("Thanks! Still saving up for a van"), replies that say what they
    are about by their place ("Fish only, no red meat" to "Do you eat meat?"), and small talk of
    the same shapes, each with the turn before it when there is one: written blind for this check;
    the dev half was tuned on (judged alone, the replies lost 5 of 34 facts there, 2 of 34 in test)."""
    rows = [json.loads(line) for line in CONTEXT_TURNS.read_text().splitlines()]
    rows = [r for r in rows if r["split"] == split]
    classifier = default_classifier()
    kept = [memorability.memorable(memorability.judge(r["text"], classifier, r.get("previous"))) for r in rows]
    alone = [memorability.memorable(memorability.judge(r["text"], classifier)) for r in rows]
    facts = [i for i, r in enumerate(rows) if r["label"] == "memorable"]
    chatter = [i for i, r in enumerate(rows) if r["label"] == "chatter"]
    denied = [rows[i]["text"] for i in facts if not kept[i]]
    kept_small_talk = [rows[i]["text"] for i in chatter if kept[i]]
    print(
        f"\n{split}: {len(denied)} of {len(facts)} facts denied, {len(kept_small_talk)} of {len(chatter)} chatter kept"
    )
    assert len(facts) >= 80 and len(chatter) >= 45
    assert len(denied) <= denied_facts, denied
    assert len(kept_small_talk) <= kept_chatter, kept_small_talk
    assert sum(not alone[i] for i in facts) > len(denied)  # the turn before is what keeps some of them


def test_given_a_reply_then_only_the_turn_just_before_by_another_speaker_of_its_session_is_what_it_answers() -> None:
    def turn(actor: str, text: str, minute: int, session: str | None = "s1") -> EpisodeProposal:
        return EpisodeProposal.model_validate(
            {"eventType": "conversation_turn", "actorId": actor, "summary": text, "sessionId": session,
             "occurredAt": f"2026-11-01T10:{minute:02d}:00Z", "sourceRefs": [f"t:{minute}"],
             "sourceTrust": "user_provided"}
        )  # fmt: skip

    question, answer = turn("ana", "Do you eat meat?", 1), turn("ben", "Fish only, no red meat", 2)
    assert replied_turn(question, answer) == "Do you eat meat?"
    assert replied_turn(None, answer) is None
    assert replied_turn(turn("ben", "Do you eat meat?", 1), answer) is None  # the speaker's own turn
    assert replied_turn(turn("ana", "Do you eat meat?", 1, "s2"), answer) is None  # another session
    assert replied_turn(turn("ana", "Do you eat meat?", 3), answer) is None  # said after the reply
    verdicts = memorability.judge(answer.summary, default_classifier(), replied_turn(question, answer))
    assert [(v.verdict, v.why) for v in verdicts] == [("memorable", "answer")]
    told = memorability.judge(answer.summary, default_classifier(), "Fish is great.")
    assert not memorability.memorable(told)  # an answer only to a question
    assert not memorability.memorable(
        memorability.judge("Thanks! What about you?", default_classifier(), "How are you?")
    )


def test_given_sentences_joined_by_dashes_and_semicolons_when_split_then_each_is_judged() -> None:
    parts = memorability.sentences("Hiya \u2013 I moved to Leeds; the flat is tiny.\nLove you x")
    assert parts == ["Hiya", "I moved to Leeds", "the flat is tiny.", "Love you x"]


def test_given_a_shouted_greeting_when_judged_then_its_capitals_are_not_names() -> None:
    verdicts = memorability.judge("GOOD MORNING KEZ", default_classifier())
    assert [v.verdict for v in verdicts] == ["chatter"]


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("I've got about £6,000 on credit cards and rang a debt advice line", "finances"),
        ("They referred Mum to the memory clinic after the bloods", "health"),
        ("I started therapy for the panic attacks", "mental_health"),
        ("I've started seeing a counsellor through my GP", "mental_health"),
        ("I came out to my dad last night", "sexuality_identity"),
        ("Sol and Priyanka are separating", "family_trouble"),
        ("We went to church together for the first time in years", "beliefs"),
        ("I'm Muslim, so no bacon rolls for me", "beliefs"),
        ("We're completely broke until payday", "finances"),
        ("I\u2019m Muslim, typed with a curly apostrophe", "beliefs"),
    ],
)
def test_given_a_personal_disclosure_when_checked_then_its_kind_is_named(text: str, kind: str) -> None:
    assert kind in disclosures(text)


@pytest.mark.parametrize(
    "text",
    [
        "The new rota came out and I'm on nights",
        "The church hall hosts the village show",
        "I paid the rent",
        "The car broke down again",
        "Christian is coming over later",
        "I'm a counselor at a youth center",
        "She\u2019s a counsellor at the school",
        "I want to become a counsellor one day",
        "I'm looking into counseling jobs",
    ],
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


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("I'm bipolar.", "mental_health"),
        ("I have diabetes.", "health"),
        ("I'm gay.", "sexuality_identity"),
        ("I'm transgender, and proud of it.", "sexuality_identity"),
        ("I'm Muslim.", "beliefs"),
        ("We're broke.", "finances"),
    ],
)
def test_given_a_disclosure_of_a_few_words_when_decided_then_it_is_kept_and_classified(text: str, kind: str) -> None:
    """Policy 2026-12-02.4: a short sentence never reached the disclosure patterns, so "I'm
    bipolar." was denied as chatter with its sensitive kind named beside the denial."""
    verdicts = memorability.judge(text, default_classifier())
    assert [v.why for v in verdicts] == ["disclosure"]
    decision, _ = WritePolicy().decide(turn(text), AGENT, NOW)
    assert decision.decision == "allow" and "not_memorable" not in decision.reasons
    assert f"sensitive:{kind}" in decision.reasons
    assert decision.suggested_privacy_class is PrivacyClass.SENSITIVE


@pytest.mark.parametrize("text", ["Are you pregnant?!", "Oh no, cancer?", "Your therapy?"])
def test_given_a_short_disclosure_word_asked_of_the_listener_then_it_stays_chatter(text: str) -> None:
    verdicts = memorability.judge(text, default_classifier())
    assert not memorability.memorable(verdicts), verdicts


@pytest.mark.parametrize(
    "text",
    ["Ivo asked for paper invoices", "Customer asked to speak to a manager", "Dana complained about late parcels"],
)
def test_given_a_request_naming_what_was_asked_when_judged_then_it_is_a_fact(text):
    assert [(v.verdict, v.why) for v in memorability.judge(text, default_classifier())] == [("memorable", "request")]


def test_given_a_request_about_the_conversation_itself_when_judged_then_it_is_not_a_request():
    assert all(v.why != "request" for v in memorability.judge("User asked for help", default_classifier()))


ONGOING_TURNS = Path(__file__).parents[1] / "evals" / "ongoing_turns.jsonl"


@pytest.mark.parametrize(
    ("split", "facts", "facts_kept", "chatter", "chatter_kept"), [("dev", 40, 38, 40, 7), ("test", 38, 32, 37, 6)]
)
def test_given_turns_that_open_in_ing_written_blind_then_news_is_kept_and_small_talk_is_not(
    split: str, facts: int, facts_kept: int, chatter: int, chatter_kept: int
) -> None:
    """Turns whose last sentence opens with a word in -ing, half the speaker's news ("Still saving up
    for a new car.") and half small talk of the same shape ("Counting down the days!"), each split
    written blind by a helper: dev after the rule's first version (then tuned on: numbers and
    "myself" after the verb), test after the rule as it is, never tuned on (less the five turns
    both helpers wrote). Without the rule, dev lost six of its 40 facts and kept seven of 40 small
    talk; test lost eight of 38 facts and kept five of 37."""
    rows = [json.loads(line) for line in ONGOING_TURNS.read_text().splitlines()]
    rows = [r for r in rows if r["split"] == split]
    classifier = default_classifier()
    kept = [memorability.memorable(memorability.judge(r["text"], classifier)) for r in rows]
    facts_seen = [k for k, r in zip(kept, rows, strict=True) if r["label"] == "memorable"]
    chatter_seen = [k for k, r in zip(kept, rows, strict=True) if r["label"] == "chatter"]
    assert len(facts_seen) == facts and len(chatter_seen) == chatter
    assert sum(facts_seen) >= facts_kept
    assert sum(chatter_seen) <= chatter_kept


CALLS_ALL_CHATTER = ChatterClassifier({"bias": 10.0})
"""Test double: a chatter classifier that calls every sentence it is asked about chatter, so only the
rules around it can keep a turn."""


def test_given_news_in_bursts_when_judged_then_the_turn_is_read_together_and_kept() -> None:
    verdicts = memorability.judge("PASSED!! Friday! Second attempt, on parking", CALLS_ALL_CHATTER)
    assert [v.verdict for v in verdicts] == ["chatter", "chatter", "memorable"]
    assert verdicts[2].why == "together"


@pytest.mark.parametrize(
    "text",
    [
        "Ha. Right. Whatever gives you a bit of peace, honestly.",  # said to the listener
        "Qué bonito. Besos para todos. Mañana hablamos",  # no English: its pleasantries are no content here
        "Kez!! Miss you loads. Call me later x",
        "Lovely. Which beach was it? Was the water warm enough?",  # questions
    ],
)
def test_given_small_talk_in_bursts_when_judged_then_it_stays_chatter(text: str) -> None:
    assert not memorability.memorable(memorability.judge(text, CALLS_ALL_CHATTER))


def test_given_a_reply_in_two_short_sentences_when_decided_then_it_is_kept() -> None:
    decision, _ = WritePolicy().decide(turn("Everything except olives. He's very fussy about the olives"), AGENT, NOW)
    assert decision.decision == "allow"
