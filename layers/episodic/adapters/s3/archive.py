"""The AWS cold archive: one gzip-compressed JSON record per forgotten episode, in S3.

Same records as :class:`episodic.adapters.files.archive.FolderArchive` (``{"archivedAt",
"reason", "episode"}``, sorted keys, gzip with ``mtime=0``), so an archive can move between
backends and the two are tested against each other.

Layout::

    {prefix}{tenant}/{actor pseudonym}/{YYYY}/{MM}/{DD}/{eventId}.json.gz   the record (by occurredAt)
    {prefix}_by_id/{tenant}/{eventId}                                       pointer: body = the record's key

The actor appears only as its keyed pseudonym (:mod:`episodic.domain.forgetting.pseudonyms`), exactly as in
the local archive: a record's key is copied into the audit record of its expiry or decay,
and audit records are append-only, so a key holding the actor id would keep an erased
actor's id for ever. Erasure of an actor knows the id, so it finds the actor's prefix again (and the
unkeyed one that stores made before the key used).
Every other path component is percent-encoded with the local archive's rule (``/`` and
``.`` included), so no id can climb out of its prefix or into another tenant's. The pointer
makes lookup by id a single GET instead of a listing of the whole tenant (S3 can only list
by prefix, and the id is the last component).

Erasure has to leave no copy. The bucket is versioned (so an overwrite or a crash never
loses an acknowledged record), which means a plain DeleteObject only adds a delete marker
and keeps every byte. Erasure therefore deletes *every version and delete marker* of the
record and of its pointer, by version id.

The pointer is written *before* the record: a crash between the two leaves a pointer to
nothing (reads treat it as absent, erasure removes it) rather than a record that erasure by
id could not find.

The S3 client comes from the caller (the composition root decides region, credentials and
the retry mode; botocore retries throttling and 5xx itself, so nothing here retries).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any
from urllib.parse import quote

from botocore.exceptions import ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError

from episodic.domain.errors import StorageError
from episodic.domain.forgetting.pseudonyms import Pseudonyms, unkeyed_actor_pseudonym
from episodic.domain.model import Episode

_DELETE_BATCH = 1000
"""DeleteObjects accepts at most 1000 keys (here: key versions) per request."""

_MISSING = frozenset({"NoSuchKey", "NoSuchVersion", "404", "NotFound"})
"""Error codes that mean "this object is not there". ``NoSuchBucket`` is deliberately not one:
a missing bucket is a broken deployment, not an empty archive."""

_RECORD_SUFFIX = ".json.gz"
_POINTER_DIR = "_by_id"


def _component(value: str) -> str:
    """The local archive's rule: percent-encode everything but unreserved characters, and dots."""
    return quote(value, safe="").replace(".", "%2E")


def _tenant_component(tenant_id: str) -> str:
    """``_component``, plus a leading ``_`` encoded, so no tenant can be named like the pointer folder.

    Valid ids start with a letter or digit, so for them this is exactly ``_component``.
    """
    encoded = _component(tenant_id)
    return "%5F" + encoded[1:] if encoded.startswith("_") else encoded


@contextmanager
def _translated(action: str) -> Iterator[None]:
    """Turn S3 failures into :class:`StorageError` (503, retryable) naming the step, never the content."""
    try:
        yield
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "Unknown")
        raise StorageError(f"cold archive: could not {action} ({code})") from exc
    except (BotoConnectionError, HTTPClientError) as exc:
        raise StorageError(f"cold archive: could not {action} (connection failed)") from exc


def _is_missing(exc: ClientError) -> bool:
    return exc.response.get("Error", {}).get("Code") in _MISSING


class S3ColdArchive:
    """:class:`episodic.application.ports.ColdArchive` on a versioned, KMS-encrypted S3 bucket."""

    def __init__(
        self,
        client: Any,
        bucket: str,
        pseudonyms: Pseudonyms,
        kms_key_id: str | None = None,
        prefix: str = "archive/",
    ) -> None:
        if prefix and not prefix.endswith("/"):
            raise ValueError("prefix must be empty or end with '/'")
        self.client = client
        self.pseudonyms = pseudonyms
        self.bucket = bucket
        self.prefix = prefix
        # Without a key id S3 uses the bucket's default KMS key (aws/s3 or the configured one).
        self._encryption: dict[str, str] = {"ServerSideEncryption": "aws:kms"}
        if kms_key_id:
            self._encryption["SSEKMSKeyId"] = kms_key_id

    # -- keys -----------------------------------------------------------------------------

    def _tenant_prefix(self, tenant_id: str) -> str:
        return f"{self.prefix}{_tenant_component(tenant_id)}/"

    def _actor_prefixes(self, tenant_id: str, actor_id: str) -> tuple[str, str]:
        """Where an actor's records are (its keyed pseudonym), then where stores made before the
        key kept them (the unkeyed one)."""
        tenant = self._tenant_prefix(tenant_id)
        return (
            f"{tenant}{self.pseudonyms.actor(tenant_id, actor_id)}/",
            f"{tenant}{unkeyed_actor_pseudonym(tenant_id, actor_id)}/",
        )

    def _record_key(self, episode: Episode) -> str:
        day = episode.occurred_at.strftime("%Y/%m/%d")
        name = f"{_component(episode.event_id)}{_RECORD_SUFFIX}"
        return f"{self._actor_prefixes(episode.tenant_id, episode.actor_id)[0]}{day}/{name}"

    def _pointer_key(self, tenant_id: str, encoded_event_id: str) -> str:
        return f"{self.prefix}{_POINTER_DIR}/{_tenant_component(tenant_id)}/{encoded_event_id}"

    # -- the port -------------------------------------------------------------------------

    def put(self, episode: Episode, reason: str, at: datetime) -> str:
        """Archive ``episode``; returns the record's object key. Re-archiving overwrites (a new version)."""
        key = self._record_key(episode)
        record = {"archivedAt": at.isoformat(), "reason": reason, "episode": episode.to_json_dict()}
        body = gzip.compress(json.dumps(record, sort_keys=True).encode(), mtime=0)
        pointer = self._pointer_key(episode.tenant_id, _component(episode.event_id))
        with _translated("write the archive pointer"):
            self.client.put_object(
                Bucket=self.bucket, Key=pointer, Body=key.encode(), ContentType="text/plain", **self._encryption
            )
        with _translated("write the archive record"):
            self.client.put_object(
                Bucket=self.bucket,
                Key=key,
                Body=body,
                ContentType="application/json",
                ContentEncoding="gzip",
                **self._encryption,
            )
        return key

    def get(self, tenant_id: str, event_id: str) -> dict | None:
        """The archived record, or ``None`` when there is none (or only a dangling pointer)."""
        key = self._current_record_key(tenant_id, event_id)
        if key is None:
            return None
        with _translated("read the archive record"):
            raw = self._read(key)
        return None if raw is None else json.loads(gzip.decompress(raw))

    def contains(self, tenant_id: str, event_id: str) -> bool:
        key = self._current_record_key(tenant_id, event_id)
        if key is None:
            return False
        with _translated("check the archive record"):
            try:
                self.client.head_object(Bucket=self.bucket, Key=key)
            except ClientError as exc:
                if _is_missing(exc):
                    return False
                raise
        return True

    def delete_events(self, tenant_id: str, event_ids: Sequence[str]) -> int:
        """Erase these events' records and pointers, every version. Returns how many records existed.

        Every version of the pointer is read, not just the current one, so a record that was
        ever archived under this id is found even if a later put pointed elsewhere.
        """
        removed = 0
        records: list[dict[str, str]] = []
        pointers: list[dict[str, str]] = []
        for event_id in dict.fromkeys(event_ids):
            pointer = self._pointer_key(tenant_id, _component(event_id))
            pointer_versions, _ = self._versions_of(pointer)
            for key in self._keys_named_by(tenant_id, pointer, pointer_versions):
                versions, current = self._versions_of(key)
                records.extend(versions)
                removed += current
            pointers.extend({"Key": v["Key"], "VersionId": v["VersionId"]} for v in pointer_versions)
        # Records first: if a batch fails the pointers are still there and a retry finds everything.
        self._delete_versions(records + pointers)
        return removed

    def delete_actor(self, tenant_id: str, actor_id: str) -> int:
        """Erase every record of an actor in a tenant, their pointers, every version. Returns the record count."""
        records: list[dict[str, str]] = []
        record_keys: set[str] = set()
        removed = 0
        with _translated("list the actor's archive"):
            for prefix in self._actor_prefixes(tenant_id, actor_id):
                pages = self.client.get_paginator("list_object_versions").paginate(Bucket=self.bucket, Prefix=prefix)
                for page in pages:
                    for entry in (*page.get("Versions", ()), *page.get("DeleteMarkers", ())):
                        records.append({"Key": entry["Key"], "VersionId": entry["VersionId"]})
                        record_keys.add(entry["Key"])
                    removed += sum(1 for v in page.get("Versions", ()) if v.get("IsLatest"))
        pointers: list[dict[str, str]] = []
        for key in sorted(record_keys):
            name = key.rsplit("/", 1)[-1]
            if name.endswith(_RECORD_SUFFIX):
                versions, _ = self._versions_of(self._pointer_key(tenant_id, name[: -len(_RECORD_SUFFIX)]))
                pointers.extend(versions)
        self._delete_versions(records + pointers)
        return removed

    # -- helpers --------------------------------------------------------------------------

    def _read(self, key: str, version_id: str | None = None) -> bytes | None:
        """The object's bytes, or ``None`` if it (or that version) does not exist. Other errors propagate."""
        extra = {"VersionId": version_id} if version_id else {}
        try:
            return self.client.get_object(Bucket=self.bucket, Key=key, **extra)["Body"].read()
        except ClientError as exc:
            if _is_missing(exc):
                return None
            raise

    def _current_record_key(self, tenant_id: str, event_id: str) -> str | None:
        pointer = self._pointer_key(tenant_id, _component(event_id))
        with _translated("read the archive pointer"):
            raw = self._read(pointer)
        if raw is None:
            return None
        return self._checked(tenant_id, pointer, raw.decode())

    def _checked(self, tenant_id: str, pointer: str, key: str) -> str:
        """A pointer may only name a record of its own tenant and event; anything else is corruption."""
        event = pointer.rsplit("/", 1)[-1]
        if not (key.startswith(self._tenant_prefix(tenant_id)) and key.endswith(f"/{event}{_RECORD_SUFFIX}")):
            raise StorageError("cold archive: an archive pointer names a record outside its tenant or event")
        return key

    def _keys_named_by(self, tenant_id: str, pointer: str, versions: Iterable[dict[str, Any]]) -> list[str]:
        """Every record key any version of the pointer ever named (delete markers have no body)."""
        keys: dict[str, None] = {}
        for version in versions:
            if version.get("IsDeleteMarker"):
                continue
            with _translated("read the archive pointer"):
                raw = self._read(pointer, version["VersionId"])
            if raw is not None:
                keys[self._checked(tenant_id, pointer, raw.decode())] = None
        return list(keys)

    def _versions_of(self, key: str) -> tuple[list[dict[str, Any]], int]:
        """Every version and delete marker of exactly ``key``, and 1 if any version holds bytes.

        ListObjectVersions filters by prefix only, so keys that merely start with ``key`` are dropped.
        """
        found: list[dict[str, Any]] = []
        current = 0
        with _translated("list archive versions"):
            for page in self.client.get_paginator("list_object_versions").paginate(Bucket=self.bucket, Prefix=key):
                for version in page.get("Versions", ()):
                    if version["Key"] == key:
                        found.append({"Key": key, "VersionId": version["VersionId"]})
                        current = 1  # bytes exist, whichever version is the latest
                for marker in page.get("DeleteMarkers", ()):
                    if marker["Key"] == key:
                        found.append({"Key": key, "VersionId": marker["VersionId"], "IsDeleteMarker": True})
        return found, current

    def _delete_versions(self, versions: Sequence[dict[str, Any]]) -> None:
        """Permanently delete these key versions, 1000 per request; any per-key failure is an error.

        DeleteObjects reports per-key failures in its response instead of raising, so an
        erasure that silently kept a version would otherwise look successful.
        """
        objects = [{"Key": v["Key"], "VersionId": v["VersionId"]} for v in versions]
        for start in range(0, len(objects), _DELETE_BATCH):
            chunk = objects[start : start + _DELETE_BATCH]
            with _translated("delete archive versions"):
                response = self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": chunk, "Quiet": True})
            errors = response.get("Errors") or []
            if errors:
                codes = sorted({e.get("Code", "Unknown") for e in errors})
                raise StorageError(
                    f"cold archive: could not delete {len(errors)} archive object version(s) ({', '.join(codes)})"
                )
