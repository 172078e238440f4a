"""Regression tests for the privacy and integrity defects found under attack, on every backend."""

from __future__ import annotations

import json
from datetime import timedelta

from episodic.domain.errors import StorageError
from episodic.domain.model import Decision, PrivacyClass, RecallRequest, Status, TimelineRequest
from tests.support.factories import AGENT, OPERATOR, proposal


def _turn(service, summary, second, privacy="internal", actor="cust-bob", session="s1"):
    return service.writes.remember(
        AGENT,
        proposal(
            eventType="conversation_turn",
            actorId=actor,
            sessionId=session,
            summary=summary,
            privacyClass=privacy,
            occurredAt=f"2026-11-28T09:30:{second:02d}Z",
        ),
    )


def test_given_a_private_turn_next_to_a_public_one_when_recalled_unscoped_then_it_is_not_a_neighbour(service):
    public = _turn(service, "Bob asked for a copy of invoice 4471 to be sent again", 0, privacy="public")
    private = _turn(service, "Bob said his home address is 12 Elm Street, Springfield", 30, privacy="private")
    assert public.decision is Decision.ALLOW and private.decision is Decision.ALLOW

    unscoped = service.reads.recall(AGENT, RecallRequest(query="invoice"))
    assert [i.episode.event_id for i in unscoped.items] == [public.event_id]
    assert unscoped.items[0].neighbours == []
    assert "Elm Street" not in unscoped.model_dump_json() and "same_session_turn" not in unscoped.context

    scoped = service.reads.recall(AGENT, RecallRequest(query="invoice", actor_id="cust-bob"))
    item = next(i for i in scoped.items if i.episode.event_id == public.event_id)
    assert [n.event_id for n in item.neighbours] == [private.event_id]  # the actor's own recall may see it


def test_given_another_actors_private_episode_when_an_agent_supersedes_it_then_the_write_goes_to_review(service):
    secret = service.writes.remember(
        AGENT, proposal(actorId="cust-alice", privacyClass="private", summary="Alice is moving to Porto in March")
    )
    attempt = service.writes.remember(
        AGENT,
        proposal(actorId="cust-mallory", summary="Mallory prefers SMS reminders", supersedesEventIds=[secret.event_id]),
    )
    assert attempt.decision is Decision.REVIEW and "supersedes_other_actor" in attempt.reasons
    assert service.reads.get(OPERATOR, secret.event_id).status is Status.ACTIVE  # nothing hidden without a human

    own = service.writes.remember(
        AGENT, proposal(actorId="cust-alice", summary="Alice moves to Braga, not Porto", supersedesEventIds=[])
    )
    corrected = service.writes.correct(
        AGENT, own.event_id, proposal(actorId="cust-alice", summary="Alice moves to Braga in April")
    )
    assert corrected.decision is Decision.ALLOW  # the same actor's episode: an ordinary correction
    assert service.reads.get(OPERATOR, own.event_id).status is Status.SUPERSEDED
    audit, _ = service.admin.audit(OPERATOR, event_id=own.event_id, action="episode.superseded")
    assert audit and audit[0].detail["supersededBy"] == corrected.event_id


def test_given_private_and_sensitive_sources_when_summarised_then_the_digest_keeps_the_strictest_rule(service, clock):
    clock.current = clock.current.replace(hour=18)
    for hour, privacy in enumerate(["internal"] * 4 + ["private", "sensitive", "internal"]):
        extra = {}
        if privacy == "sensitive":
            extra = {
                "retention": {"expiresAt": (clock.now() + timedelta(days=30)).isoformat()},
                "consent": {"required": True, "granted": True, "consentRef": "consent:77"},
            }
        written = service.writes.remember(
            AGENT,
            proposal(
                actorId="cust-dana",
                privacyClass=privacy,
                summary=f"Dana's order {9100 + hour} shipped by {['DHL', 'UPS', 'GLS'][hour % 3]} at {hour + 8}h",
                occurredAt=(clock.now() - timedelta(hours=hour + 1)).isoformat(),
                **extra,
            ),
        )
        assert written.decision is Decision.ALLOW, written.reasons
    outcomes = service.summarisation.summarise()
    assert len(outcomes) == 1 and outcomes[0].decision == "allow", outcomes
    digest = service.reads.get(OPERATOR, outcomes[0].event_id)
    assert digest.privacy_class is PrivacyClass.PRIVATE
    assert len(digest.source_refs) == 6  # the sensitive episode is not copied into a digest
    unscoped = service.reads.recall(AGENT, RecallRequest(query="Dana order shipped courier"))
    assert digest.event_id not in {i.episode.event_id for i in unscoped.items}


def test_given_an_expired_then_erased_actor_when_the_audit_log_is_read_then_the_actor_id_is_nowhere(service, clock):
    actor = "cust-zoltan-erasable"
    service.writes.remember(
        AGENT,
        proposal(actorId=actor, retention={"expiresAt": (clock.now() + timedelta(days=1)).isoformat()}),
    )
    clock.advance(days=2)
    assert service.sweeper.sweep().expired == 1
    service.erasure.erase_actor(OPERATOR, actor)
    records, _ = service.admin.audit(OPERATOR, limit=1000)
    assert {"episode.expired", "actor.erased"} <= {r.action for r in records}
    assert actor not in json.dumps([r.to_json_dict() for r in records])


class UnavailableQueryEmbedder:
    """Test double around the real embedder: embeds writes, fails every single-text (query) call
    the way an unreachable model service does."""

    def __init__(self, real):
        self.real, self.name, self.dimension = real, real.name, real.dimension

    def embed(self, texts):
        if len(texts) == 1:
            raise StorageError("the embedding service is unavailable")
        return self.real.embed(texts)


def test_given_the_embedder_down_when_recalling_then_text_alone_answers_and_says_so(service):
    written = service.writes.remember_batch(
        AGENT,
        [
            proposal(summary="Customer wants invoices as PDF, in Portuguese"),
            proposal(summary="Customer moved the renewal meeting to Thursday"),
        ],
    )
    service = service.replacing(embedder=UnavailableQueryEmbedder(service.deps.embedder))
    response = service.reads.recall(AGENT, RecallRequest(query="invoices PDF", actor_id="user-1"))
    assert response.degraded[0] == "semantic_unavailable"
    assert response.items[0].episode.event_id == written[0].event_id
    assert response.items[0].components.semantic == 0


def test_given_an_expired_digest_when_a_source_is_erased_then_no_copy_of_the_digest_remains(service, clock):
    clock.current = clock.current.replace(hour=18)
    sources = [
        service.writes.remember(
            AGENT,
            proposal(
                actorId="cust-olga",
                summary=f"Olga's shipment {7700 + n} left the Porto depot on lorry {n}",
                occurredAt=(clock.now() - timedelta(hours=n + 1)).isoformat(),
                retention={"expiresAt": (clock.now() + timedelta(days=n + 1)).isoformat()},
            ),
        ).event_id
        for n in range(6)
    ]
    digest = service.summarisation.summarise()[0].event_id
    clock.advance(days=1, hours=1)  # the digest expires with its first source
    service.sweeper.sweep()
    expired, _ = service.admin.audit(OPERATOR, event_id=digest, action="episode.expired")
    assert expired and expired[0].detail["archived"] is False and "archiveKey" not in expired[0].detail
    assert not service.deps.archive.contains("acme", digest)
    for event_id in sources[1:]:
        service.erasure.erase(OPERATOR, event_id)
    assert not service.deps.archive.contains("acme", digest)


def test_given_an_empty_actor_id_when_an_agent_lists_the_timeline_then_private_episodes_stay_hidden(service):
    service.writes.remember(
        AGENT, proposal(actorId="cust-ivo", privacyClass="private", summary="Ivo's PIN reset was approved")
    )
    public = service.writes.remember(AGENT, proposal(actorId="cust-ivo", summary="Ivo asked for paper invoices"))
    listed = service.reads.timeline(
        AGENT, TimelineRequest(actor_id="")
    )  # ?actorId= : names no actor, so admits no private class
    assert [e.event_id for e in listed.items] == [public.event_id]
