"""Erasure (episodic.application.usecases.erasure): an episode, or everything about an actor, removed from the
archive first, then from the timeline with the digests that cite it, leaving tombstones that hold
a content hash and never the text; then the store compacts what it freed."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from episodic.application.ports import AuditQuery
from episodic.application.usecases.archival import Archival
from episodic.application.usecases.erasure import Erasure
from episodic.domain.digests.citations import cite
from episodic.domain.errors import ForbiddenError, NotFoundError, StorageError
from episodic.domain.forgetting.expiry import content_hash
from tests.support.factories import AGENT, OPERATOR, OTHER_TENANT_AGENT, proposal
from tests.unit.usecases.doubles import FailingArchiveDouble


@pytest.fixture
def erasure(deps) -> Erasure:
    return Erasure(deps)


def _tombstones(store, tenant="acme"):
    records, _ = store.audit_log.audit(AuditQuery(tenant_id=tenant, action="episode.erased", limit=100))
    return {r.event_id: r for r in records}


def _digest_citing(writes, *event_ids, actor="support-bot"):
    result = writes.remember(
        AGENT,
        proposal(
            eventType="session_summary",
            actorId=actor,
            sourceTrust="tool_result",
            summary="User asked for PDF invoices; the finance mailbox receives them",
            sourceRefs=[cite(i) for i in event_ids],
        ),
    )
    assert result.decision == "allow", result.reasons
    return result.event_id


def _expire_into_archive(writes, deps, clock, **overrides):
    written = writes.remember(
        AGENT, proposal(retention={"expiresAt": (clock.now() + timedelta(hours=1)).isoformat(), **overrides})
    )
    clock.advance(hours=2)
    assert Archival(deps).expire(clock.now(), 10) == 1
    return written


def test_given_an_episode_when_erased_then_it_is_gone_and_its_tombstone_holds_a_hash_not_the_text(
    writes, erasure, store, compaction, deps
):
    written = writes.remember(AGENT, proposal(summary="User's cat is called Biscuit and hates invoices"))
    result = erasure.erase(AGENT, written.event_id)
    assert (result.erased, result.cascaded, result.archived_records_deleted) == ([written.event_id], [], 0)
    assert store.episodes.get("acme", written.event_id) is None
    tombstone = _tombstones(store)[written.event_id]
    assert tombstone.detail == {
        "reason": "erasure_requested",
        "scope": "episode",
        "cascade": False,
        "contentHash": content_hash(written.episode, deps.pseudonyms),
    }
    assert "Biscuit" not in tombstone.model_dump_json()
    assert compaction.calls == 1


def test_given_a_digest_and_an_ordinary_episode_citing_it_when_erased_then_only_the_digest_cascades(
    writes, erasure, store, deps
):
    source = writes.remember(AGENT, proposal()).event_id
    digest = _digest_citing(writes, source)
    citing_note = writes.remember(
        AGENT, proposal(summary="User confirmed the PDF invoice format again", sourceRefs=[cite(source)])
    ).event_id
    result = erasure.erase(AGENT, source, reason="user request #12")
    assert result.erased == [source, digest] and result.cascaded == [digest]
    assert store.episodes.get("acme", digest) is None and store.episodes.get("acme", citing_note) is not None
    tombstones = _tombstones(store)
    assert tombstones[digest].detail["cascade"] is True and tombstones[source].detail["cascade"] is False
    assert {t.detail["reason"] for t in tombstones.values()} == {"erasure_requested"}  # a code, never the words
    assert {t.detail["reasonHash"] for t in tombstones.values()} == {deps.pseudonyms.text("user request #12")}
    assert "user request" not in str([t.detail for t in tombstones.values()])


def test_given_an_episode_only_in_the_archive_when_erased_then_the_copy_is_deleted_and_a_tombstone_left(
    writes, erasure, deps, store, archive, clock
):
    gone = _expire_into_archive(writes, deps, clock)
    assert archive.contains("acme", gone.event_id)
    result = erasure.erase(AGENT, gone.event_id)
    assert result.erased == [gone.event_id] and result.archived_records_deleted == 1
    assert not archive.contains("acme", gone.event_id)
    assert "contentHash" not in _tombstones(store)[gone.event_id].detail  # the text was not at hand to hash


def test_given_an_unknown_id_when_erased_then_it_is_not_found_and_nothing_happens(erasure, store, compaction):
    with pytest.raises(NotFoundError):
        erasure.erase(AGENT, "01NOSUCHEPISODE")
    assert _tombstones(store) == {} and compaction.calls == 0


def test_given_no_compaction_port_when_erasing_then_the_erasure_still_completes(writes, deps, store):
    deps.compaction = None
    written = writes.remember(AGENT, proposal())
    assert Erasure(deps).erase(AGENT, written.event_id).erased == [written.event_id]
    assert store.episodes.get("acme", written.event_id) is None


def test_given_the_archive_failing_when_erasing_then_nothing_is_erased_and_a_retry_finishes(
    writes, deps, store, archive, compaction
):
    written = writes.remember(AGENT, proposal())
    deps.archive = FailingArchiveDouble(archive)
    with pytest.raises(StorageError):
        Erasure(deps).erase(AGENT, written.event_id)
    assert (
        store.episodes.get("acme", written.event_id) is not None and _tombstones(store) == {} and compaction.calls == 0
    )
    deps.archive = archive
    assert Erasure(deps).erase(AGENT, written.event_id).erased == [written.event_id]
    assert store.episodes.get("acme", written.event_id) is None


def test_given_the_archive_failing_when_erasing_an_actor_then_the_timeline_is_untouched(writes, deps, store, archive):
    written = writes.remember(AGENT, proposal())
    deps.archive = FailingArchiveDouble(archive)
    with pytest.raises(StorageError):
        Erasure(deps).erase_actor(OPERATOR, "user-1")
    assert store.episodes.get("acme", written.event_id) is not None and _tombstones(store) == {}


def test_given_an_actor_when_erased_then_every_trace_goes_and_the_audit_names_only_a_hash(
    writes, erasure, deps, store, archive, clock
):
    archived = _expire_into_archive(writes, deps, clock)  # actor user-1, now only in the archive
    kept_elsewhere = writes.remember(OTHER_TENANT_AGENT, proposal()).event_id  # same actor id, other tenant
    live = writes.remember(AGENT, proposal(summary="User's timezone is Europe/Lisbon")).event_id
    digest = _digest_citing(writes, live)
    result = erasure.erase_actor(OPERATOR, "user-1")
    assert set(result.erased) == {live, digest} and result.cascaded == [digest]
    assert result.archived_records_deleted == 1 and not archive.contains("acme", archived.event_id)
    assert (
        store.episodes.event_ids_of_actor("acme", "user-1") == []
        and store.episodes.get("globex", kept_elsewhere) is not None
    )
    assert {t.detail["scope"] for t in _tombstones(store).values()} == {"actor"}
    assert {t.detail["reason"] for t in _tombstones(store).values()} == {"actor_erasure_requested"}
    records, _ = store.audit_log.audit(AuditQuery(tenant_id="acme", action="actor.erased"))
    assert records[0].detail == {
        "actorHash": deps.pseudonyms.actor("acme", "user-1"),  # keyed: a guess cannot be confirmed
        "reason": "actor_erasure_requested",
        "erasedEpisodes": 2,
        "archivedRecordsDeleted": 1,
    }
    assert "user-1" not in json.dumps(records[0].to_json_dict())


def test_given_an_agent_when_erasing_an_actor_then_it_is_forbidden_and_nothing_is_erased(writes, erasure, store):
    written = writes.remember(AGENT, proposal())
    with pytest.raises(ForbiddenError):
        erasure.erase_actor(AGENT, "user-1")
    assert store.episodes.get("acme", written.event_id) is not None


def test_given_a_retained_episode_in_the_archive_when_an_agent_erases_it_then_only_an_operator_may(
    writes, erasure, deps, archive, clock
):
    retained = _expire_into_archive(writes, deps, clock, deleteOnRequest=False)
    with pytest.raises(ForbiddenError):
        erasure.erase(AGENT, retained.event_id)
    assert archive.contains("acme", retained.event_id)


def test_given_many_summaries_citing_an_episode_when_a_later_commit_fails_then_a_retry_finishes_the_erasure(
    writes, erasure, store, monkeypatch
):
    """The citing summaries go first and the episode itself last: a failure part-way leaves the
    episode, so a retry finds it (and what still cites it) instead of answering 404."""
    source = writes.remember(AGENT, proposal()).event_id
    digests = [_digest_citing(writes, source) for _ in range(25)]  # more than one change set
    real_apply, calls = store.episodes.apply, []

    def failing_second(changes):
        calls.append(changes)
        if len(calls) == 2:
            raise StorageError("the disk is full")
        return real_apply(changes)

    monkeypatch.setattr(store.episodes, "apply", failing_second)
    with pytest.raises(StorageError):
        erasure.erase(AGENT, source)
    assert store.episodes.get("acme", source) is not None
    monkeypatch.setattr(store.episodes, "apply", real_apply)
    result = erasure.erase(AGENT, source)
    assert result.erased[0] == source
    assert all(store.episodes.get("acme", d) is None for d in [source, *digests])


def test_given_a_review_workflow_that_cannot_be_told_when_its_write_is_erased_then_the_erasure_completes(
    writes, erasure, store, notifier, compaction, monkeypatch, caplog
):
    held = writes.remember(AGENT, proposal(sourceTrust="untrusted_content"))

    def unreachable(review):
        raise RuntimeError("Step Functions is throttling")

    monkeypatch.setattr(notifier, "review_decided", unreachable)
    erasure.erase(AGENT, held.event_id)
    assert store.episodes.get("acme", held.event_id) is None and compaction.calls == 1
    assert store.reviews.get_review("acme", held.review_id).status == "denied"
    assert "could not tell a review's workflow" in caplog.text


def test_given_a_review_denied_with_a_note_when_its_actor_is_erased_then_the_note_goes_too(
    writes, erasure, store, deps
):
    """A denied write is deleted at once; its review (and note) is found by the actor's pseudonym."""
    from episodic.application.usecases.reviews import Reviews

    held = writes.remember(AGENT, proposal(sourceTrust="untrusted_content"))
    Reviews(deps, writes).decide_review(OPERATOR, held.review_id, approve=False, note="user-1 pasted a vendor ad")
    erasure.erase_actor(OPERATOR, "user-1")
    review = store.reviews.get_review("acme", held.review_id)
    assert review.status == "denied" and review.note is None


def test_given_a_summary_written_while_its_source_is_erased_then_the_erasures_second_look_takes_it(
    writes, erasure, store, monkeypatch
):
    source = writes.remember(AGENT, proposal()).event_id
    digest = _digest_citing(writes, source)
    real, looks = store.episodes.summaries_citing, []

    def not_there_yet(tenant_id, event_ids):  # the first look runs before the summary commits
        looks.append(1)
        return [] if len(looks) == 1 else real(tenant_id, event_ids)

    monkeypatch.setattr(store.episodes, "summaries_citing", not_there_yet)
    result = erasure.erase(AGENT, source)
    assert store.episodes.get("acme", digest) is None and digest in result.cascaded


def test_given_a_review_decided_while_its_actor_is_erased_then_the_erasure_still_completes(
    writes, erasure, store, deps, monkeypatch
):
    from episodic.application.usecases.reviews import Reviews

    held = writes.remember(AGENT, proposal(sourceTrust="untrusted_content"))
    real, calls = store.episodes.apply, []

    def decided_meanwhile(changes):
        calls.append(1)
        if len(calls) == 1:  # an operator approves between the erasure's read and its commit
            Reviews(deps, writes).decide_review(OPERATOR, held.review_id, approve=True, note="looks fine")
        return real(changes)

    monkeypatch.setattr(store.episodes, "apply", decided_meanwhile)
    erasure.erase_actor(OPERATOR, "user-1")
    assert store.episodes.get("acme", held.event_id) is None
    review = store.reviews.get_review("acme", held.review_id)
    assert review.status == "approved" and review.note is None
