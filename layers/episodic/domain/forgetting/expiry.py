"""What forgetting by retention leaves behind, whichever backend does the forgetting.

An expired episode leaves the timeline; a compact record goes to the cold archive and an
``episode.expired`` audit record says when, why and what (a content hash, never the text).
The local sweep and the DynamoDB stream processor (TTL) both build that record here.

One exception: a 24-hour digest (``session_summary``) is not archived. It repeats the text of
the episodes it cites, and erasing one of those must erase the digest too; in the timeline the
digest is found by its citations, but an archived copy could not be, and would keep erased
text. A digest is derived data: once expired it is simply gone (and can be made again).

Nor is a write still waiting for review: it was never admitted to memory, and a copy in the
archive would be a way back (restore) that no reviewer approved. Its review, still open, finds
no episode left: it can no longer be approved (409), and denying it deletes nothing.
"""

from __future__ import annotations

import json
from typing import Any

from episodic.domain.forgetting.pseudonyms import Pseudonyms
from episodic.domain.model import Episode, EventType, Status


def content_hash(episode: Episode, pseudonyms: Pseudonyms) -> str:
    """A stable, keyed hash of what an episode held, kept in tombstones instead of the text (keyed:
    a guess at a short episode's fields cannot be confirmed against it)."""
    return pseudonyms.text(json.dumps(episode.to_json_dict(), sort_keys=True, separators=(",", ":")))


def archived_on_expiry(episode: Episode) -> bool:
    """Whether an expiring episode leaves a copy in the cold archive (see the module docstring)."""
    return episode.event_type is not EventType.SESSION_SUMMARY and episode.status is not Status.PENDING_REVIEW


def expiry_detail(episode: Episode, archive_key: str | None, pseudonyms: Pseudonyms) -> dict[str, Any]:
    """The ``detail`` of an ``episode.expired`` audit record (``archiveKey`` None: not archived)."""
    detail: dict[str, Any] = {
        "reason": "retention_expired",
        "actor": pseudonyms.actor(episode.tenant_id, episode.actor_id),
        "archiveKey": archive_key,
        "contentHash": content_hash(episode, pseudonyms),
        "eventType": episode.event_type.value,
        "occurredAt": episode.occurred_at.isoformat(),
        "expiresAt": episode.retention.expires_at.isoformat() if episode.retention.expires_at else None,
    }
    if archive_key is None:
        detail["archived"] = False
    return detail
