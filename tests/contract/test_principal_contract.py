"""Who is asking, on every backend (local SQLite, DynamoDB in process and over moto's server):
a credential bound to an actor reads no other actor's private or sensitive episodes and changes
none of another actor's episodes; text held for review exists for operators only."""

from __future__ import annotations

import pytest

from episodic.domain.errors import ActorNotCoveredError, NotFoundError
from episodic.domain.model import Caller, RecallRequest, Role, Status, TimelineRequest
from tests.support.factories import AGENT, OPERATOR, proposal

SAM = Caller(tenant_id="acme", role=Role.AGENT, principal_id="token:sam", actors=("sam",))


def _victims(service):
    return {
        klass: service.writes.remember(AGENT, proposal(summary=text, actorId="victim", privacyClass=klass)).event_id
        for klass, text in (("internal", "Victim booked the Lisbon offsite"), ("private", "Victim moves to Porto"))
    }


def test_given_a_bound_caller_when_it_reads_another_actor_then_only_the_tenants_internal_episodes_come_back(service):
    ids = _victims(service)
    recalled = service.reads.recall(SAM, RecallRequest(query="Porto Lisbon offsite", actor_id="victim", neighbours=2))
    assert [i.episode.event_id for i in recalled.items] == [ids["internal"]]
    assert "Porto" not in recalled.context
    assert [e.event_id for e in service.reads.timeline(SAM, TimelineRequest(actor_id="victim")).items] == [
        ids["internal"]
    ]
    with pytest.raises(NotFoundError):
        service.reads.get(SAM, ids["private"])
    trusted = service.reads.recall(AGENT, RecallRequest(query="Porto", actor_id="victim"))  # a tenant-wide backend
    assert ids["private"] in {i.episode.event_id for i in trusted.items}


def test_given_a_bound_caller_when_it_changes_another_actors_episode_then_it_is_refused_and_nothing_moves(service):
    theirs = _victims(service)["internal"]
    with pytest.raises(ActorNotCoveredError):
        service.writes.remember(SAM, proposal(actorId="victim"))
    with pytest.raises(ActorNotCoveredError):
        service.writes.correct(SAM, theirs, proposal(actorId=None, summary="Victim booked the Madrid offsite"))
    with pytest.raises(ActorNotCoveredError):
        service.feedbacks.feedback(SAM, theirs, helpful=False)
    with pytest.raises(ActorNotCoveredError):
        service.erasure.erase(SAM, theirs)
    after = service.reads.get(OPERATOR, theirs)
    assert after.status is Status.ACTIVE and after.feedback_count == 0
    assert service.reads.timeline(OPERATOR, TimelineRequest(actor_id="sam")).items == []


def test_given_a_write_held_for_review_when_anyone_but_an_operator_asks_for_it_then_it_is_not_found(service):
    held = service.writes.remember(SAM, proposal(actorId="sam", sourceTrust="untrusted_content"))
    assert held.status is Status.PENDING_REVIEW
    for caller in (AGENT, SAM):
        with pytest.raises(NotFoundError):
            service.reads.get(caller, held.event_id)
    assert service.reads.get(OPERATOR, held.event_id).status is Status.PENDING_REVIEW
