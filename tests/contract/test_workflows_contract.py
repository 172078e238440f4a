"""Summarisation and relevance-decay forgetting, on both backends, with the real model."""

from datetime import UTC, datetime, timedelta

import pytest

from episodic.domain.model import Decision, RecallRequest, Status, TimelineRequest
from tests.support.factories import AGENT, OPERATOR, proposal

DAY_EVENTS = [
    "Deploy of checkout-api v4.2 started at 09:10",
    "Checkout-api v4.2 failed its health check with HTTP 503 on two pods",
    "Rolled checkout-api back to v4.1 at 09:40; errors stopped",
    "Root cause: the v4.2 config pointed at the retired payments-db replica",
    "Fixed the replica address in the config repo, PR #812 merged",
    "Redeployed checkout-api v4.2.1 at 14:05; health checks green",
    "Closed incident INC-2291 with a postmortem due Friday",
]


def write_day(service, clock, actor="sre-lena"):
    written = []
    for n, text in enumerate(DAY_EVENTS):
        at = (clock.now() - timedelta(hours=20 - 2 * n)).isoformat()
        result = service.writes.remember(
            AGENT, proposal(summary=text, actorId=actor, occurredAt=at, eventType="tool_observed_event",
                            sourceTrust="tool_result", tags=["checkout"])
        )  # fmt: skip
        assert result.decision is Decision.ALLOW, (text, result.reasons)
        written.append(result.event_id)
    return written


def test_given_a_busy_actor_when_summarised_then_a_grounded_three_line_digest_cites_every_event(service, clock):
    written = write_day(service, clock)
    for n in range(3):  # a quiet actor is not summarised
        service.writes.remember(AGENT, proposal(summary=f"Quiet actor note {n}: rotated log volume", actorId="quiet"))
    outcomes = service.summarisation.summarise()
    assert [(o.actor_id, o.decision) for o in outcomes] == [("sre-lena", "allow")]
    digest = service.reads.get(AGENT, outcomes[0].event_id)
    lines = digest.summary.split("\n")
    assert digest.event_type.value == "session_summary" and 1 <= len(lines) <= 3
    assert all(line in DAY_EVENTS for line in lines)  # extractive: nothing invented
    assert sorted(digest.source_refs) == sorted(f"episode:{i}" for i in written)
    assert service.summarisation.summarise()[0].event_id == digest.event_id  # re-run


def test_given_a_summary_when_a_source_is_erased_then_the_digest_goes_too(service, clock):
    written = write_day(service, clock)
    outcome = service.summarisation.summarise()[0]
    assert service.erasure.erase(AGENT, written[1]).cascaded == [outcome.event_id]


def test_given_idle_low_value_episodes_when_forgotten_then_they_are_archived_listed_and_restorable(service, clock):
    old = service.writes.remember(
        AGENT,
        proposal(
            summary="Printer on floor 3 was out of toner",
            importance=0.1,
            occurredAt=(clock.now() - timedelta(days=60)).isoformat(),
        ),
    )
    kept = service.writes.remember(
        AGENT,
        proposal(
            summary="Customer's contract renews on 1 March",
            importance=0.9,
            occurredAt=(clock.now() - timedelta(days=60)).isoformat(),
        ),
    )
    clock.advance(days=45)
    fresh = service.writes.remember(
        AGENT,
        proposal(summary="Staging certificate expires next week", importance=0.1, occurredAt=clock.now().isoformat()),
    )
    dry = service.archival.forget(dry_run=True)
    assert dry.archived == [old.event_id] and dry.dry_run
    assert service.reads.get(AGENT, old.event_id).status is Status.ACTIVE  # a dry run changes nothing
    report = service.archival.forget()
    assert report.archived == [old.event_id]
    assert service.reads.get(AGENT, kept.event_id).status is Status.ACTIVE
    assert service.reads.get(AGENT, fresh.event_id).status is Status.ACTIVE
    assert service.reads.recall(AGENT, RecallRequest(query="printer toner", actor_id="user-1")).items == []
    listed = service.reads.timeline(AGENT, TimelineRequest(statuses=[Status.ARCHIVED]))
    assert [e.event_id for e in listed.items] == [old.event_id]
    assert service.deps.archive.contains("acme", old.event_id)
    records, _ = service.admin.audit(OPERATOR, event_id=old.event_id, action="episode.archived")
    assert records[0].detail["reason"] == "relevance_decay" and records[0].detail["retentionScore"] < 3.0
    assert "toner" not in records[0].model_dump_json()
    restored = service.archival.restore(OPERATOR, old.event_id)
    assert restored.status is Status.ACTIVE and not service.deps.archive.contains("acme", old.event_id)
    assert [
        i.episode.event_id
        for i in service.reads.recall(AGENT, RecallRequest(query="printer toner", actor_id="user-1")).items
    ] == [old.event_id]


def test_given_a_pending_review_when_its_workflow_times_out_then_the_write_is_denied_once(service):
    held = service.writes.remember(AGENT, proposal(sourceTrust="untrusted_content"))
    assert service.reviews.expire_review("acme", held.review_id) == "expired"
    assert service.reviews.expire_review("acme", held.review_id) == "expired"  # already closed: unchanged
    assert service.deps.episodes.get("acme", held.event_id) is None
    assert service.reviews.expire_review("acme", "01NOSUCHREVIEW") == "unknown"


@pytest.mark.parametrize("window_days", [1])
def test_given_events_outside_the_window_when_busy_actors_are_found_then_they_do_not_count(service, clock, window_days):
    for n in range(7):
        at = (clock.now() - timedelta(days=window_days + 1, hours=n)).isoformat()
        service.writes.remember(
            AGENT, proposal(summary=f"Old batch job {n} reindexed 40k rows", actorId="etl", occurredAt=at)
        )
    assert service.summarisation.busy_actors(clock.now()) == []
    assert service.summarisation.busy_actors(datetime(2026, 11, 28, 6, tzinfo=UTC))[0].actor_id == "etl"
