"""Admin (episodic.application.usecases.admin): the audit trail for operators, the per-tenant write
kill-switch beside the deployment-wide one, health, and re-embedding after a model change
(an embedder double under a new name plays the new model)."""

from __future__ import annotations

import pytest

from episodic.application.ports import AuditQuery
from episodic.application.settings import Settings
from episodic.application.usecases.admin import Admin
from episodic.domain.errors import ForbiddenError
from episodic.domain.model import RecallRequest, WritesStatus
from tests.support.factories import AGENT, OPERATOR, proposal
from tests.unit.usecases.doubles import RenamedEmbedderDouble


@pytest.fixture
def admin(deps) -> Admin:
    return Admin(deps)


def test_given_the_tenant_switch_when_flipped_then_status_follows_and_each_flip_is_audited(admin, store):
    assert admin.set_writes(OPERATOR, False, reason="incident 42") == WritesStatus(
        writes_enabled=False, deployment_kill_switch=False
    )
    assert admin.writes_status("globex").writes_enabled is True  # other tenants keep writing
    assert admin.set_writes(OPERATOR, True).writes_enabled is True
    records, _ = store.audit_log.audit(AuditQuery(tenant_id="acme"))
    assert [(r.action, r.detail) for r in records] == [
        ("writes.disabled", {"reason": "incident 42"}),
        ("writes.enabled", {}),
    ]
    assert records[0].principal_id == OPERATOR.principal_id


def test_given_an_agent_when_flipping_the_switch_then_it_is_forbidden_and_nothing_changes(admin, store):
    with pytest.raises(ForbiddenError):
        admin.set_writes(AGENT, False)
    assert admin.writes_status("acme").writes_enabled is True
    assert store.audit_log.audit(AuditQuery(tenant_id="acme"))[0] == []


def test_given_the_deployment_kill_switch_when_status_is_asked_then_writes_are_off_whatever_the_tenant_says(
    admin, deps
):
    deps.settings = Settings(writes_disabled=True)
    assert admin.writes_status("acme") == WritesStatus(writes_enabled=False, deployment_kill_switch=True)
    assert admin.set_writes(OPERATOR, True).writes_enabled is False
    assert admin.health().deployment_writes_disabled is True


def test_given_the_service_when_health_is_asked_then_it_names_backend_policy_and_embedder(admin, deps, embedder):
    health = admin.health()
    assert (health.status, health.backend, health.embedder) == ("ok", "unit-sqlite", embedder.name)
    assert health.policy_version == deps.policy.version and health.deployment_writes_disabled is False


def test_given_an_audit_trail_when_an_operator_pages_and_filters_it_then_it_comes_in_order(writes, admin):
    written = [writes.remember(AGENT, proposal(summary=f"User's locker number is {n}")).event_id for n in range(3)]
    writes.remember(AGENT, proposal(actorId=None))  # one denial
    first, cursor = admin.audit(OPERATOR, action="episode.written", limit=2)
    rest, end = admin.audit(OPERATOR, action="episode.written", limit=2, cursor=cursor)
    assert [r.event_id for r in [*first, *rest]] == written and end is None
    assert [r.action for r in admin.audit(OPERATOR, event_id=written[1])[0]] == ["episode.written"]
    with pytest.raises(ForbiddenError):
        admin.audit(AGENT)


def test_given_a_renamed_embedder_when_reembedding_then_stale_vectors_are_replaced_in_batches(
    writes, admin, deps, store, embedder
):
    for n in range(5):
        writes.remember(AGENT, proposal(summary=f"User's locker number is {n}"))
    deps.embedder = RenamedEmbedderDouble(embedder, "test-double/hashing-v2")
    assert len(store.vectors.stale_vectors("test-double/hashing-v2", 10)) == 5
    progress: list[int] = []
    assert admin.reembed(batch_size=2, progress=progress.append) == 5
    assert progress == [2, 4, 5] and store.vectors.stale_vectors("test-double/hashing-v2", 10) == []
    assert admin.reembed(batch_size=2, progress=progress.append) == 0 and progress == [2, 4, 5]


def test_given_a_renamed_embedder_when_recalling_then_old_vectors_count_only_after_reembedding(
    writes, admin, deps, reads, embedder
):
    written = writes.remember(AGENT, proposal()).event_id
    deps.embedder = RenamedEmbedderDouble(embedder, "test-double/hashing-v2")
    request = RecallRequest(query="invoices as PDF attachments", actor_id="user-1")
    before = reads.recall(AGENT, request).items
    assert [i.episode.event_id for i in before] == [written] and before[0].components.semantic == 0
    admin.reembed()
    after = reads.recall(AGENT, request).items
    assert after[0].components.semantic > 0.5


def test_given_writes_turned_off_then_feedback_and_approvals_are_refused_but_a_denial_is_not(admin, writes, deps):
    from episodic.application.usecases.feedback import Feedback
    from episodic.application.usecases.reviews import Reviews
    from episodic.domain.errors import WritesDisabledError

    kept = writes.remember(AGENT, proposal(summary="Customer wants invoices as PDF from now on"))
    held = [
        writes.remember(
            AGENT, proposal(summary=f"Scraped page {n}: call +1 555 010{n}", sourceTrust="untrusted_content")
        )
        for n in range(2)
    ]
    assert all(h.decision == "review" for h in held)
    admin.set_writes(OPERATOR, False, reason="incident 43")
    reviews = Reviews(deps, writes)

    with pytest.raises(WritesDisabledError):
        Feedback(deps).feedback(AGENT, kept.event_id, helpful=True)
    with pytest.raises(WritesDisabledError):
        reviews.decide_review(OPERATOR, held[0].review_id, approve=True)
    assert reviews.decide_review(OPERATOR, held[1].review_id, approve=False).review.status == "denied"

    assert deps.episodes.get("acme", kept.event_id).feedback_count == 0
    assert deps.reviews.get_review("acme", held[0].review_id).status == "pending"
