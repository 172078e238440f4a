"""The S3 cold archive, run for real under moto: a versioned bucket and a KMS key.

The local :class:`FolderArchive` is the reference: the same episode must archive to the same
record. Erasure is checked on the bucket's version listing, not through the adapter, because
"no copy left" includes old versions and delete markers the adapter never reads.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from episodic.adapters.files.archive import FolderArchive
from episodic.adapters.s3 import archive as s3_archive
from episodic.adapters.s3.archive import S3ColdArchive
from episodic.domain.errors import StorageError
from episodic.domain.model import Episode
from tests.support.factories import PSEUDONYMS, proposal_dict

BUCKET = "episodic-archive-test"
USER_1 = PSEUDONYMS.actor("acme", "user-1")
NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)
SUMMARY = "User prefers invoices as PDF attachments sent to the finance mailbox"


def episode(event_id: str, tenant: str = "acme", actor: str = "user-1", day: int = 28, **overrides: Any) -> Episode:
    return Episode.model_validate(
        {
            **proposal_dict(actorId=actor, occurredAt=datetime(2026, 11, day, 9, 30, tzinfo=UTC), **overrides),
            "eventId": event_id,
            "tenantId": tenant,
            "recordedAt": NOW,
            "policyVersion": "v",
        }
    )


@dataclass
class Aws:
    s3: Any
    key_arn: str
    archive: S3ColdArchive

    def versions(self, prefix: str = "") -> list[tuple[str, str]]:
        """Every (key, version id) in the bucket under ``prefix``, delete markers included."""
        found = []
        for page in self.s3.get_paginator("list_object_versions").paginate(Bucket=BUCKET, Prefix=prefix):
            for entry in (*page.get("Versions", ()), *page.get("DeleteMarkers", ())):
                found.append((entry["Key"], entry["VersionId"]))
        return found

    def object_keys(self, prefix: str = "") -> set[str]:
        return {key for key, _ in self.versions(prefix)}


@pytest.fixture
def aws(monkeypatch) -> Iterator[Aws]:
    for name, value in {
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        s3 = boto3.client("s3")
        s3.create_bucket(Bucket=BUCKET)
        s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
        key_arn = boto3.client("kms").create_key(Description="archive")["KeyMetadata"]["Arn"]
        yield Aws(s3=s3, key_arn=key_arn, archive=S3ColdArchive(s3, BUCKET, PSEUDONYMS, kms_key_id=key_arn))


# -- round trip ---------------------------------------------------------------------------


def test_given_an_archived_episode_when_read_back_then_the_record_is_what_the_folder_archive_writes(aws, tmp_path):
    ep = episode("01JEVENT000000000000000001")
    key = aws.archive.put(ep, "retention_expired", NOW)
    local = FolderArchive(tmp_path, PSEUDONYMS)
    local_path = tmp_path / local.put(ep, "retention_expired", NOW)

    record = aws.archive.get("acme", ep.event_id)
    assert record == local.get("acme", ep.event_id)
    assert record == {"archivedAt": NOW.isoformat(), "reason": "retention_expired", "episode": ep.to_json_dict()}
    assert aws.archive.contains("acme", ep.event_id)
    raw = aws.s3.get_object(Bucket=BUCKET, Key=key)
    assert gzip.decompress(raw["Body"].read()) == gzip.decompress(local_path.read_bytes())
    assert raw["ContentType"] == "application/json" and raw["ContentEncoding"] == "gzip"


def test_given_the_same_episode_when_archived_twice_then_the_bytes_are_identical(aws):
    ep = episode("01JEVENT000000000000000001")
    key = aws.archive.put(ep, "retention_expired", NOW)
    first = aws.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
    aws.archive.put(ep, "retention_expired", NOW)
    assert aws.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read() == first  # gzip mtime=0: deterministic


# -- encryption -----------------------------------------------------------------------------


def test_given_a_kms_key_when_archived_then_record_and_pointer_are_encrypted_with_it(aws):
    ep = episode("01JEVENT000000000000000001")
    key = aws.archive.put(ep, "retention_expired", NOW)
    for object_key in (key, f"archive/_by_id/acme/{ep.event_id}"):
        head = aws.s3.head_object(Bucket=BUCKET, Key=object_key)
        assert head["ServerSideEncryption"] == "aws:kms"
        assert head["SSEKMSKeyId"] == aws.key_arn


def test_given_no_kms_key_when_archived_then_the_bucket_default_kms_key_is_used(aws):
    archive = S3ColdArchive(aws.s3, BUCKET, PSEUDONYMS)
    key = archive.put(episode("01JEVENT000000000000000001"), "retention_expired", NOW)
    assert aws.s3.head_object(Bucket=BUCKET, Key=key)["ServerSideEncryption"] == "aws:kms"


# -- layout ---------------------------------------------------------------------------------


def test_given_an_episode_when_archived_then_the_key_is_tenant_pseudonym_date_id_and_a_pointer_names_it(aws):
    ep = episode("01JEVENT000000000000000001", day=3)
    key = aws.archive.put(ep, "retention_expired", NOW)
    assert len(USER_1) == 32 and int(USER_1, 16) >= 0
    assert key == f"archive/acme/{USER_1}/2026/11/03/01JEVENT000000000000000001.json.gz"
    assert "user-1" not in key, "keys reach audit records, which outlive an actor's erasure"
    pointer = aws.s3.get_object(Bucket=BUCKET, Key="archive/_by_id/acme/01JEVENT000000000000000001")
    assert pointer["Body"].read().decode() == key
    assert aws.object_keys() == {key, "archive/_by_id/acme/01JEVENT000000000000000001"}


def test_given_hostile_ids_when_archived_then_every_component_is_percent_encoded_and_stays_in_its_prefix(aws, tmp_path):
    # The model's Id pattern forbids '/', so the hostile actor bypasses validation on purpose.
    ep = episode("evt:1@x.y").model_copy(update={"actor_id": "a/../b"})
    key = aws.archive.put(ep, "retention_expired", NOW)
    assert key == f"archive/acme/{PSEUDONYMS.actor('acme', 'a/../b')}/2026/11/28/evt%3A1%40x%2Ey.json.gz"
    # Same component rules as the local archive.
    local_key = FolderArchive(tmp_path, PSEUDONYMS).put(ep, "retention_expired", NOW)
    assert local_key.split("/")[1] == key.split("/")[2]
    assert local_key.split("/")[-1] == key.split("/")[-1]
    assert "archive/_by_id/acme/evt%3A1%40x%2Ey" in aws.object_keys()
    assert aws.archive.get("acme", "evt:1@x.y")["episode"]["actorId"] == "a/../b"
    # Neither the plain actor "a" nor "b" reaches it.
    assert aws.archive.delete_actor("acme", "a") == 0 and aws.archive.delete_actor("acme", "b") == 0
    assert aws.archive.contains("acme", "evt:1@x.y")


def test_given_a_tenant_named_like_the_pointer_folder_when_its_actor_is_erased_then_other_pointers_survive(aws):
    victim = episode("01JEVENT000000000000000001")
    aws.archive.put(victim, "retention_expired", NOW)
    hostile = episode("01JEVENT000000000000000002", actor="acme").model_copy(update={"tenant_id": "_by_id"})
    key = aws.archive.put(hostile, "retention_expired", NOW)
    assert key.startswith(f"archive/%5Fby_id/{PSEUDONYMS.actor('_by_id', 'acme')}/")
    assert aws.archive.delete_actor("_by_id", "acme") == 1
    assert aws.archive.contains("acme", victim.event_id)


# -- erasure by id ----------------------------------------------------------------------------


def test_given_a_record_with_versions_and_a_delete_marker_when_events_are_deleted_then_no_version_remains(aws):
    ep = episode("01JEVENT000000000000000001")
    key = aws.archive.put(ep, "retention_expired", NOW)
    aws.s3.delete_object(Bucket=BUCKET, Key=key)  # a delete marker over the first version
    aws.archive.put(ep, "retention_expired", NOW + timedelta(days=1))
    pointer = f"archive/_by_id/acme/{ep.event_id}"
    assert len([v for v in aws.versions() if v[0] == key]) == 3
    assert len([v for v in aws.versions() if v[0] == pointer]) == 2

    assert aws.archive.delete_events("acme", [ep.event_id]) == 1

    for object_key in (key, pointer):
        listing = aws.s3.list_object_versions(Bucket=BUCKET, Prefix=object_key)
        assert listing.get("Versions", []) == [] and listing.get("DeleteMarkers", []) == []
    assert not aws.archive.contains("acme", ep.event_id)
    assert aws.archive.get("acme", ep.event_id) is None


def test_given_an_id_archived_under_two_keys_when_deleted_then_both_records_are_gone(aws):
    first = aws.archive.put(episode("01JEVENT000000000000000001", day=1), "retention_expired", NOW)
    second = aws.archive.put(episode("01JEVENT000000000000000001", day=2), "retention_expired", NOW)
    assert first != second
    assert aws.archive.delete_events("acme", ["01JEVENT000000000000000001"]) == 2
    assert aws.versions() == []


def test_given_several_ids_when_deleted_then_only_those_records_go_and_the_count_is_of_records(aws):
    for n in (1, 2, 3):
        ep = episode(f"01JEVENT00000000000000000{n}")
        aws.archive.put(ep, "retention_expired", NOW)
        aws.archive.put(ep, "retention_expired", NOW)  # two versions each
    removed = aws.archive.delete_events("acme", ["01JEVENT000000000000000001", "01JEVENT000000000000000002"] * 2)
    assert removed == 2
    assert aws.object_keys() == {
        f"archive/acme/{USER_1}/2026/11/28/01JEVENT000000000000000003.json.gz",
        "archive/_by_id/acme/01JEVENT000000000000000003",
    }


def test_given_more_versions_than_one_batch_when_deleted_then_they_go_in_several_requests(aws, monkeypatch):
    monkeypatch.setattr(s3_archive, "_DELETE_BATCH", 2)
    calls = []
    real = aws.s3.delete_objects

    def counting(**kwargs):
        calls.append(len(kwargs["Delete"]["Objects"]))
        return real(**kwargs)

    monkeypatch.setattr(aws.s3, "delete_objects", counting)
    ep = episode("01JEVENT000000000000000001")
    for _ in range(3):
        aws.archive.put(ep, "retention_expired", NOW)
    assert aws.archive.delete_events("acme", [ep.event_id]) == 1
    assert calls == [2, 2, 2] and aws.versions() == []


def test_given_s3_refuses_to_delete_a_version_when_events_are_deleted_then_storage_error(aws, monkeypatch):
    ep = episode("01JEVENT000000000000000001")
    aws.archive.put(ep, "retention_expired", NOW)

    def refusing(**kwargs):
        return {"Errors": [{"Key": o["Key"], "Code": "AccessDenied"} for o in kwargs["Delete"]["Objects"]]}

    monkeypatch.setattr(aws.s3, "delete_objects", refusing)
    with pytest.raises(StorageError, match="AccessDenied"):
        aws.archive.delete_events("acme", [ep.event_id])


def test_given_a_pointer_without_its_record_when_read_then_absent_and_erasure_removes_the_pointer(aws):
    ep = episode("01JEVENT000000000000000001")
    key = aws.archive.put(ep, "retention_expired", NOW)
    for _, version in aws.versions(key):
        aws.s3.delete_object(Bucket=BUCKET, Key=key, VersionId=version)
    assert aws.archive.get("acme", ep.event_id) is None
    assert not aws.archive.contains("acme", ep.event_id)
    assert aws.archive.delete_events("acme", [ep.event_id]) == 0
    assert aws.versions() == []


# -- erasure by actor --------------------------------------------------------------------------


def test_given_several_actors_when_one_is_erased_then_only_its_records_and_pointers_go(aws):
    mine = [
        aws.archive.put(episode("01JEVENT000000000000000001", day=1), "retention_expired", NOW),
        aws.archive.put(episode("01JEVENT000000000000000002", day=20), "retention_expired", NOW),
    ]
    aws.archive.put(episode("01JEVENT000000000000000002", day=20), "retention_expired", NOW)  # a 2nd version
    aws.archive.put(episode("01JEVENT000000000000000003", actor="user-10"), "retention_expired", NOW)
    aws.archive.put(episode("01JEVENT000000000000000004", actor="user-2"), "retention_expired", NOW)

    assert aws.archive.delete_actor("acme", "user-1") == 2

    remaining = aws.object_keys()
    assert not remaining & set(mine)
    assert "archive/_by_id/acme/01JEVENT000000000000000001" not in remaining
    assert "archive/_by_id/acme/01JEVENT000000000000000002" not in remaining
    assert aws.versions(f"archive/acme/{USER_1}/") == []
    assert aws.archive.contains("acme", "01JEVENT000000000000000003")
    assert aws.archive.contains("acme", "01JEVENT000000000000000004")
    assert aws.archive.delete_actor("acme", "user-1") == 0


def test_given_the_same_ids_in_another_tenant_when_erased_then_the_other_tenant_is_untouched(aws):
    ep = episode("01JEVENT000000000000000001")
    other = episode("01JEVENT000000000000000001", tenant="globex")
    aws.archive.put(ep, "retention_expired", NOW)
    aws.archive.put(other, "retention_expired", NOW)
    aws.archive.put(episode("01JEVENT000000000000000002", tenant="globex"), "retention_expired", NOW)
    before = set(aws.versions("archive/globex/")) | set(aws.versions("archive/_by_id/globex/"))

    assert aws.archive.delete_events("acme", [ep.event_id]) == 1
    aws.archive.put(ep, "retention_expired", NOW)
    assert aws.archive.delete_actor("acme", "user-1") == 1

    after = set(aws.versions("archive/globex/")) | set(aws.versions("archive/_by_id/globex/"))
    assert after == before
    assert aws.archive.get("globex", ep.event_id) == {
        "archivedAt": NOW.isoformat(),
        "reason": "retention_expired",
        "episode": other.to_json_dict(),
    }


def test_given_another_tenants_id_when_read_then_it_is_absent(aws):
    aws.archive.put(episode("01JEVENT000000000000000001", tenant="globex"), "retention_expired", NOW)
    assert aws.archive.get("acme", "01JEVENT000000000000000001") is None
    assert not aws.archive.contains("acme", "01JEVENT000000000000000001")
    assert aws.archive.delete_events("acme", ["01JEVENT000000000000000001"]) == 0
    assert aws.archive.contains("globex", "01JEVENT000000000000000001")


# -- absence and failure -----------------------------------------------------------------------


def test_given_an_empty_archive_when_asked_about_a_missing_id_then_none_false_and_zero(aws):
    assert aws.archive.get("acme", "nope") is None
    assert aws.archive.contains("acme", "nope") is False
    assert aws.archive.delete_events("acme", ["nope"]) == 0
    assert aws.archive.delete_events("acme", []) == 0
    assert aws.archive.delete_actor("acme", "nobody") == 0


def test_given_a_pointer_naming_another_tenants_record_when_read_then_storage_error(aws):
    globex_key = aws.archive.put(episode("01JEVENT000000000000000001", tenant="globex"), "retention_expired", NOW)
    aws.s3.put_object(Bucket=BUCKET, Key="archive/_by_id/acme/01JEVENT000000000000000001", Body=globex_key.encode())
    with pytest.raises(StorageError):
        aws.archive.get("acme", "01JEVENT000000000000000001")
    with pytest.raises(StorageError):
        aws.archive.delete_events("acme", ["01JEVENT000000000000000001"])
    assert aws.archive.contains("globex", "01JEVENT000000000000000001")


@pytest.mark.parametrize(
    "call",
    [
        lambda a: a.put(episode("01JEVENT000000000000000001"), "retention_expired", NOW),
        lambda a: a.get("acme", "01JEVENT000000000000000001"),
        lambda a: a.contains("acme", "01JEVENT000000000000000001"),
        lambda a: a.delete_events("acme", ["01JEVENT000000000000000001"]),
        lambda a: a.delete_actor("acme", "user-1"),
    ],
    ids=["put", "get", "contains", "delete_events", "delete_actor"],
)
def test_given_a_missing_bucket_when_the_archive_is_used_then_storage_error_without_episode_text(aws, call):
    archive = S3ColdArchive(aws.s3, "no-such-bucket", PSEUDONYMS, kms_key_id=aws.key_arn)
    with pytest.raises(StorageError) as raised:
        call(archive)
    assert "NoSuchBucket" in raised.value.message
    assert SUMMARY not in raised.value.message
    assert raised.value.status == 503


def test_given_a_prefix_without_a_trailing_slash_when_constructed_then_it_is_refused(aws):
    with pytest.raises(ValueError):
        S3ColdArchive(aws.s3, BUCKET, PSEUDONYMS, prefix="archive")


def test_given_a_custom_prefix_when_archived_then_records_and_pointers_live_under_it(aws):
    archive = S3ColdArchive(aws.s3, BUCKET, PSEUDONYMS, kms_key_id=aws.key_arn, prefix="cold/v1/")
    key = archive.put(episode("01JEVENT000000000000000001"), "retention_expired", NOW)
    assert key.startswith(f"cold/v1/acme/{USER_1}/")
    assert aws.object_keys() == {key, "cold/v1/_by_id/acme/01JEVENT000000000000000001"}
    assert json.loads(gzip.decompress(aws.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()))["reason"] == (
        "retention_expired"
    )
    assert archive.delete_actor("acme", "user-1") == 1 and aws.versions() == []
