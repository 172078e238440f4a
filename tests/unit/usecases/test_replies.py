"""The reply to a question turn (episodic.application.usecases.replies): the next turn of its session, when
another speaker says it, read under the recall's own scope."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from episodic.application.usecases.reads import scope_for
from episodic.application.usecases.replies import replies_to, shifted
from episodic.domain.model import TimelineRequest
from tests.support.factories import AGENT, TURNS_START, remember_turn


def _turn(writes, store, summary, actor, minute=0, session="s-1", **extra):
    return store.episodes.get(AGENT.tenant_id, remember_turn(writes, summary, minute, session, actorId=actor, **extra))


def test_given_turns_at_one_time_when_a_reply_is_looked_up_then_the_write_order_decides(writes, store, clock):
    # A harness may date every turn of a session with the session's date.
    asked = _turn(writes, store, "Are you still moving to Lisbon on 22 April?", "aga")
    other_session = _turn(writes, store, "The roaster arrives on Friday", "rafael", session="s-2")
    reply = _turn(writes, store, "Yes, the relocation company found us a flat in Alfama", "rafael")
    later = _turn(writes, store, "Then I will visit you in Lisbon in May", "aga")

    scope = scope_for(AGENT, clock.now())
    found = replies_to(store.episodes, scope, [asked, later])
    assert {k: v.event_id for k, v in found.items()} == {asked.event_id: reply.event_id}  # later: nothing after it
    assert replies_to(store.episodes, scope, [other_session]) == {}  # alone in its session


def test_given_a_reply_outside_the_scope_when_looked_up_then_none_is_found(writes, store, clock):
    asked = _turn(writes, store, "Are you still moving to Lisbon on 22 April?", "aga")
    _turn(writes, store, "Yes, and the new job pays off my card debt", "rafael", minute=1, privacyClass="private")

    assert replies_to(store.episodes, scope_for(AGENT, clock.now()), [asked]) == {}  # private needs its actor
    assert replies_to(store.episodes, scope_for(AGENT, clock.now(), TimelineRequest(actor_id="aga")), [asked]) == {}
    found = replies_to(store.episodes, scope_for(AGENT, clock.now(), TimelineRequest(actor_id="rafael")), [asked])
    assert found == {}  # the question itself is outside a scope of Rafael's turns: no order to follow


def test_given_a_reply_after_the_window_or_the_scope_when_looked_up_then_none_is_found(writes, store, clock):
    asked = _turn(writes, store, "Are you still moving to Lisbon on 22 April?", "aga")
    _turn(writes, store, "Yes, the relocation company found us a flat in Alfama", "rafael", minute=61)
    assert replies_to(store.episodes, scope_for(AGENT, clock.now()), [asked]) == {}
    inside = _turn(writes, store, "Sorry, yes, from the 22nd", "rafael", minute=30)
    assert (
        replies_to(store.episodes, scope_for(AGENT, clock.now()), [asked])[asked.event_id].event_id == inside.event_id
    )
    early = scope_for(AGENT, clock.now(), TimelineRequest(occurred_before=TURNS_START + timedelta(minutes=10)))
    assert replies_to(store.episodes, early, [asked]) == {}


def test_given_the_calendars_ends_when_shifted_then_the_moment_is_held_there():
    last = datetime.max.replace(tzinfo=UTC) - timedelta(minutes=30)
    assert shifted(last, timedelta(hours=1)) == datetime.max.replace(tzinfo=UTC)
    assert shifted(datetime.min.replace(tzinfo=UTC), -timedelta(hours=1)) == datetime.min.replace(tzinfo=UTC)


def test_given_turns_without_a_session_when_a_reply_is_looked_up_then_the_next_turn_is_it(writes, store, clock):
    asked = _turn(writes, store, "Are you still moving to Lisbon on 22 April?", "aga", session=None)
    reply = _turn(writes, store, "Yes, the relocation company found us a flat in Alfama", "rafael", session=None)
    assert asked.session_id is None
    found = replies_to(store.episodes, scope_for(AGENT, clock.now()), [asked])
    assert found[asked.event_id].event_id == reply.event_id
