"""The ``episodic`` command: ``serve`` runs the local service, ``demo`` shows it working."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

if TYPE_CHECKING:
    from episodic.model import DigestOutcome


def _serve(args: argparse.Namespace) -> int:
    from episodic.adapters.local.tokens import load_tokens
    from episodic.settings import Settings

    try:
        settings = Settings.from_env()
    except ValidationError as exc:
        print(f"episodic: invalid EPISODIC_* setting:\n{exc}", file=sys.stderr)
        return 2
    if args.data_dir:
        settings = settings.model_copy(update={"data_dir": Path(args.data_dir)})
    try:
        tokens = load_tokens(settings.data_dir.expanduser())
    except ValueError as exc:
        print(f"episodic: {exc}", file=sys.stderr)
        return 2
    with _backend(args.backend, settings) as (service, where):
        return _run_server(args, settings, tokens, service, where)


@contextmanager
def _backend(name: str, settings: Any) -> Iterator[tuple[Any, str]]:
    """The service ``episodic serve`` runs, and a line saying where its data lives."""
    if name == "aws-local":
        from episodic.adapters.aws.on_laptop import aws_on_laptop

        with aws_on_laptop(settings) as (service, _poller, endpoint):
            yield service, f"AWS backend on moto at {endpoint}, in memory: gone when this stops"
        return
    from episodic.adapters.local.bootstrap import build_local_service

    with build_local_service(settings) as service:
        yield service, f"data: {settings.data_dir.resolve()}"


def _run_server(args: argparse.Namespace, settings: Any, tokens: Any, service: Any, where: str) -> int:
    from episodic.adapters import rest
    from episodic.adapters.local.server import Scheduler, create_server

    rest.set_service(service)
    warm = getattr(service.embedder, "warm_up", None)
    if warm is not None:
        warm()
    service.policy.warm_up()  # the classifiers and detectors before the first request
    host, port = args.host or settings.host, settings.port if args.port is None else args.port
    try:
        server = create_server(host, port, tokens, rest.handler, request_log=sys.stderr)
    except OSError as exc:
        print(f"episodic: cannot listen on {host}:{port}: {exc}", file=sys.stderr)
        return 2
    scheduler = Scheduler(
        [
            ("sweep", settings.sweep_interval_seconds, service.sweep),
            ("summarise", settings.summary_interval_seconds, lambda: _digest_counts(service.summarise())),
            ("forget", settings.forget_interval_seconds, lambda: _forget_all(service)),
        ]
    )
    scheduler.start()
    host, port = str(server.server_address[0]), int(server.server_address[1])
    print(f"episodic memory service on http://{host}:{port}  ({where})")
    print(f"  API docs: http://{host}:{port}/v1/swagger   console: http://{host}:{port}/console")
    if tokens.created:
        print(f"  created {tokens.source} with two tokens for tenant 'demo' (keep them secret):")
        for token, caller in tokens.tokens.items():
            print(f"    {caller.role.value:<8} {token}")
    else:
        print(f"  tokens from {tokens.source} ({len(tokens.tokens)} known)")
    sys.stdout.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("\nstopping")
    finally:
        scheduler.stop()
        server.server_close()
        rest.set_service(None)
    return 0


class MissingDataDirError(SystemExit):
    """A maintenance command pointed at a data dir that does not exist."""


def _local_service(args: argparse.Namespace) -> Any:
    """The local service over an existing data dir, which is named first: maintenance commands
    never create one (run from the wrong folder, they would work on an empty store)."""
    from episodic.adapters.local.bootstrap import build_local_service
    from episodic.settings import Settings

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
    service = _local_service(args)
    print("summarising actors with more than", service.settings.summary_min_events, "events in the last 24 hours")
    outcomes = service.summarise()
    for o in outcomes:
        state = f"FAILED {o.error}" if o.failed else f"{o.decision} {o.event_id or ' '.join(o.reasons or [])}"
        print(f"  {o.tenant_id}/{o.actor_id}: {o.events} events -> {state}")
    print(f"done: {len(outcomes)} actor(s)")
    service.close()
    return 0


def _forget(args: argparse.Namespace) -> int:
    service = _local_service(args)
    verb = "would archive" if args.dry_run else "archived"
    total, cursor = 0, None
    while True:
        report = service.forget(dry_run=args.dry_run, cursor=cursor)
        for event_id in report.archived:
            print(f"  {verb} {event_id}")
        total += len(report.archived)
        cursor = report.next_cursor
        if cursor is None:
            break
    print(f"done: {verb} {total} episode(s)")
    service.close()
    return 0


def _reembed(args: argparse.Namespace) -> int:
    service = _local_service(args)
    print(f"re-embedding episodes whose vectors are not from {service.embedder.name} ...")
    done = service.reembed(
        batch_size=args.batch_size, progress=lambda n: print(f"\r  {n} episodes", end="", flush=True)
    )
    print(f"\rdone: {done} episodes re-embedded")
    service.close()
    return 0


def _digest_counts(outcomes: list[DigestOutcome]) -> str:
    """What the server log says about a summarisation run: counts only. Actor ids stay out of
    the log, which erasure cannot reach."""
    failed = sum(1 for o in outcomes if o.failed)
    return f"{len(outcomes) - failed} actor(s) summarised, {failed} failed" if outcomes else ""


def _forget_all(service: Any) -> int:
    archived, cursor = 0, None
    while True:
        report = service.forget(cursor=cursor)
        archived += len(report.archived)
        cursor = report.next_cursor
        if cursor is None:
            return archived


def _eval(args: argparse.Namespace) -> int:
    import json
    import tempfile

    from episodic.adapters.local.bootstrap import build_local_service
    from episodic.adapters.local.notifier import LogReviewNotifier
    from episodic.evaluation import SUITE_NOW, ManualClock, check_thresholds, run_suite
    from episodic.logs import service_logger
    from episodic.settings import Settings

    suite = Path(args.suite)
    if not (suite / "retrieval").is_dir():
        print(f"episodic eval: no labelled suite at {suite} (expected {suite}/retrieval/)", file=sys.stderr)
        return 2
    clock = ManualClock(SUITE_NOW)
    with tempfile.TemporaryDirectory(prefix="episodic-eval-") as tmp:
        print("running the evaluation suite against a fresh local service (real model) ...", flush=True)
        service = build_local_service(Settings(data_dir=Path(tmp)), clock=clock)
        service.notifier = LogReviewNotifier(service_logger("episodic-review", level="WARNING"))  # a quiet table
        metrics = run_suite(service, clock, suite)
        service.close()
        conversations = suite / "conversations" / "test"
        if conversations.is_dir():
            print("running the conversation benchmark (test split) ...", flush=True)
            from episodic.conversation_eval import conversation_metrics, local_services

            metrics |= conversation_metrics(local_services(Path(tmp), service.embedder), conversations)
    thresholds_path = Path(args.thresholds or suite / "thresholds.json")
    thresholds = json.loads(thresholds_path.read_text()) if thresholds_path.exists() else {}
    failures = check_thresholds(metrics, thresholds)
    for name, value in metrics.items():
        if not name.startswith("_"):
            bound = thresholds.get(name, {})
            limit = f"min {bound['min']}" if "min" in bound else f"max {bound['max']}" if "max" in bound else ""
            print(f"  {name:<28} {value:>8.4f}   {limit}")
    report = {"metrics": metrics, "thresholds": thresholds, "regressions": failures}
    Path(args.out).write_text(json.dumps(report, indent=2, default=str))
    print(f"report written to {args.out}")
    for failure in failures:
        print(f"REGRESSION {failure}")
    return 1 if failures else 0


def _demo(args: argparse.Namespace) -> int:
    from episodic.demo import run_demo

    return run_demo(Path(args.data_dir) if args.data_dir else None)


def _tokens(args: argparse.Namespace) -> int:
    """The local bearer tokens: list them, create one, rotate one (the server reads the file
    when it starts; EPISODIC_TOKENS, when set, overrides the file); or a test JWT for AWS."""
    if args.action == "jwt":
        return _jwt(args)
    from episodic.adapters.local.tokens import create_token, listed_tokens, rotate_token, token_file
    from episodic.settings import Settings

    data_dir = Path(args.data_dir) if args.data_dir else Settings.from_env().data_dir.expanduser()
    print(f"tokens file: {token_file(data_dir)}", file=sys.stderr)
    try:
        if args.action == "create":
            print(create_token(data_dir, args.tenant, args.role))
        elif args.action == "rotate":
            print(rotate_token(data_dir, args.token))
        else:
            rows = listed_tokens(data_dir)
            print("\n".join(f"{tenant:<20} {role:<9} {token}" for token, tenant, role in rows) or "no tokens yet")
    except ValueError as exc:
        print(f"episodic tokens: {exc}", file=sys.stderr)
        return 2
    if args.action != "list":
        print("restart `episodic serve` for the change to take effect", file=sys.stderr)
    return 0


def _jwt(args: argparse.Namespace) -> int:
    """A short-lived HS256 JWT for the deployed API's authorizer, signed with the stack's secret."""
    import os

    from episodic.adapters.aws.jwt_tokens import TokenClaims, mint, secret_from_aws, stage_auth

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
        claims = TokenClaims(args.tenant, args.role, args.subject, issuer, audience, args.hours,
                             auth.get("tenantClaim", "tenantId"), auth.get("roleClaim", "role"))  # fmt: skip
        print(mint(claims, secret))
    except ValueError as exc:
        print(f"episodic tokens jwt: {exc}", file=sys.stderr)
        return 2
    print(
        f"valid {args.hours:g} h for tenant {args.tenant} as {args.role} (iss {issuer}, aud {audience})",
        file=sys.stderr,
    )
    return 0


def _mcp(args: argparse.Namespace) -> int:
    """The memory as MCP tools, over the SDK: to ``--url`` (or EPISODIC_URL, or the local
    server) with EPISODIC_TOKEN. Only stderr is ours: on stdio, stdout carries the protocol."""
    import os

    try:
        from episodic.mcp_server import serve
    except ImportError as exc:
        print(
            f"episodic mcp: the MCP SDK is not installed ({exc}): pip install 'episodic-memory[mcp]'", file=sys.stderr
        )
        return 2
    if not os.environ.get("EPISODIC_TOKEN"):
        print("episodic mcp: EPISODIC_TOKEN is not set; the service will refuse every call", file=sys.stderr)
    serve(args.actor, args.url, http=args.http, host=args.host, port=args.port)
    return 0


def _version() -> str:
    """The installed package's version and the write policy's, which decisions are stamped with."""
    from importlib.metadata import PackageNotFoundError, version

    from episodic.policy import POLICY_VERSION

    try:
        package = version("episodic-memory")
    except PackageNotFoundError:  # run from a source tree that was never installed
        package = "unknown"
    return f"{package} (policy {POLICY_VERSION})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="episodic", description="Long-term episodic memory for AI agents.")
    parser.add_argument("--version", action="version", version=f"episodic {_version()}")
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="log lines (to stderr): -v for INFO, -vv for DEBUG"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the service on the embedded local backend")
    serve.add_argument("--host", help="default: EPISODIC_HOST or 127.0.0.1")
    serve.add_argument("--port", type=int, help="default: EPISODIC_PORT or 8765")
    serve.add_argument("--data-dir", default=None, help="where the database, archive and tokens live")
    serve.add_argument(
        "--backend",
        choices=("local", "aws-local"),
        default="local",
        help="local: SQLite (default); aws-local: the AWS backend over moto's server on loopback (in memory)",
    )
    serve.set_defaults(func=_serve)
    summarize = sub.add_parser("summarize", help="run the 24-hour summarisation now")
    summarize.add_argument("--data-dir", default=None)
    summarize.set_defaults(func=_summarize)
    forget = sub.add_parser("forget", help="archive episodes whose relevance has decayed")
    forget.add_argument("--data-dir", default=None)
    forget.add_argument("--dry-run", action="store_true", help="list what would be archived, change nothing")
    forget.set_defaults(func=_forget)
    reembed = sub.add_parser("reembed", help="give every episode a vector from the current embedding model")
    reembed.add_argument("--data-dir", default=None)
    reembed.add_argument("--batch-size", type=int, default=256)
    reembed.set_defaults(func=_reembed)
    evaluate = sub.add_parser("eval", help="run the labelled evaluation suite and check its thresholds")
    evaluate.add_argument("--suite", default="tests/evals", help="folder with retrieval/ and scenarios/")
    evaluate.add_argument("--thresholds", default=None, help="default: <suite>/thresholds.json")
    evaluate.add_argument("--out", default="eval-report.json")
    evaluate.set_defaults(func=_eval)
    # `bench` has its own options (--full, --writes, --sizes, --out): its parser handles them.
    sub.add_parser("bench", help="measure throughput, latency, cold starts; write BENCHMARKS.md", add_help=False)
    tokens = sub.add_parser("tokens", help="list, create or rotate local bearer tokens; mint a test JWT for AWS")
    tokens.add_argument("action", choices=("list", "create", "rotate", "jwt"), nargs="?", default="list")
    tokens.add_argument("token", nargs="?", help="rotate: the token to replace")
    tokens.add_argument("--tenant", default="demo", help="create: the tenant (default: demo)")
    tokens.add_argument("--role", default="agent", choices=("agent", "operator"), help="create: the role")
    tokens.add_argument("--data-dir", default=None, help="default: EPISODIC_DATA_DIR or ./.episodic")
    tokens.add_argument("--secret-id", help="jwt: the stack's JwtSecretArn (or set EPISODIC_JWT_SECRET)")
    tokens.add_argument("--issuer", help="jwt: default: cdk.json's auth.issuer")
    tokens.add_argument("--audience", help="jwt: default: cdk.json's auth.audience")
    tokens.add_argument("--subject", default="episodic-cli", help="jwt: the caller's principal id")
    tokens.add_argument("--hours", type=float, default=1.0, help="jwt: how long it is valid (at most 24)")
    tokens.set_defaults(func=_tokens)
    mcp = sub.add_parser("mcp", help="serve the memory as MCP tools (stdio; --http for streamable HTTP)")
    mcp.add_argument("--actor", default=None, help="who remember_episode writes as (default: EPISODIC_ACTOR)")
    mcp.add_argument("--url", default=None, help="the service (default: EPISODIC_URL or http://127.0.0.1:8765)")
    mcp.add_argument("--http", action="store_true", help="streamable HTTP at http://HOST:PORT/mcp instead of stdio")
    mcp.add_argument("--host", default="127.0.0.1", help="--http: the address to listen on")
    mcp.add_argument("--port", type=int, default=8766, help="--http: the port")
    mcp.set_defaults(func=_mcp)
    demo = sub.add_parser("demo", help="a scripted scenario against a fresh data dir")
    demo.add_argument("--data-dir", default=None, help="fresh folder to use (default: a temporary one)")
    demo.set_defaults(func=_demo)
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["bench"]:
        from benchmarks.run import main as bench_main

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


if __name__ == "__main__":
    raise SystemExit(main())
