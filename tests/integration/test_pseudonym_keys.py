"""Where the key of actor pseudonyms lives: made once by the store, kept with the data (so a
restart, a second process or a copy of the data finds the same one), and an actor's erasure
also clears archive folders named by the unkeyed pseudonym of stores made before the key."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime

import pytest

from episodic.adapters.dynamodb.store import DynamoTimelineStore
from episodic.adapters.dynamodb.tables import PSEUDONYM_KEY_SK, SERVICE_PK
from episodic.adapters.files.archive import FolderArchive
from episodic.adapters.s3.archive import S3ColdArchive
from episodic.adapters.sqlite.store import SqliteStore
from episodic.domain.forgetting.pseudonyms import Pseudonyms, unkeyed_actor_pseudonym
from episodic.domain.model import Episode
from tests.support.factories import proposal_dict

NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)


def episode(event_id: str, actor: str = "gail") -> Episode:
    return Episode.model_validate(
        {
            **proposal_dict(actorId=actor, occurredAt=datetime(2026, 11, 28, 9, tzinfo=UTC)),
            "eventId": event_id,
            "tenantId": "acme",
            "recordedAt": NOW,
            "policyVersion": "v",
        }
    )


def test_given_a_sqlite_file_when_opened_again_or_twice_then_its_pseudonym_key_is_the_same(tmp_path):
    first = SqliteStore(tmp_path / "a.db")
    second = SqliteStore(tmp_path / "a.db")  # another process's view of the same file
    try:
        key = first.pseudonym_key()
        assert len(key) == 32 and second.pseudonym_key() == key
    finally:
        first.close(), second.close()
    reopened = SqliteStore(tmp_path / "a.db")
    other = SqliteStore(tmp_path / "b.db")
    try:
        assert reopened.pseudonym_key() == key and other.pseudonym_key() != key
    finally:
        reopened.close(), other.close()


def test_given_a_timeline_table_when_two_stores_ask_then_they_share_one_key_outside_every_tenant(aws_resources):
    settings, client = aws_resources["settings"], aws_resources["dynamodb"]
    first = DynamoTimelineStore(client, settings.timeline_table, settings.audit_table).pseudonym_key()
    second = DynamoTimelineStore(client, settings.timeline_table, settings.audit_table).pseudonym_key()
    assert len(first) == 32 and first == second
    item = client.get_item(
        TableName=settings.timeline_table, Key={"pk": {"S": SERVICE_PK}, "sk": {"S": PSEUDONYM_KEY_SK}}
    )
    assert item["Item"]["pk"]["S"].startswith("#")  # no tenant id starts so: no tenant-scoped role reaches it


def _legacy_record(folder, ep: Episode) -> None:
    """A record where a store made before the key filed it: under the unkeyed pseudonym."""
    day = folder / unkeyed_actor_pseudonym("acme", ep.actor_id) / "2026-11-28"
    day.mkdir(parents=True)
    record = {"archivedAt": NOW.isoformat(), "reason": "retention_expired", "episode": ep.to_json_dict()}
    (day / f"{ep.event_id}.json.gz").write_bytes(gzip.compress(json.dumps(record).encode()))


def test_given_folder_archives_under_both_pseudonyms_when_the_actor_is_erased_then_both_go(tmp_path):
    archive = FolderArchive(tmp_path / "archive", Pseudonyms(bytes(range(32))))
    old, new, other = episode("01JOLD"), episode("01JNEW"), episode("01JHAL", actor="hal")
    _legacy_record(tmp_path / "archive" / "acme", old)
    archive.put(new, "retention_expired", NOW)
    archive.put(other, "retention_expired", NOW)
    assert archive.contains("acme", "01JOLD") and archive.contains("acme", "01JNEW")
    assert archive.delete_actor("acme", "gail") == 2
    assert not archive.contains("acme", "01JOLD") and not archive.contains("acme", "01JNEW")
    assert archive.contains("acme", "01JHAL")
    assert sorted(p.name for p in (tmp_path / "archive" / "acme").iterdir()) == [
        Pseudonyms(bytes(range(32))).actor("acme", "hal")
    ]


@pytest.mark.usefixtures("aws_env")
def test_given_s3_archives_under_both_pseudonyms_when_the_actor_is_erased_then_every_version_goes(aws_resources):
    s3, bucket = aws_resources["s3"], aws_resources["settings"].archive_bucket
    archive = S3ColdArchive(s3, bucket, Pseudonyms(bytes(range(32))))
    old = episode("01JOLD")
    legacy_key = f"archive/acme/{unkeyed_actor_pseudonym('acme', 'gail')}/2026/11/28/01JOLD.json.gz"
    s3.put_object(
        Bucket=bucket, Key=legacy_key, Body=gzip.compress(json.dumps({"episode": old.to_json_dict()}).encode())
    )
    s3.put_object(Bucket=bucket, Key="archive/_by_id/acme/01JOLD", Body=legacy_key.encode())
    archive.put(episode("01JNEW"), "retention_expired", NOW)
    assert archive.contains("acme", "01JOLD")
    assert archive.delete_actor("acme", "gail") == 2
    listing = s3.list_object_versions(Bucket=bucket)
    assert listing.get("Versions", []) == [] and listing.get("DeleteMarkers", []) == []
