"""Proof: verifying a tenant's audit chains (:mod:`episodic.domain.chain`).

Every chain of the tenant is read in the order it was stored and checked link by link, then
against its head -- the store's own, or checkpoints kept elsewhere (the AWS deployment's S3
bucket under Object Lock; a head an operator wrote down). An operator's verification is itself
audited (``audit.verified``: the outcome, never the records), which is how the console shows
the last one; the command line's verification of a stopped data dir only reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from episodic.application.ports import AuditQuery, Changes
from episodic.application.usecases.deps import Deps, require_operator
from episodic.domain.chain import Head, Unreadable, verify
from episodic.domain.model import (
    AuditAction,
    AuditRecord,
    AuditVerification,
    Caller,
    ChainBreakView,
    ChainHeadView,
)


class Proof:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps

    def verify(self, caller: Caller) -> AuditVerification:
        """The caller's tenant verified (operators only), the outcome audited."""
        require_operator(caller)
        found = self.verify_tenant(caller.tenant_id)
        detail: dict[str, Any] = {"verified": found.verified, "records": found.records}
        if found.first_break is not None:
            detail |= {"break": found.first_break.kind, "shard": found.first_break.shard,
                       "position": found.first_break.position}  # fmt: skip
        record = self.deps.audit(caller, AuditAction.AUDIT_VERIFIED, found.checked_at, None, None, **detail)
        self.deps.episodes.apply(Changes(tenant_id=caller.tenant_id, audit=[record]))
        return found

    def verify_tenant(self, tenant_id: str, checkpoints: Mapping[int, Head] | None = None) -> AuditVerification:
        """Every chain of ``tenant_id`` checked against ``checkpoints`` where given, else against
        the newest kept checkpoint (where the deployment keeps them), else against the heads the
        store keeps."""
        log = self.deps.audit_log
        kept = self.deps.checkpoints.latest(tenant_id) if checkpoints is None and self.deps.checkpoints else {}
        heads = dict(log.chain_heads(tenant_id)) | kept | dict(checkpoints or {})
        counted = _Counter()
        first_break = None
        for shard in range(log.chains):
            found = verify(counted.through(log.chain(tenant_id, shard)), shard, heads.get(shard))
            if found is not None:
                first_break = ChainBreakView(shard=found.shard, kind=found.kind, audit_id=found.audit_id,
                                             position=found.position, message=found.message)  # fmt: skip
                break
        return AuditVerification(
            tenant_id=tenant_id,
            verified=first_break is None,
            checked_at=self.deps.clock.now(),
            records=counted.records,
            chains=log.chains,
            heads=[ChainHeadView(shard=s, seq=h.seq, digest=h.digest) for s, h in sorted(heads.items())],
            first_break=first_break,
        )

    def checkpoint(self) -> str | None:
        """Keep every tenant's chain heads as they are now (the deployment's schedule calls it);
        where they were kept, or None when this deployment keeps no checkpoints."""
        if self.deps.checkpoints is None:
            return None
        log = self.deps.audit_log
        heads = {tenant: log.chain_heads(tenant) for tenant in log.audited_tenants()}
        return self.deps.checkpoints.put(heads, self.deps.clock.now())

    def last_verification(self, caller: Caller) -> AuditRecord | None:
        """The tenant's latest ``audit.verified`` record (operators only)."""
        require_operator(caller)
        query = AuditQuery(tenant_id=caller.tenant_id, action=AuditAction.AUDIT_VERIFIED, limit=1, newest_first=True)
        records, _ = self.deps.audit_log.audit(query)
        return records[0] if records else None


class _Counter:
    """Counts the records a verification reads, as it reads them."""

    def __init__(self) -> None:
        self.records = 0

    def through(self, records: Iterable[AuditRecord | Unreadable]) -> Iterator[AuditRecord | Unreadable]:
        for record in records:
            self.records += 1
            yield record
