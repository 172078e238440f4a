"""Archival (episodic.application.usecases.archival): retention expiry into the cold archive (a digest is only
audited), relevance decay (archived, out of default recall; a dry run only lists), and restore on
an operator's request (a new expiry when the retention has passed)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from episodic.application.ports import AuditQuery
from episodic.application.settings import Settings
from episodic.application.usecases.archival import Archival
from episodic.domain.errors import ConflictError, ForbiddenError, InvalidRequestError
from episodic.domain.forgetting.expiry import content_hash
from episodic.domain.model import AuditRecord, Status
from tests.support.factories import AGENT, OPERATOR, proposal
from tests.unit.usecases.doubles import RenamedEmbedderDouble


@pytest.fixture
def archival(deps) -> Archival:
    return Archival(deps)


def _audits(store, action, event_id=None):
    records, _ = store.audit_log.audit(AuditQuery(tenant_id="acme", action=action, event_id=event_id, limit=100))
    return records


def _expiring(writes, clock, hours=1, **overrides):
    expires = (clock.now() + timedelta(hours=hours)).isoformat()
    result = writes.remember(AGENT, proposal(retention={"expiresAt": expires}, **overrides))
    assert result.decision == "allow", result.reasons
    return result


def _idle_low_value(writes, clock, **overrides):
    """An episode the decay sweep archives once 30 idle days have passed."""
    fields = {
        "summary": "Printer on floor 3 was out of toner",
        "importance": 0.1,
        "occurredAt": (clock.now() - timedelta(days=60)).isoformat(),
    }
    result = writes.remember(AGENT, proposal(**(fields | overrides)))
    assert result.decision == "allow", result.reasons
    return result


def test_given_expired_episodes_when_the_sweep_runs_then_up_to_the_limit_move_to_the_archive_audited(
    writes, archival, store, archive, clock, deps
):
    expired = [_expiring(writes, clock, summary=f"User's locker number is {n}") for n in range(3)]
    kept = _expiring(writes, clock, hours=48)
    clock.advance(hours=2)
    assert archival.expire(clock.now(), limit=2) == 2
    assert archival.expire(clock.now(), limit=2) == 1
    assert archival.expire(clock.now(), limit=2) == 0
    for result in expired:
        assert store.episodes.get("acme", result.event_id) is None and archive.contains("acme", result.event_id)
    assert store.episodes.get("acme", kept.event_id) is not None
    audit = _audits(store, "episode.expired", expired[0].event_id)[0]
    assert audit.principal_id == "system:sweep"
    assert audit.detail["contentHash"] == content_hash(expired[0].episode, deps.pseudonyms)
    assert archive.get("acme", expired[0].event_id)["reason"] == "retention_expired"
    assert audit.detail["archiveKey"].endswith(f"{expired[0].event_id}.json.gz")
    assert "locker" not in audit.model_dump_json()


def test_given_an_expired_digest_when_the_sweep_runs_then_it_is_audited_and_gone_but_never_archived(
    writes, archival, store, archive, clock
):
    digest = _expiring(
        writes,
        clock,
        eventType="session_summary",
        sourceTrust="tool_result",
        sourceRefs=["episode:01KAZ3Q7J9X2B8M4T6V0W1Y3C5"],
    )
    clock.advance(hours=2)
    assert archival.expire(clock.now(), limit=10) == 1
    assert store.episodes.get("acme", digest.event_id) is None and not archive.contains("acme", digest.event_id)
    detail = _audits(store, "episode.expired", digest.event_id)[0].detail
    assert detail["archived"] is False and "archiveKey" not in detail


def test_given_idle_low_value_episodes_when_a_dry_run_forgets_then_they_are_listed_and_nothing_changes(
    writes, archival, store, archive, clock
):
    old = _idle_low_value(writes, clock)
    clock.advance(days=31)
    report = archival.forget(dry_run=True)
    assert report.dry_run and report.archived == [old.event_id] and report.examined == 1
    assert store.episodes.get("acme", old.event_id).status is Status.ACTIVE
    assert not archive.contains("acme", old.event_id) and _audits(store, "episode.archived") == []


def test_given_idle_low_value_episodes_when_forgotten_then_they_are_archived_with_their_score_audited(
    writes, archival, store, archive, clock, deps
):
    old = _idle_low_value(writes, clock)
    clock.advance(days=31)
    report = archival.forget()
    assert report.archived == [old.event_id] and not report.dry_run
    stored = store.episodes.get("acme", old.event_id)
    assert stored.status is Status.ARCHIVED and archive.get("acme", old.event_id)["reason"] == "relevance_decay"
    [audit] = _audits(store, "episode.archived", old.event_id)
    assert audit.principal_id == "system:decay-sweep" and audit.detail["retentionScore"] == stored.retention_score
    assert stored.retention_score < 3.0 and audit.detail["contentHash"] == content_hash(old.episode, deps.pseudonyms)


def test_given_a_low_value_episode_recalled_recently_when_forgotten_then_it_is_kept(writes, archival, store, clock):
    old = _idle_low_value(writes, clock)
    clock.advance(days=31)
    recalled = clock.now() - timedelta(days=29)
    served = AuditRecord(audit_id="R1", tenant_id="acme", at=recalled, action="recall.served", principal_id="agent")
    assert store.episodes.record_recall(served, [old.event_id], recalled)
    assert archival.forget().archived == []
    clock.advance(days=2)
    assert archival.forget().archived == [old.event_id]


def test_given_a_zero_threshold_when_forgetting_then_nothing_scores_below_it(writes, archival, deps, clock):
    _idle_low_value(writes, clock)
    clock.advance(days=31)
    deps.settings = Settings(decay_threshold=0.0)
    assert archival.forget().archived == []


def test_given_more_episodes_than_a_page_when_forgetting_then_the_cursor_resumes_the_pass(writes, archival, clock):
    first = _idle_low_value(writes, clock)
    second = _idle_low_value(writes, clock, summary="Printer on floor 4 was out of paper")
    clock.advance(days=31)
    page = archival.forget(page_size=1)
    assert page.archived == [first.event_id] and page.next_cursor is not None
    rest = archival.forget(page_size=1, cursor=page.next_cursor)
    assert rest.archived == [second.event_id] and rest.next_cursor is None


def test_given_an_episode_changed_after_the_scan_when_forgotten_then_it_is_kept_and_its_copy_removed(
    writes, archival, deps, store, archive, clock
):
    old = _idle_low_value(writes, clock)
    clock.advance(days=31)
    snapshot = store.scans.active_page(None, 10)

    class SnapshotScansDouble:
        """TEST DOUBLE: the maintenance scan as read before the episode was corrected."""

        def active_page(self, after, limit):
            return snapshot

    writes.correct(AGENT, old.event_id, proposal(summary="Printer on floor 3 was repaired"))
    deps.scans = SnapshotScansDouble()
    assert archival.forget().archived == []
    assert store.episodes.get("acme", old.event_id).status is Status.SUPERSEDED
    assert not archive.contains("acme", old.event_id) and _audits(store, "episode.archived") == []


def test_given_an_agent_when_restoring_then_it_is_forbidden(writes, archival, clock):
    gone = _expiring(writes, clock)
    clock.advance(hours=2)
    archival.expire(clock.now(), 10)
    with pytest.raises(ForbiddenError):
        archival.restore(AGENT, gone.event_id, expires_at=clock.now() + timedelta(days=1))


def test_given_an_expired_archived_episode_when_restored_with_a_past_expiry_then_it_is_refused(
    writes, archival, archive, clock
):
    gone = _expiring(writes, clock)
    clock.advance(hours=2)
    archival.expire(clock.now(), 10)
    with pytest.raises(InvalidRequestError):
        archival.restore(OPERATOR, gone.event_id, expires_at=clock.now())
    with pytest.raises(ConflictError):
        archival.restore(OPERATOR, gone.event_id)
    assert archive.contains("acme", gone.event_id)


def test_given_an_archived_record_when_restored_then_it_is_re_embedded_by_the_current_embedder_and_audited(
    writes, archival, deps, store, archive, embedder, clock
):
    gone = _expiring(writes, clock)
    clock.advance(hours=2)
    archival.expire(clock.now(), 10)
    deps.embedder = RenamedEmbedderDouble(embedder, "test-double/hashing-v2")
    new_expiry = clock.now() + timedelta(days=90)
    restored = archival.restore(OPERATOR, gone.event_id, expires_at=new_expiry)
    assert restored.status is Status.ACTIVE and restored.retention.expires_at == new_expiry
    assert store.episodes.get("acme", gone.event_id) == restored and not archive.contains("acme", gone.event_id)
    assert store.vectors.stale_vectors("test-double/hashing-v2", 10) == []
    [audit] = _audits(store, "episode.restored", gone.event_id)
    assert audit.detail == {"archivedReason": "retention_expired", "expiresAt": new_expiry.isoformat()}


def test_given_a_decay_archived_episode_when_restored_then_it_is_active_where_it_stands_and_the_copy_goes(
    writes, archival, store, archive, clock
):
    old = _idle_low_value(writes, clock)
    clock.advance(days=31)
    archival.forget()
    restored = archival.restore(OPERATOR, old.event_id)
    assert restored.status is Status.ACTIVE and store.episodes.get("acme", old.event_id).status is Status.ACTIVE
    assert not archive.contains("acme", old.event_id)
    assert _audits(store, "episode.restored", old.event_id)[0].detail == {"archivedReason": "relevance_decay"}


def test_given_a_restore_whose_copy_removal_failed_when_asked_again_then_only_the_copy_goes(
    writes, archival, store, archive, clock
):
    back = writes.remember(AGENT, proposal())
    archive.put(back.episode, "retention_expired", clock.now())  # left behind by the failed removal
    assert archival.restore(OPERATOR, back.event_id) == store.episodes.get("acme", back.event_id)
    assert not archive.contains("acme", back.event_id) and _audits(store, "episode.restored") == []


def test_given_a_decay_archived_episode_past_its_retention_when_restored_without_an_expiry_then_it_conflicts(
    writes, archival, clock
):
    old = _idle_low_value(writes, clock, retention={"expiresAt": (clock.now() + timedelta(days=40)).isoformat()})
    clock.advance(days=31)
    assert archival.forget().archived == [old.event_id]
    clock.advance(days=10)
    with pytest.raises(ConflictError):
        archival.restore(OPERATOR, old.event_id)


def test_given_a_decay_archived_episode_when_restored_with_a_new_expiry_then_it_carries_it(
    writes, archival, store, archive, embedder, clock
):
    old = _idle_low_value(writes, clock, retention={"expiresAt": (clock.now() + timedelta(days=40)).isoformat()})
    clock.advance(days=31)
    archival.forget()
    new_expiry = clock.now() + timedelta(days=365)
    restored = archival.restore(OPERATOR, old.event_id, expires_at=new_expiry)
    held = store.episodes.get("acme", old.event_id)
    assert held == restored and held.status is Status.ACTIVE and held.retention.expires_at == new_expiry
    assert not archive.contains("acme", old.event_id)
    assert store.vectors.stale_vectors(embedder.name, 10) == []  # re-embedded: recallable again
    [audit] = _audits(store, "episode.restored", old.event_id)
    assert audit.detail == {"archivedReason": "relevance_decay", "expiresAt": new_expiry.isoformat()}
    clock.advance(days=100)  # past the old expiry, inside the new one: the sweep leaves it
    assert archival.expire(clock.now(), 10) == 0 and store.episodes.get("acme", old.event_id) is not None


def test_given_a_decay_archived_episode_when_restored_with_an_expiry_in_the_past_then_nothing_changes(
    writes, archival, store, archive, clock
):
    old = _idle_low_value(writes, clock)
    clock.advance(days=31)
    archival.forget()
    with pytest.raises(InvalidRequestError):
        archival.restore(OPERATOR, old.event_id, expires_at=clock.now())
    assert store.episodes.get("acme", old.event_id).status is Status.ARCHIVED
