"""Agent feedback on a recalled episode: a running mean in [-1, 1] that feeds the retention score."""

from __future__ import annotations

from episodic.application.ports import Changes, StatsChange
from episodic.application.usecases.deps import Deps
from episodic.domain.access import require_changeable
from episodic.domain.forgetting.retention import retention_score
from episodic.domain.model import AuditAction, Caller, Episode


class Feedback:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps

    def feedback(self, caller: Caller, event_id: str, helpful: bool, note: str | None = None) -> Episode:
        deps = self.deps
        episode = deps.visible(caller, event_id)
        require_changeable(caller, episode, "give feedback")
        deps.require_writes(caller.tenant_id)
        now = deps.clock.now()
        count = episode.feedback_count + 1
        score = (episode.feedback_score * episode.feedback_count + (1.0 if helpful else -1.0)) / count
        updated = episode.model_copy(update={"feedback_score": round(score, 6), "feedback_count": count})
        updated = updated.model_copy(
            update={"retention_score": retention_score(updated, now, deps.settings.tag_weights)}
        )
        audit = deps.audit(
            caller,
            AuditAction.FEEDBACK_RECORDED,
            now,
            event_id,
            None,
            helpful=helpful,
            noteHash=self.deps.pseudonyms.text(note) if note else None,
        )
        deps.episodes.apply(
            Changes(
                tenant_id=caller.tenant_id,
                stats=[StatsChange(event_id, updated.feedback_score, count, updated.retention_score)],
                audit=[audit],
            )
        )
        return updated
