"""The local cold archive: one gzip-compressed JSON record per forgotten episode.

Layout: ``<root>/<tenant>/<actor pseudonym>/<YYYY-MM-DD>/<eventId>.json.gz`` (path components
are percent-encoded, so no id can escape the root). The actor appears only as
its keyed pseudonym (:mod:`episodic.domain.forgetting.pseudonyms`): archive keys are copied into audit
records, which outlive an actor's erasure. An actor's erasure also removes the folder named by the
unkeyed pseudonym, where stores made before the key kept its records. Records are written to a
temporary file, fsynced and renamed, so a crash never leaves a half-written record.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from urllib.parse import quote

from episodic.domain.forgetting.pseudonyms import Pseudonyms, unkeyed_actor_pseudonym
from episodic.domain.model import Episode


def _component(value: str) -> str:
    return quote(value, safe="").replace(".", "%2E")


class FolderArchive:
    def __init__(self, root: Path | str, pseudonyms: Pseudonyms) -> None:
        self.root = Path(root)
        self.pseudonyms = pseudonyms
        self.root.mkdir(parents=True, exist_ok=True)

    def put(self, episode: Episode, reason: str, at: datetime) -> str:
        folder = (
            self.root
            / _component(episode.tenant_id)
            / self.pseudonyms.actor(episode.tenant_id, episode.actor_id)
            / episode.occurred_at.strftime("%Y-%m-%d")
        )
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"{_component(episode.event_id)}.json.gz"
        record = {"archivedAt": at.isoformat(), "reason": reason, "episode": episode.to_json_dict()}
        tmp = target.with_suffix(".tmp")
        with open(tmp, "wb") as raw:
            with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
                gz.write(json.dumps(record, sort_keys=True).encode())
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(tmp, target)
        return str(target.relative_to(self.root))

    def _matches(self, tenant_id: str, event_id: str) -> list[Path]:
        return list((self.root / _component(tenant_id)).glob(f"*/*/{_component(event_id)}.json.gz"))

    def get(self, tenant_id: str, event_id: str) -> dict | None:
        for path in self._matches(tenant_id, event_id):
            with gzip.open(path, "rb") as handle:
                return json.loads(handle.read())
        return None

    def contains(self, tenant_id: str, event_id: str) -> bool:
        return bool(self._matches(tenant_id, event_id))

    def delete_events(self, tenant_id: str, event_ids: Sequence[str]) -> int:
        removed = 0
        for event_id in event_ids:
            for path in self._matches(tenant_id, event_id):
                path.unlink(missing_ok=True)
                removed += 1
        return removed

    def delete_actor(self, tenant_id: str, actor_id: str) -> int:
        tenant = self.root / _component(tenant_id)
        keyed, unkeyed = self.pseudonyms.actor(tenant_id, actor_id), unkeyed_actor_pseudonym(tenant_id, actor_id)
        return sum(_empty(tenant / name) for name in (keyed, unkeyed))


def _empty(folder: Path) -> int:
    """Delete an actor folder's records and the folders they leave empty; how many went."""
    removed = 0
    for path in sorted(folder.glob("*/*.json.gz")):
        path.unlink(missing_ok=True)
        removed += 1
    for day in sorted(folder.glob("*"), reverse=True):
        if day.is_dir() and not any(day.iterdir()):
            day.rmdir()
    if folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
    return removed
