"""Reads (episodic.application.usecases.reads): the one scope every read uses (``scope_for``), reads by id,
and recall -- scope first, rank second, audited, counted, with neighbouring turns read under
the recall's own scope."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from episodic.application.ports import AuditQuery
from episodic.application.usecases.reads import Reads, scope_for
from episodic.domain.errors import NotFoundError, StorageError
from episodic.domain.model import Caller, PrivacyClass, RecallRequest, Role, Status, TimelineRequest
from tests.support.factories import AGENT, OPERATOR, proposal, remember_turn
from tests.unit.usecases.doubles import StoreSpyDouble

NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)
ALL_CLASSES = tuple(PrivacyClass)
SHARED_CLASSES = (PrivacyClass.PUBLIC, PrivacyClass.INTERNAL)


@pytest.mark.parametrize(
    ("caller", "actor_id", "operators_see_all", "expected"),
    [
        (AGENT, None, True, SHARED_CLASSES),
        (AGENT, "", True, SHARED_CLASSES),  # ?actorId= names no actor
        (AGENT, "cust-ana", True, ALL_CLASSES),
        (OPERATOR, None, True, ALL_CLASSES),
        (OPERATOR, "", True, ALL_CLASSES),
        (OPERATOR, None, False, SHARED_CLASSES),  # recall: no exception for operators
        (OPERATOR, "cust-ana", False, ALL_CLASSES),
    ],
)
def test_given_a_caller_and_an_actor_when_scoped_then_private_classes_need_the_actor(
    caller, actor_id, operators_see_all, expected
):
    scope = scope_for(caller, NOW, TimelineRequest(actor_id=actor_id), all_privacy_for_operators=operators_see_all)
    assert scope.privacy_classes == expected


def test_given_filters_when_scoped_then_the_tenant_is_the_callers_and_tags_are_lower_cased():
    other = Caller(tenant_id="globex", role=Role.AGENT, principal_id="agent:globex")
    scope = scope_for(other, NOW, TimelineRequest(tags=["Billing", "VIP"], statuses=[Status.ACTIVE, Status.ARCHIVED]))
    assert scope.tenant_id == "globex" and scope.now == NOW
    assert scope.tags == ("billing", "vip") and scope.statuses == (Status.ACTIVE, Status.ARCHIVED)


def test_given_an_expired_episode_not_yet_swept_when_read_by_id_or_recalled_then_it_is_not_served(writes, reads, clock):
    short = writes.remember(AGENT, proposal(retention={"expiresAt": (clock.now() + timedelta(hours=1)).isoformat()}))
    clock.advance(hours=2)
    with pytest.raises(NotFoundError):
        reads.get(AGENT, short.event_id)
    assert reads.recall(AGENT, RecallRequest(query="invoices as PDF", actor_id="user-1")).items == []


def test_given_a_private_episode_when_an_operator_recalls_unscoped_then_it_is_not_served(writes, reads):
    private = writes.remember(AGENT, proposal(actorId="cust-ana", privacyClass="private"))
    assert private.decision == "allow"
    unscoped = reads.recall(OPERATOR, RecallRequest(query="invoices as PDF"))
    assert unscoped.items == []
    assert [e.event_id for e in reads.timeline(OPERATOR).items] == [private.event_id]  # listing may show it
    scoped = reads.recall(OPERATOR, RecallRequest(query="invoices as PDF", actor_id="cust-ana"))
    assert [i.episode.event_id for i in scoped.items] == [private.event_id]


def test_given_a_recall_when_served_then_it_is_audited_without_the_query_text_and_counted(
    writes, reads, store, clock, deps
):
    written = writes.remember(AGENT, proposal())
    clock.advance(hours=1)
    response = reads.recall(AGENT, RecallRequest(query="invoices as PDF", actor_id="user-1"))
    assert [i.episode.event_id for i in response.items] == [written.event_id]
    records, _ = store.audit_log.audit(AuditQuery(tenant_id="acme", action="recall.served"))
    assert [r.audit_id for r in records] == [response.recall_id]
    assert records[0].detail == {
        "eventIds": [written.event_id],
        "queryHash": deps.pseudonyms.text("invoices as PDF"),
        "actorScoped": True,
    }
    counted = store.episodes.get("acme", written.event_id)
    assert counted.access_count == 1 and counted.last_accessed_at == clock.now()
    assert response.degraded == []


def test_given_a_question_that_is_only_a_time_phrase_when_served_then_its_hash_is_audited(writes, reads, store, deps):
    writes.remember(AGENT, proposal())
    reads.recall(AGENT, RecallRequest(query="  what happened yesterday? "))
    records, _ = store.audit_log.audit(AuditQuery(tenant_id="acme", action="recall.served"))
    assert records[0].detail["queryHash"] == deps.pseudonyms.text("what happened yesterday?")


def test_given_no_query_when_recalling_then_nothing_is_embedded_and_the_newest_come_first(
    writes, reads, store, embedder
):
    older = writes.remember(AGENT, proposal(occurredAt="2026-11-20T09:00:00Z"))
    newer = writes.remember(AGENT, proposal(summary="User's timezone is Europe/Lisbon"))
    calls = list(embedder.calls)
    response = reads.recall(AGENT, RecallRequest(actor_id="user-1"))
    assert [i.episode.event_id for i in response.items] == [newer.event_id, older.event_id]
    assert embedder.calls == calls
    records, _ = store.audit_log.audit(AuditQuery(tenant_id="acme", action="recall.served"))
    assert records[0].detail.get("queryHash") is None


def test_given_access_counts_cannot_be_written_when_recalling_then_it_answers_audited_and_says_so(writes, deps, store):
    written = writes.remember(AGENT, proposal())
    spy = StoreSpyDouble(store.episodes)
    spy.fail_access_count = True
    deps.episodes = spy
    response = Reads(deps).recall(AGENT, RecallRequest(query="invoices as PDF", actor_id="user-1"))
    assert [i.episode.event_id for i in response.items] == [written.event_id]
    assert response.degraded == ["access_stats_not_updated"]
    assert store.episodes.get("acme", written.event_id).access_count == 0
    records, _ = store.audit_log.audit(AuditQuery(tenant_id="acme", action="recall.served"))
    assert len(records) == 1


def test_given_a_time_phrase_when_recalling_then_it_becomes_the_window_unless_one_is_given(writes, reads):
    yesterday = writes.remember(AGENT, proposal(occurredAt="2026-11-28T09:30:00Z"))
    last_week = writes.remember(
        AGENT, proposal(summary="User prefers invoices as PDF files", occurredAt="2026-11-20T09:30:00Z")
    )
    read = reads.recall(AGENT, RecallRequest(query="invoices PDF yesterday", actor_id="user-1"))
    assert read.interpretation.time_phrase == "yesterday"
    assert read.interpretation.occurred_after == datetime(2026, 11, 28, tzinfo=UTC)
    assert [i.episode.event_id for i in read.items] == [yesterday.event_id]
    explicit = reads.recall(
        AGENT,
        RecallRequest(query="invoices PDF yesterday", actor_id="user-1", occurred_after="2026-11-01T00:00:00Z"),
    )
    assert explicit.interpretation.time_phrase is None
    assert {i.episode.event_id for i in explicit.items} == {yesterday.event_id, last_week.event_id}


def test_given_a_time_phrase_whose_window_holds_nothing_when_recalling_then_all_time_is_searched_and_said(
    writes, reads
):
    """A date without a year is read on the calendar ("on 8 May" is May 2026 here), while the
    memories asked about may be from another year: an empty window is not an empty answer."""
    earlier = writes.remember(AGENT, proposal(occurredAt="2025-05-08T09:30:00Z"))
    hidden = writes.remember(AGENT, proposal(occurredAt="2025-05-08T10:30:00Z", privacyClass="private"))
    assert hidden.decision == "allow", hidden.reasons
    read = reads.recall(AGENT, RecallRequest(query="invoices PDF on 8 May"))
    assert read.interpretation.time_phrase == "on 8 may" and read.interpretation.window_empty
    assert read.interpretation.occurred_after == datetime(2026, 4, 24, tzinfo=UTC)  # the window tried, with its slack
    assert [i.episode.event_id for i in read.items] == [earlier.event_id]  # the private one stays unseen
    found = reads.recall(AGENT, RecallRequest(query="invoices PDF on 8 May 2025"))
    assert not found.interpretation.window_empty and [i.episode.event_id for i in found.items] == [earlier.event_id]
    explicit = reads.recall(
        AGENT, RecallRequest(query="invoices PDF", occurred_after="2026-05-01T00:00:00Z", actor_id="user-1")
    )
    assert explicit.items == [] and not explicit.interpretation.window_empty  # the caller's window holds


def test_given_a_time_phrase_whose_window_holds_only_unrelated_episodes_when_recalling_then_all_time_is_searched(
    writes, reads
):
    """A window that holds episodes, none of them about the question, is found empty only by the
    search itself: all time is then searched with the same question, and said."""
    earlier = writes.remember(AGENT, proposal(occurredAt="2025-05-08T09:30:00Z"))
    unrelated = writes.remember(
        AGENT, proposal(occurredAt="2026-05-08T09:30:00Z", summary="Dentist appointment moved to Thursday morning")
    )
    assert unrelated.decision == "allow", unrelated.reasons
    read = reads.recall(AGENT, RecallRequest(query="invoices PDF on 8 May"))
    assert read.interpretation.time_phrase == "on 8 may" and read.interpretation.window_empty
    assert [i.episode.event_id for i in read.items] == [earlier.event_id]


def test_given_a_window_that_holds_nothing_when_recalling_then_all_time_is_searched_once(
    writes, reads, deps, monkeypatch
):
    """Known empty before the search, the window costs no search of its own."""
    writes.remember(AGENT, proposal(occurredAt="2025-05-08T09:30:00Z"))
    searched = []
    by_meaning = deps.index.by_meaning

    def recorded(scope, *rest):
        searched.append(scope)
        return by_meaning(scope, *rest)

    monkeypatch.setattr(deps.index, "by_meaning", recorded)
    read = reads.recall(AGENT, RecallRequest(query="invoices PDF on 8 May"))
    assert read.interpretation.window_empty and len(read.items) == 1
    assert [(scope.occurred_after, scope.occurred_before) for scope in searched] == [(None, None)]


def test_given_a_query_naming_an_actor_when_recalling_unscoped_then_their_episode_ranks_first(writes, reads):
    hal = writes.remember(AGENT, proposal(actorId="cust-hal", summary="Wants invoices as PDF attachments"))
    gail = writes.remember(AGENT, proposal(actorId="cust-gail", summary="Wants invoices as PDF attachments too"))
    assert gail.decision == "allow", gail.reasons
    response = reads.recall(AGENT, RecallRequest(query="gail invoices as PDF attachments"))
    assert [i.episode.event_id for i in response.items] == [gail.event_id, hal.event_id]
    # The actor is part of what is indexed, so the name is matched like any word, and explained.
    first, second = response.items
    assert first.components.lexical > second.components.lexical and first.score > second.score


def test_given_neighbours_asked_when_a_turn_is_recalled_then_up_to_that_many_each_side_within_the_hour(writes, reads):
    too_early = remember_turn(writes, "User asked whether the warehouse in Porto ships on Saturdays", -90)
    before = [
        remember_turn(writes, "User asked whether the annual plan can be paid by bank transfer", -20),
        remember_turn(writes, "User confirmed the billing contact is the finance mailbox", -10),
    ]
    hit = remember_turn(writes, "User wants the quarterly report delivered as a spreadsheet", 0)
    after = [remember_turn(writes, "User asked for the invoice to show their VAT number", 10 * n) for n in (1, 2, 3)]
    item = reads.recall(
        AGENT, RecallRequest(query="quarterly report spreadsheet", actor_id="user-1", limit=1, neighbours=2)
    ).items[0]
    assert item.episode.event_id == hit
    assert [n.event_id for n in item.neighbours] == [*before, *after[:2]]
    assert too_early not in {n.event_id for n in item.neighbours}


def test_given_a_project_scoped_recall_when_a_neighbouring_turn_is_in_another_project_then_it_is_not_shown(
    writes, reads
):
    elsewhere = remember_turn(
        writes, "User asked whether the annual plan can be paid by bank transfer", -5, projectId="p-2"
    )
    hit = remember_turn(writes, "User wants the quarterly report delivered as a spreadsheet", 0, projectId="p-1")
    request = RecallRequest(query="quarterly report spreadsheet", actor_id="user-1", limit=1)
    assert [n.event_id for n in reads.recall(AGENT, request).items[0].neighbours] == [elsewhere]
    scoped = reads.recall(AGENT, request.model_copy(update={"project_id": "p-1"})).items[0]
    assert scoped.episode.event_id == hit and scoped.neighbours == []


def test_given_a_superseded_neighbouring_turn_when_recalling_active_episodes_then_it_is_not_shown(writes, reads):
    old = remember_turn(writes, "User asked whether the annual plan can be paid by bank transfer", -5)
    remember_turn(writes, "User wants the quarterly report delivered as a spreadsheet", 0)
    request = RecallRequest(query="quarterly report spreadsheet", actor_id="user-1", limit=1)
    assert [n.event_id for n in reads.recall(AGENT, request).items[0].neighbours] == [old]
    writes.correct(
        AGENT,
        old,
        proposal(summary="User asked whether the annual plan can be paid by card", eventType="task_milestone"),
    )
    assert reads.recall(AGENT, request).items[0].neighbours == []


def test_given_an_episode_that_is_not_a_turn_when_recalled_then_it_has_no_neighbours(writes, reads):
    remember_turn(writes, "User asked whether the annual plan can be paid by bank transfer", -5)
    writes.remember(
        AGENT,
        proposal(
            summary="User wants the quarterly report as a spreadsheet",
            sessionId="s-1",
            occurredAt="2026-11-28T09:00:00Z",
        ),
    )
    item = reads.recall(AGENT, RecallRequest(query="quarterly report spreadsheet", actor_id="user-1", limit=1)).items[0]
    assert item.episode.event_type == "user_preference_stated" and item.neighbours == []


def test_given_a_question_needing_two_facts_when_recalled_then_a_second_round_follows_the_names_found(writes, reads):
    marathon = writes.remember(
        AGENT, proposal(actorId="dana", summary="Signed up for the half marathon, Kirsty talked me into it")
    )
    climbing = writes.remember(
        AGENT, proposal(actorId="dana", summary="Went bouldering twice with Kirsty from the garden centre")
    )
    kitchen = writes.remember(
        AGENT, proposal(actorId="dana", summary="Repainted the whole kitchen sage green at the weekend")
    )
    question = "how does dana know the friend who talked her into the half marathon?"

    widened = reads.recall(AGENT, RecallRequest(query=question))
    single = reads.recall(AGENT, RecallRequest(query=question, widen=False))

    assert widened.interpretation.widened_with == ["Kirsty"] and single.interpretation.widened_with == []
    assert widened.items[0].episode.event_id == marathon.event_id
    two = {i.episode.event_id: i.components for i in widened.items}
    one = {i.episode.event_id: i.components for i in single.items}
    assert all(c.widened is None for c in one.values()) and all(c.widened is not None for c in two.values())
    # The name lifts the fact it leads to and nothing else; each relevance is the mean of both rounds.
    assert two[climbing.event_id].relevance > one[climbing.event_id].relevance
    assert two[kitchen.event_id].relevance < one[kitchen.event_id].relevance
    for event_id, parts in two.items():
        assert parts.relevance == pytest.approx((one[event_id].relevance + parts.widened) / 2, abs=1e-5)


def test_given_a_question_turn_when_recalled_then_its_reply_is_found_and_says_what_it_answers(writes, reads):
    asked = remember_turn(writes, "So you're leaving the Kelvinside garden centre on 3 March?", 0, actorId="corinne")
    reply = remember_turn(writes, "Yep, handing my notice in tomorrow, four years of it", 1, actorId="dana")
    remember_turn(writes, "Four years of selling compost to grumpy men on Sundays", 2, actorId="dana", session="s-2")

    found = {i.episode.event_id: i for i in reads.recall(AGENT, RecallRequest(query="garden centre leaving")).items}
    assert found[reply].components.replies_to == asked
    assert found[reply].components.relevance > 0 and found[asked].components.replies_to is None
    # Only the next turn of the question's own session is its reply.
    assert all(i.components.replies_to is None for k, i in found.items() if k != reply)


def test_given_a_reply_the_recall_may_not_see_when_recalled_then_it_is_not_found_through_its_question(writes, reads):
    remember_turn(writes, "So you're leaving the Kelvinside garden centre on 3 March?", 0, actorId="corinne")
    private = remember_turn(
        writes, "Yes, and my therapist thinks it will help", 1, actorId="dana", privacyClass="private"
    )

    unscoped = reads.recall(AGENT, RecallRequest(query="garden centre leaving"))
    scoped_to_the_asker = reads.recall(AGENT, RecallRequest(query="garden centre leaving", actor_id="corinne"))

    for response in (unscoped, scoped_to_the_asker):
        assert private not in {i.episode.event_id for i in response.items}
        assert all(i.components.replies_to is None for i in response.items)


def test_given_a_question_followed_by_its_own_speaker_when_recalled_then_that_turn_is_no_reply(writes, reads):
    remember_turn(writes, "So you're leaving the Kelvinside garden centre on 3 March?", 0, actorId="corinne")
    more = remember_turn(writes, "Mum said you start at the glasshouses in April", 1, actorId="corinne")
    found = {i.episode.event_id: i for i in reads.recall(AGENT, RecallRequest(query="garden centre leaving")).items}
    assert more not in found or found[more].components.replies_to is None


def test_given_a_query_vector_and_a_names_vector_when_leaning_then_it_is_unit_length_and_between_them():
    from episodic.application.usecases.rounds import leaning

    query, names = [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]
    mixed = leaning(query, names, 0.5)
    assert sum(x * x for x in mixed) == pytest.approx(1.0, abs=1e-9)
    assert mixed[0] > mixed[1] > 0.0 and mixed[2] == pytest.approx(0.0, abs=1e-12)  # nearer the query
    assert leaning(query, query, 0.5) == pytest.approx(query, abs=1e-9)


class BackgroundEmbedderDouble:
    """TEST DOUBLE: the hashing embedder with ``start_query``; the query's wait fails while
    ``down`` (a model that stopped between the start and the wait)."""

    def __init__(self, real) -> None:
        self.real, self.down, self.started = real, False, []
        self.name, self.dimension = real.name, real.dimension

    def embed(self, texts):
        return self.real.embed(texts)

    def start_query(self, text, tenant=None):
        self.started.append(text)

        def wait():
            if self.down:
                raise StorageError("the model stopped")
            return self.real.embed([text])[0]

        return wait


def test_given_an_embedder_that_runs_in_the_background_when_recalling_then_it_is_used_and_a_failure_degrades(
    deps, writes
):
    from dataclasses import replace

    kept = writes.remember(AGENT, proposal(summary="Customer wants invoices as PDF from now on"))
    background = BackgroundEmbedderDouble(deps.embedder)
    reads = Reads(replace(deps, embedder=background))
    answer = reads.recall(AGENT, RecallRequest(query="invoices as PDF", widen=False))
    assert background.started == ["invoices as PDF"] and answer.degraded == []
    assert answer.items[0].episode.event_id == kept.event_id and answer.items[0].components.semantic > 0

    background.down = True
    by_words = reads.recall(AGENT, RecallRequest(query="invoices as PDF", widen=False))
    assert by_words.degraded == ["semantic_unavailable"]
    assert by_words.items[0].episode.event_id == kept.event_id and by_words.items[0].components.semantic == 0
