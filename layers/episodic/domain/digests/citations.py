"""How one episode cites another: ``episode:<eventId>`` in ``sourceRefs``.

A session summary cites every episode it was made from this way; erasure follows these
citations to erase the digests of what it erases, and both stores index them. One helper
keeps the writer and every reader on the same spelling."""

from __future__ import annotations

EPISODE_REF_PREFIX = "episode:"


def cite(event_id: str) -> str:
    """The ``sourceRefs`` entry that cites episode ``event_id``."""
    return f"{EPISODE_REF_PREFIX}{event_id}"


def cited_event_id(ref: str) -> str | None:
    """The episode a ``sourceRefs`` entry cites, or None when it cites something else."""
    return ref[len(EPISODE_REF_PREFIX) :] if ref.startswith(EPISODE_REF_PREFIX) else None
