"""The audit log as a hash chain: what makes a record's digest, and how a chain is verified.

Every audit record of a tenant carries a link (:class:`~episodic.domain.model.AuditLink`): its
position in its chain, the digest of the record before it, and its own digest -- SHA-256 over
that previous digest and the record's canonical content (every field but the link, as sorted
compact JSON). Changing any field of a record changes its digest; removing, inserting or
swapping records breaks a position or a previous-digest link. A tenant may have several chains
(shards) where one would make every write of the tenant wait for the last: each record is in
exactly one, and each is verified on its own.

What a chain proves, and what it does not: that the records it holds are the ones appended, in
the order appended, unaltered -- up to the newest record the verifier knows of. Removing the
newest records and rewinding the head with them is invisible to a chain alone; it takes a head
kept where the writer cannot rewrite it (the AWS deployment writes heads to an S3 bucket under
Object Lock; :func:`verify` checks the chain against any head it is given).

Audit records never hold erasable content (ids, codes and hashes only), so erasure never has to
remove one, and a chain verifies the same before and after any erasure or expiry.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from pydantic import ValidationError

from episodic.domain.model import AuditLink, AuditRecord

GENESIS = "0" * 64
"""The previous digest of a chain's first record."""

Break = Literal["altered", "removed", "inserted", "reordered", "unchained", "truncated"]


def canonical(record: AuditRecord) -> bytes:
    """The record's content as the digest covers it: every field but its link, as JSON with sorted
    keys and no spaces, so the same record always gives the same bytes."""
    content = record.model_dump(mode="json", by_alias=True, exclude={"link"})
    return json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def digest(record: AuditRecord, prev: str) -> str:
    return hashlib.sha256(prev.encode() + b"\n" + canonical(record)).hexdigest()


def linked(record: AuditRecord, head: Head | None, shard: int = 0) -> AuditRecord:
    """``record`` appended after ``head`` (the chain's newest link, None for an empty chain)."""
    seq, prev = (head.seq + 1, head.digest) if head is not None else (1, GENESIS)
    return record.model_copy(update={"link": AuditLink(shard=shard, seq=seq, prev=prev, digest=digest(record, prev))})


@dataclass(frozen=True)
class Head:
    """A chain's newest link: its position and digest."""

    seq: int
    digest: str


@dataclass(frozen=True)
class Unreadable:
    """A stored row that is no longer the audit record it was appended as (its content does not
    read back as one, or what the store indexes disagrees with it): altered, whatever its link."""

    audit_id: str
    why: str


def read_stored(doc: str | bytes, indexed: Mapping[str, object] | None = None) -> AuditRecord | Unreadable:
    """A stored record read back: the record, or :class:`Unreadable` when its content no longer
    parses as one or ``indexed`` (what the store keeps beside it to query by: ``auditId``,
    ``tenantId``, ``action``, ``eventId``...) disagrees with it."""
    try:
        record = AuditRecord.model_validate_json(doc)
    except ValidationError:
        return Unreadable(str((indexed or {}).get("auditId", "?")), "its content is not an audit record any more")
    wire = record.model_dump(mode="json", by_alias=True)
    differs = sorted(k for k, v in (indexed or {}).items() if wire.get(k) != v)
    if differs:
        return Unreadable(
            record.audit_id, f"what is indexed of it ({', '.join(differs)}) no longer matches its content"
        )
    return record


@dataclass(frozen=True)
class ChainBreak:
    """The first place a chain does not verify: the record there (None past the last) and why."""

    shard: int
    kind: Break
    audit_id: str | None
    position: int
    """The chain position where the break was found (1 for the first record)."""
    message: str


def verify(records: Iterable[AuditRecord | Unreadable], shard: int = 0, head: Head | None = None) -> ChainBreak | None:
    """The first break in one chain, given its records in the order they were stored (appended),
    or None when it verifies; ``head`` (a checkpoint kept elsewhere) must then be one of its links."""
    expected, prev, at_head = 1, GENESIS, None
    stream = iter(records)
    upcoming = next(stream, None)
    while upcoming is not None:
        record, upcoming = upcoming, next(stream, None)
        if isinstance(record, Unreadable):
            return ChainBreak(shard, "altered", record.audit_id, expected, f"record {record.audit_id}: {record.why}")
        found = _break_at(record, expected, prev, upcoming)
        if found is not None:
            kind, message = found
            return ChainBreak(shard, kind, record.audit_id, expected, message)
        link = record.link
        assert link is not None  # _break_at reports a record without one
        if head is not None and link.seq == head.seq:
            at_head = link.digest
        expected, prev = expected + 1, link.digest
    if head is not None and at_head != head.digest:
        message = (
            f"the chain ends at position {expected - 1}; the checkpoint names position {head.seq}, digest {head.digest}"
        )
        return ChainBreak(shard, "truncated", None, head.seq, message)
    return None


def _break_at(
    record: AuditRecord, expected: int, prev: str, upcoming: AuditRecord | Unreadable | None
) -> tuple[Break, str] | None:
    """Why ``record``, stored at chain position ``expected`` after a record of digest ``prev``,
    breaks the chain (``upcoming`` is the record stored after it), or None."""
    link, here = record.link, f"record {record.audit_id}"
    if link is None:
        return "unchained", f"{here} has no chain link"
    if link.seq < expected:
        return "inserted", f"{here} claims position {link.seq}, which an earlier record holds"
    if link.seq > expected:
        swapped = isinstance(upcoming, AuditRecord) and upcoming.link is not None and upcoming.link.seq == expected
        if swapped:
            return "reordered", f"{here} (position {link.seq}) is stored before the record at position {expected}"
        return "removed", f"the records at positions {expected} to {link.seq - 1} are missing before {here}"
    if link.prev != prev:
        return "inserted", f"{here} does not follow the record stored before it (its previous digest differs)"
    if digest(record, link.prev) != link.digest:
        return "altered", f"{here} was altered after it was appended"
    return None
