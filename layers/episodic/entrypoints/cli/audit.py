"""``episodic audit verify`` and ``episodic audit heads``: the audit chains of a data dir, or
(``--backend aws``) of a deployment's tables, checked there against the newest checkpoint in its
Object Lock bucket too.

``verify`` reads every chain of every tenant (or of ``--tenant``) and exits 0 when all verify,
1 naming the first record altered, removed, inserted or reordered. It only reads: verifying a
stopped server's data dir changes nothing in it. ``heads`` prints each chain's newest link, to
keep somewhere the data dir's owner cannot rewrite; ``verify --checkpoint`` then checks the
chain still holds that link (a chain alone cannot tell that its newest records were removed
together with its head).
"""

from __future__ import annotations

import argparse
import sys

from episodic.application.service import MemoryService
from episodic.domain.chain import Head
from episodic.domain.model import AuditVerification


def verify(args: argparse.Namespace) -> int:
    from episodic.entrypoints.cli.output import table

    try:
        checkpoints = _checkpoints(args.checkpoint or [])
    except ValueError as exc:
        print(f"episodic audit verify: {exc}", file=sys.stderr)
        return 2
    with _service(args) as service:
        tenants = [args.tenant] if args.tenant else service.deps.audit_log.audited_tenants()
        results = [service.proof.verify_tenant(t, checkpoints.get(t)) for t in tenants]
    rows = [(r.tenant_id, r.records, "verified" if r.verified else "BROKEN", _where(r)) for r in results]
    table(f"{len(results)} tenant(s) checked", ("tenant", "records", "result", "first break"), rows)
    for result in results:
        if result.first_break is not None:
            print(f"{result.tenant_id}: {result.first_break.message}", file=sys.stderr)
    return 0 if all(r.verified for r in results) else 1


def heads(args: argparse.Namespace) -> int:
    with _service(args) as service:
        log = service.deps.audit_log
        tenants = [args.tenant] if args.tenant else log.audited_tenants()
        for tenant in tenants:
            for shard, head in sorted(log.chain_heads(tenant).items()):
                print(f"{tenant}:{shard}:{head.seq}:{head.digest}")
    return 0


def _service(args: argparse.Namespace) -> MemoryService:
    """The local data dir's service, or (``--backend aws``) the deployment's, from ``EPISODIC_*``
    settings as its functions read them: the tables, and the checkpoint bucket verification
    checks the chains against."""
    if getattr(args, "backend", "local") != "aws":
        from episodic.entrypoints.cli.main import local_service

        return local_service(args)
    from episodic.application.settings import Settings
    from episodic.bootstrap.aws import service_from_settings

    return service_from_settings(Settings.from_env().model_copy(update={"backend": "aws"}))


def _where(result: AuditVerification) -> str:
    found = result.first_break
    if found is None:
        return ""
    return f"{found.kind} at chain {found.shard}, position {found.position}" + (
        f" (record {found.audit_id})" if found.audit_id else ""
    )


def _checkpoints(values: list[str]) -> dict[str, dict[int, Head]]:
    """``TENANT:SHARD:SEQ:DIGEST`` (as ``heads`` prints them) -> {tenant: {shard: head}}."""
    found: dict[str, dict[int, Head]] = {}
    for value in values:
        parts = value.split(":")
        if len(parts) != 4 or not parts[1].isdigit() or not parts[2].isdigit() or len(parts[3]) != 64:
            raise ValueError(
                f"--checkpoint {value!r} is not TENANT:SHARD:SEQ:DIGEST (as `episodic audit heads` prints)"
            )
        found.setdefault(parts[0], {})[int(parts[1])] = Head(int(parts[2]), parts[3])
    return found
