"""Items as DynamoDB Streams deliver them (already turned into Python values by Powertools): which
timeline items are episodes, and the episode, vector and embedder each holds; which audit items
are audit records, and the record.

The stream processor asks this reader instead of knowing the table's item layout itself."""

from __future__ import annotations

import base64
from typing import Any

from episodic.adapters.codec import plain_numbers, unpack_vector
from episodic.adapters.dynamodb.tables import EPISODE_SK
from episodic.application.ports import StoredEpisode
from episodic.domain.model import AuditRecord, Episode


class ImageError(ValueError):
    """An episode item that does not parse."""


class StreamImages:
    """Reads episode items out of stream images."""

    def read(self, image: dict[str, Any] | None) -> StoredEpisode | None:
        """The episode an item holds, with its vector and embedder; None for any other item."""
        if not image or image.get("sk") != EPISODE_SK:
            return None
        try:
            episode = Episode.model_validate(plain_numbers(image["ep"]))
        except (KeyError, ValueError) as exc:
            raise ImageError(f"episode image does not parse: {type(exc).__name__}") from exc
        raw = _vector_bytes(image)
        vector = None if raw is None else unpack_vector(raw).tolist()
        return StoredEpisode(episode=episode, vector=vector, embedder=image.get("embedder"))


class AuditImages:
    """Reads audit records out of the audit table's stream images (``NEW_IMAGE``)."""

    def read(self, image: dict[str, Any] | None) -> AuditRecord | None:
        """The audit record an audit item holds; None for any other item (a timeline item)."""
        if not image or "rec" not in image or "chain" not in image:
            return None
        try:
            return AuditRecord.model_validate_json(image["rec"])
        except ValueError as exc:
            raise ImageError(f"audit image does not parse: {type(exc).__name__}") from exc


def _vector_bytes(image: dict[str, Any]) -> bytes | None:
    """The stored float32 vector. Lambda delivers binary attributes base64-encoded."""
    raw = image.get("vec")
    if raw is None:
        return None
    if isinstance(raw, str):
        return base64.b64decode(raw)
    return bytes(getattr(raw, "value", raw))
