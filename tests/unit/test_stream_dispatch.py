"""Stream dispatch logic on recorded stream events, with test doubles for the ports.

The real S3/DynamoDB path is in tests/integration/test_stream_processor.py; the OpenSearch
projection is not built yet, so what it must receive is pinned here with a recording double.
"""

import json
from pathlib import Path

import pytest
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from episodic.adapters.dynamodb.images import StreamImages
from episodic.application.usecases.expiry import Expiry
from episodic.domain.errors import ConflictError
from episodic.entrypoints.dynamodb_stream.processor import PoisonRecordError, TimelineStreamProcessor, is_ttl_removal
from tests.support.factories import PSEUDONYMS

EVENTS = Path(__file__).parents[2] / "events" / "streams"


def record(name: str, index: int = 0) -> DynamoDBRecord:
    return DynamoDBRecord(json.loads((EVENTS / name).read_text())["Records"][index])


class RecordingProjectionTestDouble:
    def __init__(self):
        self.upserts, self.removals = [], []

    def upsert(self, episode, vector, embedder=None):
        self.upserts.append((episode, vector))

    def remove(self, tenant_id, event_id):
        self.removals.append((tenant_id, event_id))


class RecordingArchiveTestDouble:
    def __init__(self):
        self.puts = []

    def put(self, episode, reason, at):
        self.puts.append((episode.event_id, reason, at))
        return f"archive/{episode.tenant_id}/{episode.event_id}.json.gz"


class AuditOnlyStoreTestDouble:
    """Accepts audit records once per id, like the create-once audit table."""

    def __init__(self):
        self.audit = {}

    def apply(self, changes):
        for rec in changes.audit:
            if rec.audit_id in self.audit:
                raise ConflictError("exists")
            self.audit[rec.audit_id] = rec


@pytest.fixture
def parts():
    projection, archive, store = (
        RecordingProjectionTestDouble(),
        RecordingArchiveTestDouble(),
        AuditOnlyStoreTestDouble(),
    )
    return (
        projection,
        archive,
        store,
        TimelineStreamProcessor(
            images=StreamImages(), expiry=Expiry(store, archive, PSEUDONYMS), projection=projection
        ),
    )


def test_given_an_insert_when_processed_then_the_episode_and_its_vector_are_projected(parts):
    projection, archive, store, processor = parts
    assert processor.process(record("insert.json")) == "indexed"
    episode, vector = projection.upserts[0]
    assert episode.event_id == "01KAZ3Q7J9X2B8M4T6V0W1Y3C5" and episode.status.value == "active"
    assert len(vector) == 384 and vector[0] == pytest.approx(1.0)
    assert archive.puts == [] and store.audit == {}


def test_given_a_status_change_when_processed_then_the_projection_sees_the_new_status(parts):
    projection, _, _, processor = parts
    processor.process(record("modify.json"))
    assert projection.upserts[0][0].status.value == "superseded"


def test_given_a_user_delete_when_processed_then_it_is_unindexed_but_not_archived(parts):
    projection, archive, store, processor = parts
    assert not is_ttl_removal(record("user_remove.json"))
    assert processor.process(record("user_remove.json")) == "unindexed"
    assert projection.removals == [("acme", "01KAZ3Q7J9X2B8M4T6V0W1Y3C5")]
    assert archive.puts == [] and store.audit == {}


def test_given_a_ttl_removal_when_processed_twice_then_it_is_archived_and_audited_once(parts):
    projection, archive, store, processor = parts
    ttl = record("ttl_remove.json")
    assert is_ttl_removal(ttl)
    assert processor.process(ttl) == "archived"
    assert processor.process(ttl) == "already_archived"
    assert [put[:2] for put in archive.puts] == [("01KAZ3Q7J9X2B8M4T6V0W1Y3C5", "retention_expired")] * 2
    assert len(store.audit) == 1
    audit = next(iter(store.audit.values()))
    assert audit.action == "episode.expired" and audit.detail["reason"] == "retention_expired"
    assert audit.detail["archiveKey"].endswith("01KAZ3Q7J9X2B8M4T6V0W1Y3C5.json.gz")
    assert "Portuguese" not in audit.model_dump_json()
    assert projection.removals == [("acme", "01KAZ3Q7J9X2B8M4T6V0W1Y3C5")] * 2


def test_given_a_poison_record_when_processed_then_it_raises_a_poison_error(parts):
    *_, processor = parts
    with pytest.raises(PoisonRecordError):
        processor.process(record("poison.json"))
