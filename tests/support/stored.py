"""Episodes written straight into the local store (no policy, no service), for tests of what the
store keeps beside them: kept scopes, rowids."""

from datetime import UTC, datetime

from episodic.adapters.sqlite.store import SqliteStore
from episodic.application.ports import Changes, NewEpisode
from episodic.domain.model import Episode

NOW = datetime(2026, 11, 20, tzinfo=UTC)


def episode(n: int, tenant: str = "acme", actor: str = "a", expires: datetime | None = None) -> Episode:
    """A stored episode with event id ``E<n, five digits>``."""
    return Episode.model_validate(
        {"eventType": "tool_observed_event", "actorId": actor, "tenantId": tenant, "eventId": f"E{n:05d}",
         "occurredAt": NOW, "recordedAt": NOW, "policyVersion": "v", "summary": f"observation {n}",
         "sourceRefs": ["t:1"], "sourceTrust": "tool_result",
         "retention": {"expiresAt": expires.isoformat() if expires else None}}
    )  # fmt: skip


def put(store: SqliteStore, episodes: list[Episode]) -> None:
    """Write ``episodes`` (one tenant's) with no vectors."""
    store.episodes.apply(Changes(tenant_id=episodes[0].tenant_id, put=[NewEpisode(e, None) for e in episodes]))


def rowid(store: SqliteStore, event_id: str) -> int:
    return store.database.one("SELECT rowid FROM episodes WHERE event_id = ?", (event_id,))[0]
