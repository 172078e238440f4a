"""The conversation path over HTTP: ``POST /v1/sessions/{sessionId}/turns`` keeps
what is worth remembering with its turn id, leaves small talk out, answers with how each
sentence was judged, and closes a session with a handoff summary that cites its turns."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from episodic.application.settings import Settings
from episodic.bootstrap.local import build_local_service
from episodic.domain.model import Caller, RecallRequest, Role
from episodic.domain.model.conversations import TurnsRequest
from tests.e2e.conftest import Api

START = datetime(2026, 11, 20, 18, 0, tzinfo=UTC)


def turn(n: int, speaker: str, text: str, **extra: object) -> dict[str, object]:
    return {"turnId": f"s1-t{n}", "speaker": speaker, "text": text,
            "occurredAt": (START + timedelta(minutes=n)).isoformat(), **extra}  # fmt: skip


SESSION = [
    turn(1, "sam", "Hey John! Long time no talk! I took a creative writing class recently, it's on Thursdays."),
    turn(2, "john", "Oh nice, where is it?"),
    turn(3, "sam", "At the Elm Street library, the teacher is a retired journalist called Marta."),
    turn(4, "john", "Thanks! Have a great weekend"),
]


def test_given_a_session_when_its_turns_are_added_then_facts_are_kept_and_small_talk_left_out(api: Api) -> None:
    response = api.post("/v1/sessions/s1/turns", {"turns": SESSION})
    assert response.status_code == 200, response.text
    body = response.json()
    decisions = {t["turnId"]: t["decision"] for t in body["turns"]}
    assert decisions == {"s1-t1": "allow", "s1-t2": "deny", "s1-t3": "allow", "s1-t4": "deny"}
    assert body["kept"] == 2
    first = body["turns"][0]
    verdicts = [s["verdict"] for s in first["sentences"]]
    assert verdicts[0] == "chatter" and verdicts[-1] == "memorable"  # the greeting did not sink the fact
    assert "not_memorable" in body["turns"][3]["reasons"]

    stored = api.get(f"/v1/episodes/{first['eventId']}").json()
    assert stored["sourceRefs"] == ["s1-t1"] and stored["sessionId"] == "s1" and stored["actorId"] == "sam"


def test_given_kept_turns_when_recalled_then_they_come_back_with_their_turn_ids(api: Api) -> None:
    api.post("/v1/sessions/s1/turns", {"turns": SESSION})
    found = api.post("/v1/recall", {"query": "where is Sam's writing class?", "limit": 3}).json()
    assert "s1-t3" in [ref for item in found["items"] for ref in item["episode"]["sourceRefs"]]


def test_given_the_end_of_a_session_when_closed_then_a_handoff_summary_cites_the_kept_turns(api: Api) -> None:
    body = api.post("/v1/sessions/s1/turns", {"turns": SESSION, "endSession": True}).json()
    handoff = body["handoff"]
    assert handoff["decision"] == "allow", handoff
    assert sorted(handoff["citedTurnIds"]) == ["s1-t1", "s1-t3"]
    digest = api.get(f"/v1/episodes/{handoff['eventId']}").json()
    assert digest["eventType"] == "session_summary" and digest["sessionId"] == "s1"
    assert all(ref.startswith("episode:") for ref in digest["sourceRefs"]) and len(digest["sourceRefs"]) == 2
    assert "Thanks" not in digest["summary"] and "Hey John" not in digest["summary"]


def test_given_turns_of_one_long_sentence_when_the_session_closes_then_the_handoff_is_cut_to_fit(api: Api) -> None:
    """Two turns of ~3,100 characters each, one sentence apiece: a handoff repeating both whole would
    pass a summary's limit (the request answered 500 after storing the turns)."""
    long_turns = [
        turn(1, "sam", "Sam said that " + "the blue tram to the harbour was late again " * 70),
        turn(2, "sam", "Sam also said that " + "the night bus to the airport skipped the stop " * 66),
    ]
    response = api.post("/v1/sessions/s9/turns", {"turns": long_turns, "endSession": True})
    assert response.status_code == 200, response.text
    handoff = response.json()["handoff"]
    assert handoff["decision"] == "allow", handoff
    digest = api.get(f"/v1/episodes/{handoff['eventId']}").json()
    assert len(digest["summary"]) <= 4000 and digest["sourceTrust"] == "user_provided"
    assert [line[:14] for line in digest["summary"].split("\n")] == ["Sam said that ", "Sam also said "]


def test_given_a_sensitive_disclosure_when_added_then_it_is_kept_named_and_left_out_of_the_handoff(api: Api) -> None:
    text = "Can I tell you something? I was diagnosed with anxiety and started therapy on Tuesday."
    turns = [turn(1, "sam", text), turn(2, "sam", "Also I booked the Lisbon flights for the 14th of March.")]
    body = api.post("/v1/sessions/s2/turns", {"turns": turns, "endSession": True}).json()
    result = body["turns"][0]
    assert result["decision"] == "allow"
    assert "sensitive:mental_health" in result["reasons"] and "privacy_raised_to_private" not in result["reasons"]
    assert result["suggestedPrivacyClass"] == "sensitive"  # the caller may propose it again as sensitive
    assert api.get(f"/v1/episodes/{result['eventId']}").json()["privacyClass"] == "internal"
    found = api.post("/v1/recall", {"query": "therapy for anxiety"}).json()["items"]
    assert [i["episode"]["eventId"] for i in found][:1] == [result["eventId"]]
    # A summary is read more widely than its turns: the handoff repeats the flights, not the diagnosis.
    assert body["handoff"]["citedTurnIds"] == ["s1-t2"]
    handoff = api.get(f"/v1/episodes/{body['handoff']['eventId']}").json()["summary"]
    assert "Lisbon" in handoff and "anxiety" not in handoff and "therapy" not in handoff


def test_given_private_disclosures_configured_when_one_is_added_then_only_recall_scoped_to_its_actor_shows_it(
    tmp_path, minilm
) -> None:
    service = build_local_service(
        Settings(data_dir=tmp_path / "private", sensitive_disclosures="private"), embedder=minilm
    )
    agent = Caller(tenant_id="acme", role=Role.AGENT, principal_id="agent-1")
    text = "Can I tell you something? I was diagnosed with anxiety and started therapy on Tuesday."
    with service:
        result = service.conversations.add_turns(
            agent, "s2", TurnsRequest.model_validate({"turns": [turn(1, "sam", text)]})
        )
        kept = result.turns[0]
        assert {"sensitive:mental_health", "privacy_raised_to_private"} <= set(kept.reasons)
        assert service.reads.recall(agent, RecallRequest(query="therapy")).items == []
        scoped = service.reads.recall(agent, RecallRequest(query="therapy", actorId="sam")).items
        assert [i.episode.event_id for i in scoped] == [kept.event_id]


PLANS = [
    turn(1, "dara", "Shall we build the raised beds on the bank holiday Monday, 25 May?"),
    turn(2, "noor", "Works for me!"),
]


def test_given_a_session_posted_turn_by_turn_then_each_reply_is_judged_as_in_the_whole_session(api: Api) -> None:
    whole = api.post("/v1/sessions/s1/turns", {"turns": PLANS}).json()["turns"]
    assert [t["decision"] for t in whole] == ["allow", "allow"]  # the reply answers the question before it
    for session in ("s2", "s3"):
        first = api.post(f"/v1/sessions/{session}/turns", {"turns": [{**PLANS[0], "turnId": f"{session}-t1"}]})
        assert first.json()["turns"][0]["decision"] == "allow"
    # The reply alone, in its own request: the session's stored turn before it is what it answers.
    reply = api.post("/v1/sessions/s2/turns", {"turns": [{**PLANS[1], "turnId": "s2-t2"}]}).json()["turns"][0]
    assert (reply["decision"], reply["sentences"][0]["why"]) == ("allow", "answer")
    # Judged alone: posted in another session, or before the question was said.
    elsewhere = api.post("/v1/sessions/s9/turns", {"turns": [{**PLANS[1], "turnId": "s9-t2"}]}).json()["turns"][0]
    early = {**PLANS[1], "turnId": "s3-t0", "occurredAt": (START - timedelta(minutes=5)).isoformat()}
    before = api.post("/v1/sessions/s3/turns", {"turns": [early]}).json()["turns"][0]
    assert elsewhere["decision"] == before["decision"] == "deny"
    # Said in the same minute as the question, in its own request: still its reply.
    same = {**PLANS[1], "turnId": "s4-t2", "occurredAt": PLANS[0]["occurredAt"]}
    api.post("/v1/sessions/s4/turns", {"turns": [{**PLANS[0], "turnId": "s4-t1"}]})
    assert api.post("/v1/sessions/s4/turns", {"turns": [same]}).json()["turns"][0]["decision"] == "allow"


def test_given_a_request_sent_again_then_its_first_turn_does_not_reply_to_its_own_stored_turns(api: Api) -> None:
    """A retry whose first attempt stored some of its turns judges each turn as the first attempt
    did: a turn the request itself carries is never what its first turn replies to, however dated."""
    reply_first = [{**PLANS[1], "occurredAt": PLANS[0]["occurredAt"]}, PLANS[0]]  # both at one time
    first = api.post("/v1/sessions/s1/turns", {"turns": reply_first}).json()["turns"]
    assert [t["decision"] for t in first] == ["deny", "allow"]  # nothing said before the reply
    again = api.post("/v1/sessions/s1/turns", {"turns": reply_first}).json()["turns"]
    assert [t["decision"] for t in again] == ["deny", "allow"]  # the stored question is the request's own


def test_given_another_actors_private_turn_when_a_reply_is_posted_alone_then_it_is_not_read_as_context(
    api: Api,
) -> None:
    question = {**PLANS[0], "privacyClass": "private"}
    assert api.post("/v1/sessions/s1/turns", {"turns": [question]}).json()["turns"][0]["decision"] == "allow"
    reply = api.post("/v1/sessions/s1/turns", {"turns": [PLANS[1]]}).json()["turns"][0]
    assert reply["decision"] == "deny"  # a recall by this caller could not see the question: nor can its judge


def test_given_bad_turns_when_posted_then_422_and_nothing_is_stored(api: Api) -> None:
    for body in ({"turns": []}, {"turns": [{**SESSION[0], "occurredAt": "2026-11-20T18:00:00"}]}):
        assert api.post("/v1/sessions/s1/turns", body).status_code == 422
    assert api.post("/v1/sessions/bad%20id/turns", {"turns": SESSION}).status_code == 422
    assert api.get("/v1/timeline", params={"limit": 10}).json()["items"] == []


def test_given_a_blank_turn_when_added_then_the_request_is_refused_whole_with_422(api: Api) -> None:
    blank = [turn(1, "sam", "I moved to Leeds in March."), turn(2, "sam", "\t ")]
    response = api.post("/v1/sessions/s1/turns", {"turns": blank})
    assert response.status_code == 422 and "blank" in response.text
    assert api.get("/v1/timeline").json()["items"] == []  # nothing of the request was written


def test_given_turns_at_the_calendar_edges_when_recalled_then_their_neighbours_are_looked_up_without_error(
    api: Api,
) -> None:
    edges = [
        {"turnId": "e1", "speaker": "sam", "text": "I planted the first olive tree in the old garden.",
         "occurredAt": "0001-01-01T00:10:00Z"},
        {"turnId": "e2", "speaker": "sam", "text": "I will plant the last olive tree in the old garden.",
         "occurredAt": "9999-12-31T23:30:00Z"},
    ]  # fmt: skip
    assert api.post("/v1/sessions/edge/turns", {"turns": edges}).status_code == 200
    found = api.post("/v1/recall", {}).json()
    assert sorted(ref for item in found["items"] for ref in item["episode"]["sourceRefs"]) == ["e1", "e2"]


def test_given_turns_at_the_calendars_ends_when_a_session_is_closed_then_it_answers_without_a_server_error(
    api: Api,
) -> None:
    for at in ("0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z"):
        turns = [{"turnId": "t0", "speaker": "dana", "occurredAt": at, "text": "I adopted a greyhound called Pip"}]
        response = api.post(f"/v1/sessions/edge-{at[:4]}/turns", {"turns": turns, "endSession": True})
        assert response.status_code == 200, response.text
        assert response.json()["turns"][0]["decision"] in {"allow", "review", "deny"}


def test_given_another_speakers_private_turn_when_the_session_closes_then_the_handoff_leaves_it_out(
    api: Api,
) -> None:
    """The handoff is sam's (the first user), and sam's credential may read it: it repeats sam's
    turns and bob's internal ones, never bob's private one."""
    turns = [
        turn(1, "sam", "I booked the Lisbon flights for the 14th of March, window seats."),
        turn(2, "bob", "My new apartment is at 44 Rua Augusta and the door code is 7731.", privacyClass="private"),
        turn(3, "bob", "I will bring the hiking maps of Sintra for the trip."),
    ]
    body = api.post("/v1/sessions/mix/turns", {"turns": turns, "endSession": True}).json()
    assert [t["decision"] for t in body["turns"]] == ["allow", "allow", "allow"], body
    handoff = body["handoff"]
    assert handoff["decision"] == "allow" and sorted(handoff["citedTurnIds"]) == ["s1-t1", "s1-t3"]
    digest = api.get(f"/v1/episodes/{handoff['eventId']}", as_="sam")
    assert digest.status_code == 200 and digest.json()["actorId"] == "sam"
    assert "Rua Augusta" not in digest.json()["summary"] and "7731" not in digest.json()["summary"]
    timeline = api.get("/v1/timeline", params={"actorId": "sam"}, as_="sam").json()["items"]
    recalled = api.post("/v1/recall", {"query": "apartment door code Rua Augusta", "actorId": "sam"}, as_="sam")
    seen = [*timeline, *(item["episode"] for item in recalled.json()["items"])]
    assert seen and not any("Rua Augusta" in episode["summary"] for episode in seen)


def test_given_two_actors_closing_one_session_with_the_same_turn_id_then_each_gets_a_handoff(api: Api) -> None:
    """A handoff's idempotency key names its actor: another actor's close of the same session and
    turn id is no replay of it, and no conflict either; a retried close replays, before and after."""
    first = {"turns": [turn(1, "sam", "I booked the Lisbon flights for the 14th of March, window seats.")]}
    second = {"turns": [turn(1, "bob", "I will bring the hiking maps of Sintra for the trip.")]}
    key = {"Idempotency-Key": "close-sam-1"}
    sam = api.post("/v1/sessions/shared/turns", {**first, "endSession": True}, headers=key)
    retried = api.post("/v1/sessions/shared/turns", {**first, "endSession": True}, headers=key)
    bob = api.post("/v1/sessions/shared/turns", {**second, "endSession": True})
    late = api.post("/v1/sessions/shared/turns", {**first, "endSession": True}, headers=key)

    assert [r.status_code for r in (sam, retried, bob, late)] == [200, 200, 200, 200], bob.text
    handoffs = [r.json()["handoff"] for r in (sam, retried, bob, late)]
    assert [h["decision"] for h in handoffs] == ["allow"] * 4
    assert handoffs[0]["eventId"] == handoffs[1]["eventId"] == handoffs[3]["eventId"] != handoffs[2]["eventId"]
    assert "Sintra" in handoffs[2]["summary"] and "Lisbon" not in handoffs[2]["summary"]


def test_given_an_agent_using_a_handoffs_key_when_the_session_closes_then_the_handoff_is_still_written(
    api: Api,
) -> None:
    """Idempotency keys are each principal's own: a key the service's handoff will use, taken by an
    agent first, is the agent's key, not the handoff's."""
    squatted = api.post(
        "/v1/episodes",
        {"eventType": "user_preference_stated", "actorId": "sam", "occurredAt": START.isoformat(),
         "summary": "Sam prefers window seats.", "sourceRefs": ["chat:1"], "sourceTrust": "user_provided"},
        headers={"Idempotency-Key": "handoff:taken:sam:s1-t1"},
    )  # fmt: skip
    assert squatted.status_code == 201
    closing = {"turns": [turn(1, "sam", "I booked the Lisbon flights for the 14th of March.")], "endSession": True}
    response = api.post("/v1/sessions/taken/turns", closing)
    assert response.status_code == 200, response.text
    assert response.json()["handoff"]["decision"] == "allow"


def test_given_a_session_closed_again_on_its_last_turn_with_other_words_then_its_turns_are_kept_and_it_says_why(
    api: Api,
) -> None:
    """The turns are stored before the handoff is written: a handoff that cannot be written (its key
    was used for another summary of the same session) answers with its reason in a 200, never a 409
    after the turns went in."""
    first = {"turns": [turn(1, "sam", "I booked the Lisbon flights for the 14th of March.")], "endSession": True}
    assert api.post("/v1/sessions/again/turns", first).json()["handoff"]["decision"] == "allow"
    second = {"turns": [turn(1, "sam", "I booked the Porto trains for the 2nd of May.")], "endSession": True}
    response = api.post("/v1/sessions/again/turns", second)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["handoff"] == {**body["handoff"], "decision": "deny", "reasons": ["handoff_conflict"]}
    assert body["turns"][0]["decision"] == "allow"
    assert api.get(f"/v1/episodes/{body['turns'][0]['eventId']}").status_code == 200
