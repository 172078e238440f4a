"""The ``episodic`` command: what each subcommand does (its options are in
:mod:`episodic.entrypoints.cli.parser`; ``serve`` is :mod:`episodic.entrypoints.cli.serve`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from episodic.application.service import MemoryService


class MissingDataDirError(SystemExit):
    """A maintenance command pointed at a data dir that does not exist."""


def local_service(args: argparse.Namespace) -> MemoryService:
    """The local service over an existing data dir, which is named first: maintenance commands
    never create one (run from the wrong folder, they would work on an empty store)."""
    from episodic.application.settings import Settings
    from episodic.bootstrap.local import build_local_service

    settings = Settings.from_env()
    if args.data_dir:
        settings = settings.model_copy(update={"data_dir": Path(args.data_dir)})
    data_dir = settings.data_dir.expanduser().resolve()
    if not (data_dir / "episodic.db").exists():
        print(
            f"episodic: no data dir at {data_dir} (no episodic.db there); pass --data-dir or set EPISODIC_DATA_DIR "
            "to the folder `episodic serve` uses",
            file=sys.stderr,
        )
        raise MissingDataDirError(2)
    print(f"data dir: {data_dir}", file=sys.stderr)
    return build_local_service(settings)


def _summarize(args: argparse.Namespace) -> int:
    from episodic.entrypoints.cli.output import progress, table

    with local_service(args) as service:
        minimum = service.deps.settings.summary_min_events
        with progress(f"summarising actors with more than {minimum} events in the last 24 hours"):
            outcomes = service.summarisation.summarise()
    rows = [
        (
            o.tenant_id,
            o.actor_id,
            o.events,
            "FAILED" if o.failed else ("kept" if o.reasons == ["already_digested"] else o.decision),
            o.error or o.event_id or " ".join(o.reasons or []),
        )
        for o in outcomes
    ]
    table(f"{len(outcomes)} actor(s) summarised", ("tenant", "actor", "events", "digest", "episode / why"), rows)
    return 1 if any(o.failed for o in outcomes) else 0


def _forget(args: argparse.Namespace) -> int:
    from episodic.entrypoints.cli.output import progress, table

    verb = "would archive" if args.dry_run else "archived"
    archived: list[str] = []
    examined, cursor = 0, None
    with local_service(args) as service, progress("examining active episodes") as step:
        while True:
            report = service.archival.forget(dry_run=args.dry_run, cursor=cursor)
            examined += report.examined
            archived += report.archived
            step.set(examined)
            cursor = report.next_cursor
            if cursor is None:
                break
    table(f"{verb} {len(archived)} of {examined} episode(s)", ("episode",), [(e,) for e in archived])
    return 0


def _reembed(args: argparse.Namespace) -> int:
    from episodic.entrypoints.cli.output import progress

    with local_service(args) as service, progress(f"re-embedding with {service.deps.embedder.name}") as step:
        done = service.admin.reembed(batch_size=args.batch_size, progress=step.set)
    print(f"done: {done} episode(s) re-embedded")
    return 0


def _eval(args: argparse.Namespace) -> int:
    import json

    from episodic.evals.governance import check_thresholds

    suite = Path(args.suite)
    if not (suite / "retrieval").is_dir():
        print(f"episodic eval: no labelled suite at {suite} (expected {suite}/retrieval/)", file=sys.stderr)
        return 2
    metrics = _measure(suite)
    thresholds_path = Path(args.thresholds or suite / "thresholds.json")
    thresholds = json.loads(thresholds_path.read_text()) if thresholds_path.exists() else {}
    failures = check_thresholds(metrics, thresholds)
    rows = []
    for name, value in metrics.items():
        if not name.startswith("_"):
            bound = thresholds.get(name, {})
            limit = f"≥ {bound['min']}" if "min" in bound else f"≤ {bound['max']}" if "max" in bound else ""
            verdict = "REGRESSION" if any(f.startswith(name) for f in failures) else "ok" if limit else ""
            rows.append((name, float(value), limit, verdict))
    from episodic.entrypoints.cli.output import table

    table("evaluation", ("metric", "value", "threshold", "check"), rows)
    report = {"metrics": metrics, "thresholds": thresholds, "regressions": failures}
    Path(args.out).write_text(json.dumps(report, indent=2, default=str))
    print(f"report written to {args.out}")
    for failure in failures:
        print(f"REGRESSION {failure}")
    return 1 if failures else 0


def _measure(suite: Path) -> dict[str, Any]:
    """The suite's metrics on a fresh local service, then every labelled conversation set's (the
    English test split also as one long conversation)."""
    import tempfile

    from episodic.application.settings import Settings
    from episodic.bootstrap.local import build_local_service, quiet_notifier
    from episodic.entrypoints.cli.output import progress
    from episodic.evals.governance import SUITE_NOW, ManualClock, run_suite

    clock = ManualClock(SUITE_NOW)
    with tempfile.TemporaryDirectory(prefix="episodic-eval-") as tmp:
        with progress("evaluation suite against a fresh local service (real model)"):
            service = build_local_service(Settings(data_dir=Path(tmp)), clock=clock, notifier=quiet_notifier())
            metrics = run_suite(service, clock, suite)
            service.close()
        from episodic.evals.conversations import (
            EVALUATED_SETS,
            LONG_TEST_SETS,
            conversation_metrics,
            local_services,
            recall_gaps,
        )

        for prefix, where in EVALUATED_SETS.items():
            folder = suite / where
            if not folder.is_dir():
                continue
            merge = prefix in LONG_TEST_SETS
            total = 1 if merge else len(list(folder.glob("*.json")))
            what = f"{where} as one long conversation" if merge else where
            with progress(f"labelled set {what} (never tuned on)", total=total) as step:
                build = local_services(Path(tmp), service.deps.embedder)
                metrics |= conversation_metrics(build, folder, lambda _done: step.advance(), prefix, merge)
        metrics |= recall_gaps(metrics)
    return metrics


def _demo(args: argparse.Namespace) -> int:
    from episodic.entrypoints.cli.demo import run_demo

    return run_demo(Path(args.data_dir) if args.data_dir else None)


def _tokens(args: argparse.Namespace) -> int:
    """The local bearer tokens: list them, create one, rotate one (the server reads the file
    when it starts; EPISODIC_TOKENS, when set, overrides the file); or a test JWT for AWS."""
    if args.action == "jwt":
        return _jwt(args)
    from episodic.application.settings import Settings
    from episodic.entrypoints.server.tokens import create_token, listed_tokens, rotate_token, token_file

    data_dir = Path(args.data_dir) if args.data_dir else Settings.from_env().data_dir.expanduser()
    print(f"tokens file: {token_file(data_dir)}", file=sys.stderr)
    try:
        if args.action == "create":
            print(create_token(data_dir, args.tenant, args.role, args.actor))
        elif args.action == "rotate":
            print(rotate_token(data_dir, args.token))
        else:
            rows = listed_tokens(data_dir)
            print(
                "\n".join(
                    f"{tenant:<20} {role:<9} {token}  {'actors: ' + ','.join(actors) if actors else 'tenant-wide'}"
                    for token, tenant, role, actors in rows
                )
                or "no tokens yet"
            )
    except ValueError as exc:
        print(f"episodic tokens: {exc}", file=sys.stderr)
        return 2
    if args.action != "list":
        print("restart `episodic serve` for the change to take effect", file=sys.stderr)
    return 0


def _jwt(args: argparse.Namespace) -> int:
    """A short-lived HS256 JWT for the deployed API's authorizer, signed with the stack's secret."""
    import os

    from episodic.entrypoints.cli.jwt_tokens import TokenClaims, mint, secret_from_aws, stage_auth

    auth = stage_auth(Path("cdk.json"))
    issuer, audience = args.issuer or auth.get("issuer"), args.audience or auth.get("audience")
    if not issuer or not audience:
        print("episodic tokens jwt: give --issuer and --audience (or run it where cdk.json is)", file=sys.stderr)
        return 2
    try:
        secret = os.environ.get("EPISODIC_JWT_SECRET") or (secret_from_aws(args.secret_id) if args.secret_id else "")
        if not secret:
            print("episodic tokens jwt: give --secret-id (the JwtSecretArn stack output) or EPISODIC_JWT_SECRET",
                  file=sys.stderr)  # fmt: skip
            return 2
        subject = args.subject or ":".join(
            ["cli", args.tenant, args.role, *([",".join(args.actor)] if args.actor else [])]
        )
        claims = TokenClaims(args.tenant, args.role, subject, issuer, audience, args.hours,
                             auth.get("tenantClaim", "tenantId"), auth.get("roleClaim", "role"),
                             tuple(args.actor or ()), auth.get("actorsClaim", "actors"))  # fmt: skip
        print(mint(claims, secret))
    except ValueError as exc:
        print(f"episodic tokens jwt: {exc}", file=sys.stderr)
        return 2
    print(
        f"valid {args.hours:g} h for tenant {args.tenant} as {args.role}, principal {subject} "
        f"(iss {issuer}, aud {audience})",
        file=sys.stderr,
    )
    return 0


def _mcp(args: argparse.Namespace) -> int:
    """The memory as MCP tools, over the SDK: to ``--url`` (or EPISODIC_URL, or the local
    server), over stdio with EPISODIC_TOKEN for ``--actor``, over HTTP with each request's own
    bearer token. Only stderr is ours: on stdio, stdout carries the protocol."""
    import os

    try:
        from episodic.entrypoints.mcp.server import NoActorError, serve
    except ImportError as exc:
        print(
            f"episodic mcp: the MCP SDK is not installed ({exc}): pip install 'episodic-memory[mcp]'", file=sys.stderr
        )
        return 2
    if not args.http and not os.environ.get("EPISODIC_TOKEN"):
        print("episodic mcp: EPISODIC_TOKEN is not set; the service will refuse every call", file=sys.stderr)
    try:
        serve(args.actor, args.url, http=args.http, host=args.host, port=args.port)
    except NoActorError as exc:
        print(f"episodic mcp: {exc}", file=sys.stderr)
        return 2
    return 0


def _version() -> str:
    """The installed package's version and the write policy's, which decisions are stamped with."""
    from importlib.metadata import PackageNotFoundError, version

    from episodic.domain.policy import POLICY_VERSION

    try:
        package = version("episodic-memory")
    except PackageNotFoundError:  # run from a source tree that was never installed
        package = "unknown"
    return f"{package} (policy {POLICY_VERSION})"


def _serve_command(args: argparse.Namespace) -> int:
    from episodic.entrypoints.cli.serve import serve

    return serve(args)


def _audit_verify(args: argparse.Namespace) -> int:
    from episodic.entrypoints.cli.audit import verify

    return verify(args)


def _audit_heads(args: argparse.Namespace) -> int:
    from episodic.entrypoints.cli.audit import heads

    return heads(args)


HANDLERS = {
    "audit verify": _audit_verify,
    "audit heads": _audit_heads,
    "serve": _serve_command,
    "mcp": _mcp,
    "tokens": _tokens,
    "summarize": _summarize,
    "forget": _forget,
    "reembed": _reembed,
    "eval": _eval,
    "demo": _demo,
}


def main(argv: list[str] | None = None) -> int:
    from episodic.entrypoints.cli.parser import build_parser

    parser = build_parser(_version(), HANDLERS)
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["bench"]:
        from benchmarks.run import main as bench_main

        _quiet_logs(0)
        return bench_main(argv[1:])
    args = parser.parse_args(argv)
    _quiet_logs(args.verbose)
    return int(args.func(args))


def _quiet_logs(verbosity: int) -> None:
    """Logs to stderr at WARNING (``-v`` for more), so stdout holds only what the command says."""
    import os

    from episodic.logs import cli_level, to_stderr

    to_stderr()
    os.environ["POWERTOOLS_LOG_LEVEL"] = cli_level(verbosity, dict(os.environ))
    if not verbosity:  # the model loader's own bars ("Loading weights") only when asked for
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


if __name__ == "__main__":
    raise SystemExit(main())
