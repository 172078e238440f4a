"""Audit chain checkpoints in an S3 bucket under Object Lock.

Each checkpoint is one object, ``audit-heads/<yyyy>/<mm>/<dd>/<iso time>.json``, holding every
tenant's chain heads (``{"at", "heads": {tenant: {shard: {"seq", "digest"}}}}``). The bucket's
default retention (Object Lock, governance mode, and a bucket policy that lets no principal
bypass or shorten it) keeps each object unchanged and undeletable for its retention period:
the service's roles may add checkpoints, never rewrite one. Verification checks each chain
against the newest checkpoint's head (:meth:`S3Checkpoints.latest`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from episodic.domain.chain import Head
from episodic.domain.errors import StorageError

PREFIX = "audit-heads/"


class S3Checkpoints:
    def __init__(self, client: Any, bucket: str) -> None:
        self.client, self.bucket = client, bucket

    def put(self, heads: Mapping[str, Mapping[int, Head]], at: datetime) -> str:
        key = f"{PREFIX}{at:%Y/%m/%d}/{at.isoformat()}.json"
        kept = {
            t: {str(s): {"seq": h.seq, "digest": h.digest} for s, h in chains.items()} for t, chains in heads.items()
        }
        body = {"at": at.isoformat(), "heads": kept}
        try:
            self.client.put_object(Bucket=self.bucket, Key=key, Body=json.dumps(body).encode(),
                                   ContentType="application/json")  # fmt: skip
        except (ClientError, BotoCoreError) as exc:
            raise StorageError(f"could not keep the audit checkpoint ({type(exc).__name__})") from exc
        return key

    def latest(self, tenant_id: str) -> dict[int, Head]:
        newest = self._newest_key()
        if newest is None:
            return {}
        try:
            body = json.loads(self.client.get_object(Bucket=self.bucket, Key=newest)["Body"].read())
        except (ClientError, BotoCoreError, ValueError) as exc:
            raise StorageError(f"could not read the audit checkpoint ({type(exc).__name__})") from exc
        chains = body.get("heads", {}).get(tenant_id, {})
        return {int(s): Head(int(h["seq"]), str(h["digest"])) for s, h in chains.items()}

    def _newest_key(self) -> str | None:
        """The newest checkpoint's key: down the newest year, month and day that hold one."""
        prefix = PREFIX
        for _ in range(3):  # year, month, day
            folders = self._list(prefix, delimiter="/")[1]
            if not folders:
                return None
            prefix = max(folders)
        keys = self._list(prefix)[0]
        return max(keys) if keys else None

    def _list(self, prefix: str, delimiter: str = "") -> tuple[list[str], list[str]]:
        """The keys and the sub-prefixes (with ``delimiter``) under ``prefix``."""
        keys: list[str] = []
        folders: list[str] = []
        request: dict[str, Any] = {"Bucket": self.bucket, "Prefix": prefix}
        if delimiter:
            request["Delimiter"] = delimiter
        while True:
            try:
                page = self.client.list_objects_v2(**request)
            except (ClientError, BotoCoreError) as exc:
                raise StorageError(f"could not list the audit checkpoints ({type(exc).__name__})") from exc
            keys += [item["Key"] for item in page.get("Contents", [])]
            folders += [item["Prefix"] for item in page.get("CommonPrefixes", [])]
            if not page.get("IsTruncated"):
                return keys, folders
            request["ContinuationToken"] = page["NextContinuationToken"]
