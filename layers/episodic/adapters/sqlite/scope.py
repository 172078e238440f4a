"""The one WHERE clause through which every tenant-facing read of episodes goes.

The timeline and recall both filter by :class:`~episodic.application.ports.Scope` here, so tenant
isolation and the status, privacy, expiry, actor, project, type, time and tag filters are
written once: a read cannot forget one of them by building its own SQL. The tenant is
always the first condition, so every query starts on a tenant-prefixed index.
"""

from __future__ import annotations

from typing import Any

from episodic.adapters.sqlite.database import micros
from episodic.application.ports import Scope
from episodic.domain.model import PrivacyClass


def _marks(values: tuple[Any, ...]) -> str:
    return ",".join("?" * len(values))


def scope_sql(scope: Scope, alias: str = "e") -> tuple[str, list[Any]]:
    """``(where, params)`` admitting exactly the episodes (table alias ``alias``) in ``scope``."""
    clauses = [f"{alias}.tenant_id = ?"]
    params: list[Any] = [scope.tenant_id]
    clauses.append(f"{alias}.status IN ({_marks(scope.statuses)})")
    params += [s.value for s in scope.statuses]
    if len(scope.privacy_classes) < len(PrivacyClass):  # all of them: no filter to apply
        clauses.append(f"{alias}.privacy_class IN ({_marks(scope.privacy_classes)})")
        params += [p.value for p in scope.privacy_classes]
    clauses.append(f"({alias}.expires_at IS NULL OR {alias}.expires_at > ?)")
    params.append(micros(scope.now))
    if scope.actor_id:
        clauses.append(f"{alias}.actor_id = ?")
        params.append(scope.actor_id)
    if scope.project_id:
        clauses.append(f"{alias}.project_id = ?")
        params.append(scope.project_id)
    if scope.event_types:
        clauses.append(f"{alias}.event_type IN ({_marks(scope.event_types)})")
        params += [t.value for t in scope.event_types]
    if scope.occurred_after:
        clauses.append(f"{alias}.occurred_at >= ?")
        params.append(micros(scope.occurred_after))
    if scope.occurred_before:
        clauses.append(f"{alias}.occurred_at < ?")
        params.append(micros(scope.occurred_before))
    for tag in scope.tags:
        clauses.append(f"{alias}.rowid IN (SELECT episode_rowid FROM episode_tags WHERE tenant_id = ? AND tag = ?)")
        params += [scope.tenant_id, tag]
    return " AND ".join(clauses), params
