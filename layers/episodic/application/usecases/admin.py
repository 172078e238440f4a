"""Operating the service: the audit trail, the write kill-switch, health, re-embedding."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from episodic.application.ports import AuditQuery
from episodic.application.usecases.deps import Deps, require_operator
from episodic.domain.model import AuditAction, AuditRecord, Caller, Health, WritesStatus


class Admin:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps

    def audit(
        self,
        caller: Caller,
        *,
        event_id: str | None = None,
        action: AuditAction | None = None,
        since: datetime | None = None,
        limit: int = 100,
        cursor: str | None = None,
    ) -> tuple[list[AuditRecord], str | None]:
        require_operator(caller)
        query = AuditQuery(
            tenant_id=caller.tenant_id, event_id=event_id, action=action, since=since, limit=limit, cursor=cursor
        )
        return self.deps.audit_log.audit(query)

    def set_writes(self, caller: Caller, enabled: bool, reason: str | None = None) -> WritesStatus:
        """The operator kill-switch: disables writes for the tenant; recall keeps working."""
        require_operator(caller)
        now = self.deps.clock.now()
        action = AuditAction.WRITES_ENABLED if enabled else AuditAction.WRITES_DISABLED
        self.deps.tenants.set_writes_enabled(
            caller.tenant_id, enabled, self.deps.audit(caller, action, now, None, None, reason=reason)
        )
        return self.writes_status(caller.tenant_id)

    def writes_status(self, tenant_id: str) -> WritesStatus:
        disabled = self.deps.settings.writes_disabled
        return WritesStatus(
            writes_enabled=not disabled and self.deps.tenants.writes_enabled(tenant_id),
            deployment_kill_switch=disabled,
        )

    def health(self) -> Health:
        return Health(
            backend=self.deps.backend,
            policy_version=self.deps.policy.version,
            embedder=self.deps.embedder.name,
            deployment_writes_disabled=self.deps.settings.writes_disabled,
        )

    def reembed(self, batch_size: int = 256, progress: Callable[[int], Any] | None = None) -> int:
        """Give every episode a vector from the current embedder (after a model change).

        Until then such episodes take part in recall by BM25 only: vectors of two models
        are never compared. ``progress(done)`` is called after each batch.
        """
        deps = self.deps
        done = 0
        while batch := deps.vectors.stale_vectors(deps.embedder.name, batch_size):
            vectors = deps.embedder.embed([e.search_text() for e in batch])
            deps.vectors.set_vectors(list(zip(batch, vectors, strict=True)), deps.embedder.name)
            done += len(batch)
            if progress is not None:
                progress(done)
        return done
