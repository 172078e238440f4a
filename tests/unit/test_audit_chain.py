"""The audit chain's rules (episodic.domain.chain): a record's digest covers its content and its
predecessor, and verification names the first record altered, removed, inserted or reordered."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from episodic.domain.chain import GENESIS, Head, Unreadable, canonical, digest, linked, read_stored, verify
from episodic.domain.model import AuditAction, AuditRecord

START = datetime(2026, 11, 1, tzinfo=UTC)


def record(n: int, **changes) -> AuditRecord:
    return AuditRecord(
        audit_id=f"01AUDIT{n:019d}", tenant_id="acme", at=START + timedelta(minutes=n),
        action=AuditAction.EPISODE_WRITTEN, principal_id="agent:acme", event_id=f"E{n}", **changes,
    )  # fmt: skip


def chain(count: int) -> list[AuditRecord]:
    records, head = [], None
    for n in range(1, count + 1):
        linked_one = linked(record(n), head)
        records.append(linked_one)
        head = Head(linked_one.link.seq, linked_one.link.digest)
    return records


def test_given_a_chain_when_built_then_each_link_follows_the_one_before():
    records = chain(3)
    assert [r.link.seq for r in records] == [1, 2, 3]
    assert records[0].link.prev == GENESIS
    assert [r.link.prev for r in records[1:]] == [r.link.digest for r in records[:-1]]
    assert verify(records) is None
    assert verify(records, head=Head(3, records[-1].link.digest)) is None


def test_given_the_same_record_then_its_canonical_bytes_and_digest_never_change():
    assert canonical(record(1)) == canonical(record(1).model_copy())
    assert digest(record(1), GENESIS) == digest(record(1), GENESIS)
    assert digest(record(1), GENESIS) != digest(record(1, reasons=["x"]), GENESIS)  # every field counts
    assert digest(record(1), GENESIS) != digest(record(1), "1" * 64)  # and the predecessor
    assert b'"link"' not in canonical(chain(1)[0])  # but not its own link


@pytest.mark.parametrize(
    ("tamper", "kind", "position"),
    [
        (lambda rs: [*rs[:1], rs[1].model_copy(update={"reasons": ["edited"]}), *rs[2:]], "altered", 2),
        (lambda rs: rs[:1] + rs[2:], "removed", 2),
        (lambda rs: [*rs[:2], rs[1], *rs[2:]], "inserted", 3),
        (lambda rs: [*rs[:1], rs[2], rs[1], *rs[3:]], "reordered", 2),
        (lambda rs: [*rs[:2], record(9), *rs[2:]], "unchained", 3),
        (lambda rs: [*rs[:2], Unreadable("01AUDITX", "its content is not an audit record any more"), *rs[2:]],
         "altered", 3),
    ],
)  # fmt: skip
def test_given_a_tampered_chain_when_verified_then_the_first_break_is_named(tamper, kind, position):
    records = chain(5)
    found = verify(tamper(records))
    assert found is not None and (found.kind, found.position) == (kind, position)


def test_given_an_edited_record_with_its_digest_recomputed_then_the_next_link_breaks():
    records = chain(4)
    edited = records[1].model_copy(update={"reasons": ["edited"]})
    edited = edited.model_copy(
        update={"link": edited.link.model_copy(update={"digest": digest(edited, edited.link.prev)})}
    )
    found = verify([records[0], edited, *records[2:]])
    assert found is not None and (found.kind, found.audit_id) == ("inserted", records[2].audit_id)


def test_given_the_newest_records_removed_when_checked_against_a_checkpoint_then_it_is_truncated():
    records = chain(5)
    assert verify(records[:3]) is None  # a chain alone cannot tell
    found = verify(records[:3], head=Head(5, records[4].link.digest))
    assert found is not None and found.kind == "truncated" and found.audit_id is None


def test_given_a_stored_document_when_read_back_then_columns_that_disagree_make_it_unreadable():
    stored = chain(1)[0]
    doc = stored.model_dump_json(by_alias=True)
    assert read_stored(doc, {"auditId": stored.audit_id, "action": "episode.written"}) == stored
    assert isinstance(read_stored(doc, {"auditId": stored.audit_id, "action": "episode.erased"}), Unreadable)
    assert isinstance(read_stored("{not json", {"auditId": stored.audit_id}), Unreadable)
