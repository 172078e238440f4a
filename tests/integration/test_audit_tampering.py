"""Tampering with the stored audit log is found, on SQLite (the real file, edited as someone with
the file could) and on DynamoDB (under moto, edited with table-level writes): an edited, deleted,
inserted or swapped record, and the newest records removed with their head -- each named where
it happened. A clean log verifies; so does one whose episodes were erased."""

from __future__ import annotations

import json
import sqlite3

import pytest

from episodic.adapters.sqlite.store import SCHEMA_VERSION
from episodic.application.settings import Settings
from episodic.bootstrap.local import build_local_service
from episodic.domain.chain import Head
from episodic.domain.errors import StorageError
from tests.support.factories import AGENT, proposal


def fill(service, count: int = 6) -> None:
    written = [service.writes.remember(AGENT, proposal(summary=f"Deployed build {n} to staging")) for n in range(count)]
    service.erasure.erase(AGENT, written[0].event_id)


# ------------------------------------------------------------------ SQLite, the real file


@pytest.fixture
def data_dir(tmp_path, minilm, clock):
    settings = Settings(data_dir=tmp_path / "data")
    with build_local_service(settings, embedder=minilm, clock=clock) as service:
        fill(service)
        assert service.proof.verify_tenant("acme").verified
    return settings


def verify_file(settings, minilm, clock, checkpoint=None):
    with build_local_service(settings, embedder=minilm, clock=clock) as service:
        return service.proof.verify_tenant("acme", checkpoint)


def edit(settings, *statements) -> list:
    """Run ``statements`` on the database file with the append-only triggers lifted; the rows' seq and doc."""
    conn = sqlite3.connect(settings.data_dir / "episodic.db")
    conn.execute("DROP TRIGGER audit_no_update")
    conn.execute("DROP TRIGGER audit_no_delete")
    rows = conn.execute("SELECT seq, doc FROM audit WHERE tenant_id = 'acme' ORDER BY seq").fetchall()
    for statement in statements:
        conn.execute(*statement(rows))
    conn.commit()
    conn.close()
    return rows


def reasons_edited(rows):
    doc = json.loads(rows[2][1]) | {"reasons": ["nothing_to_see"]}
    return "UPDATE audit SET doc = ? WHERE seq = ?", (json.dumps(doc), rows[2][0])


def forged_copy(rows):
    """A record appended by hand: another record's content under a new id, its link copied."""
    doc = json.loads(rows[2][1]) | {"auditId": "01FORGED00000000000000000X"}
    return ("INSERT INTO audit (audit_id, tenant_id, at, action, event_id, doc) "
            "SELECT ?, tenant_id, at, action, event_id, ? FROM audit WHERE seq = ?",
            (doc["auditId"], json.dumps(doc), rows[2][0]))  # fmt: skip


def swapped_rows(rows):
    """The second and third records exchange places (each row's number kept, all else swapped)."""
    (second, _), (third, _) = rows[1], rows[2]
    return ("INSERT INTO audit SELECT CASE seq WHEN ? THEN ? ELSE ? END, audit_id, tenant_id, at, action, event_id, "
            "doc FROM swap", (second, third, second))  # fmt: skip


def set_aside(rows):
    return "CREATE TEMP TABLE swap AS SELECT * FROM audit WHERE seq IN (?, ?)", (rows[1][0], rows[2][0])


def take_out(rows):
    return "DELETE FROM audit WHERE seq IN (?, ?)", (rows[1][0], rows[2][0])


def test_given_a_clean_file_then_it_verifies_and_its_records_count(data_dir, minilm, clock):
    found = verify_file(data_dir, minilm, clock)
    assert found.verified and found.records == 7 and found.heads[0].seq == 7  # 6 writes and an erasure


@pytest.mark.parametrize(
    ("statement", "kind", "position"),
    [
        (reasons_edited, "altered", 3),
        (lambda rows: ("UPDATE audit SET action = 'episode.denied' WHERE seq = ?", (rows[4][0],)), "altered", 5),
        (lambda rows: ("DELETE FROM audit WHERE seq = ?", (rows[3][0],)), "removed", 4),
        (forged_copy, "inserted", 8),
        ((set_aside, take_out, swapped_rows), "reordered", 2),
    ],
)  # fmt: skip
def test_given_the_file_tampered_with_when_verified_then_the_first_break_is_named(
    data_dir, minilm, clock, statement, kind, position
):
    edit(data_dir, *(statement if isinstance(statement, tuple) else (statement,)))
    found = verify_file(data_dir, minilm, clock)
    assert not found.verified and (found.first_break.kind, found.first_break.position) == (kind, position)


def test_given_the_newest_records_and_head_removed_when_checked_against_a_kept_head_then_it_is_truncated(
    data_dir, minilm, clock
):
    kept = verify_file(data_dir, minilm, clock).heads[0]
    edit(
        data_dir,
        lambda rows: ("DELETE FROM audit WHERE seq >= ?", (rows[5][0],)),
        lambda rows: ("UPDATE audit_heads SET seq = 5, digest = ?", (json.loads(rows[4][1])["link"]["digest"],)),
    )
    assert verify_file(data_dir, minilm, clock).verified  # the rewound file agrees with itself
    found = verify_file(data_dir, minilm, clock, {0: Head(kept.seq, kept.digest)})
    assert not found.verified and found.first_break.kind == "truncated"


def test_given_a_file_of_the_previous_schema_when_opened_then_its_records_are_chained_once(data_dir, minilm, clock):
    conn = sqlite3.connect(data_dir.data_dir / "episodic.db")
    conn.execute("DROP TRIGGER audit_no_update")
    for seq, doc in conn.execute("SELECT seq, doc FROM audit").fetchall():
        unlinked = {k: v for k, v in json.loads(doc).items() if k != "link"}
        conn.execute("UPDATE audit SET doc = ? WHERE seq = ?", (json.dumps(unlinked), seq))
    conn.execute("CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit BEGIN SELECT RAISE(ABORT, 'no'); END")
    conn.execute("DELETE FROM audit_heads")
    conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()

    found = verify_file(data_dir, minilm, clock)
    assert found.verified and found.records == 7
    conn = sqlite3.connect(data_dir.data_dir / "episodic.db")
    with pytest.raises(sqlite3.IntegrityError, match="no"):  # the trigger is back as it was
        conn.execute("UPDATE audit SET action = 'x'")
    assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (str(SCHEMA_VERSION),)


def test_given_every_record_of_a_tenant_removed_when_the_whole_store_is_verified_then_that_tenant_is_found_cut(
    data_dir, minilm, clock
):
    """Its head stays: the tenant is still among those a whole-store verification reads."""
    edit(data_dir, lambda rows: ("DELETE FROM audit WHERE tenant_id = 'acme'", ()))
    with build_local_service(data_dir, embedder=minilm, clock=clock) as service:
        assert "acme" in service.deps.audit_log.audited_tenants()
        found = service.proof.verify_tenant("acme")
    assert not found.verified and found.first_break.kind == "truncated"


def test_given_a_chained_file_edited_to_look_older_when_opened_then_it_is_refused_and_not_chained_again(
    data_dir, minilm, clock
):
    """Re-linking a chained file would hide a record removed from it: saying schema 2 does not get
    the chain rebuilt. The removal stays there to be found."""
    edit(data_dir, lambda rows: ("DELETE FROM audit WHERE seq = ?", (rows[2][0],)))
    conn = sqlite3.connect(data_dir.data_dir / "episodic.db")
    conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()

    with pytest.raises(StorageError, match="chained already"):
        verify_file(data_dir, minilm, clock)
    conn = sqlite3.connect(data_dir.data_dir / "episodic.db")
    assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("2",)  # left as it was
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
    conn.commit()
    conn.close()
    found = verify_file(data_dir, minilm, clock)
    assert not found.verified and found.first_break.kind == "removed"


# ------------------------------------------------------------------ DynamoDB, under moto


@pytest.fixture
def aws(aws_resources, minilm, clock):
    from episodic.bootstrap.aws import build_aws_service

    service = build_aws_service(
        aws_resources["settings"], dynamodb=aws_resources["dynamodb"], s3=aws_resources["s3"], embedder=minilm,
        clock=clock,
    )  # fmt: skip
    fill(service, 12)
    assert service.proof.verify_tenant("acme").verified
    return service, aws_resources["dynamodb"], aws_resources["settings"].audit_table


def items_of(dynamodb, table, shard):
    """The audit items of one of acme's chains, in stored (audit id) order."""
    items = dynamodb.query(TableName=table, KeyConditionExpression="pk = :pk",
                           ExpressionAttributeValues={":pk": {"S": "acme"}})["Items"]  # fmt: skip
    return [i for i in items if int(i["chain"]["N"]) == shard]


def busiest(service) -> int:
    return max(service.proof.verify_tenant("acme").heads, key=lambda h: h.seq).shard


@pytest.mark.parametrize("kind", ["altered", "removed", "inserted", "reordered"])
def test_given_the_audit_table_tampered_with_when_verified_then_the_first_break_is_named(aws, kind):
    service, dynamodb, table = aws
    shard = busiest(service)
    items = items_of(dynamodb, table, shard)
    assert len(items) >= 3
    if kind == "altered":
        rec = json.loads(items[1]["rec"]["S"]) | {"principalId": "operator:acme"}
        dynamodb.put_item(TableName=table, Item={**items[1], "rec": {"S": json.dumps(rec)}})
    elif kind == "removed":
        dynamodb.delete_item(TableName=table, Key={"pk": items[1]["pk"], "sk": items[1]["sk"]})
    elif kind == "inserted":
        copy = {**items[1], "sk": {"S": items[1]["sk"]["S"][:-1] + "Z"}}  # sorts after its original
        rec = json.loads(copy["rec"]["S"]) | {"auditId": copy["sk"]["S"]}
        dynamodb.put_item(TableName=table, Item={**copy, "rec": {"S": json.dumps(rec)}})
    else:
        first, second = json.loads(items[0]["rec"]["S"]), json.loads(items[1]["rec"]["S"])
        first["link"], second["link"] = second["link"], first["link"]
        dynamodb.put_item(TableName=table, Item={**items[0], "rec": {"S": json.dumps(first)}})
        dynamodb.put_item(TableName=table, Item={**items[1], "rec": {"S": json.dumps(second)}})

    found = service.proof.verify_tenant("acme")
    assert not found.verified and found.first_break.shard == shard
    assert found.first_break.kind == kind or (kind, found.first_break.kind) == ("reordered", "altered")
    if kind == "inserted":  # found where the copy sorts, claiming its original's position
        assert found.first_break.audit_id == copy["sk"]["S"] and "claims position 2" in found.first_break.message
    else:
        assert found.first_break.position == (1 if kind == "reordered" else 2)


def test_given_another_writer_appending_first_when_a_write_commits_then_it_is_planned_again_after_it(aws, monkeypatch):
    """The race, made certain: this write reads the chain's head, another write appends before it
    commits (the stale head it read is served once more); its head condition fails, nothing of it
    is written, and it is planned again after the new head."""
    from episodic.adapters.dynamodb import audit_chain

    service, _, _ = aws
    real_read_head, stale = audit_chain.read_head, {}

    def read_head_once_stale(db, tenant, shard):
        if shard in stale:
            return stale.pop(shard)
        head = real_read_head(db, tenant, shard)
        if not stale.get("armed"):
            stale["armed"] = True
            stale[shard] = head  # the next read of this chain sees the head before this write's
        return head

    monkeypatch.setattr(audit_chain, "read_head", read_head_once_stale)
    first = service.writes.remember(AGENT, proposal(summary="Deployed build 100 to staging"))
    monkeypatch.setattr(audit_chain, "read_head", real_read_head)
    found = service.proof.verify_tenant("acme")
    assert first.event_id and found.verified and found.records == 14
