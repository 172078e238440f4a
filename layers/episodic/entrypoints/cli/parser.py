"""The ``episodic`` command line: every subcommand, its description and its options with their
defaults (``episodic <command> --help`` shows them). What each command does is in
:mod:`episodic.entrypoints.cli.main`; this module only says what can be asked."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import Any

Handler = Callable[[argparse.Namespace], int]


class _Formatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Defaults shown after each option's help (an unset one says itself what applies);
    descriptions kept as written."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default in (None, False) or isinstance(action, argparse._CountAction):
            return action.help
        return super()._get_help_string(action)


DATA_DIR_HELP = "the data dir (database, archive, tokens); unset: EPISODIC_DATA_DIR or ./.episodic"


def build_parser(version: str, handlers: Mapping[str, Handler]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="episodic", description="Long-term episodic memory for AI agents.", formatter_class=_Formatter
    )
    parser.add_argument("--version", action="version", version=f"episodic {version}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="log to stderr: -v INFO, -vv DEBUG")
    sub = parser.add_subparsers(dest="command", required=True, metavar="<command>")

    def command(name: str, summary: str, details: str = "", **extra: Any) -> argparse.ArgumentParser:
        description = f"{summary}\n\n{details}" if details else summary
        one = sub.add_parser(name, help=summary, description=description, formatter_class=_Formatter, **extra)
        if name in handlers:
            one.set_defaults(func=handlers[name])
        return one

    serve_details = "Prints the tokens on a first start; one line per request goes to stderr."
    _serve(command("serve", "Run the service (API, console, Swagger UI) on one machine.", serve_details))
    mcp_details = (
        "Talks to the service through the SDK (EPISODIC_URL says where) and acts for one actor. Over stdio it "
        "needs --actor and EPISODIC_TOKEN; over HTTP every request brings its own bearer token, checked by the "
        "service, bound to an actor or narrowed by --actor."
    )
    _mcp(command("mcp", "Serve the memory as MCP tools (stdio, or streamable HTTP with --http).", mcp_details))
    _tokens(command("tokens", "List, create or rotate the local bearer tokens; mint a test JWT for AWS."))
    _maintenance(command)
    _audit(command("audit", "Verify the audit log's hash chains, or print their heads.", AUDIT_DETAILS), handlers)
    evaluate = command("eval", "Run the labelled evaluation suite and check its thresholds.")
    evaluate.add_argument("--suite", default="tests/evals", help="folder with retrieval/ and scenarios/")
    evaluate.add_argument("--thresholds", default=None, help="unset: <suite>/thresholds.json")
    evaluate.add_argument("--out", default="eval-report.json", help="the full report, as JSON")
    # `bench` has its own options (--full, --writes, --sizes, --out): its own parser handles them.
    command("bench", "Measure throughput, latency and cold starts; write BENCHMARKS.md.", add_help=False)
    demo = command("demo", "A scripted tour over HTTP: every request and its answer.")
    demo.add_argument("--data-dir", default=None, help="a fresh folder to keep; unset: a temporary one, removed")
    return parser


def _serve(serve: argparse.ArgumentParser) -> None:
    serve.add_argument("--host", help="unset: EPISODIC_HOST or 127.0.0.1")
    serve.add_argument("--port", type=int, help="unset: EPISODIC_PORT or 8765")
    serve.add_argument("--data-dir", default=None, help=DATA_DIR_HELP)
    serve.add_argument(
        "--backend",
        choices=("local", "aws-local"),
        default="local",
        help="local: SQLite; aws-local: the AWS backend over moto's server on loopback (in memory)",
    )
    serve.add_argument(
        "--workers",
        type=int,
        default=None,
        help="server processes over the one data dir (Linux, local backend); unset: one per core, at most 8",
    )


def _mcp(mcp: argparse.ArgumentParser) -> None:
    mcp.add_argument("--actor", default=None,
                     help="the one actor every tool acts for (required over stdio); unset: EPISODIC_ACTOR")  # fmt: skip
    mcp.add_argument("--url", default=None, help="the service; unset: EPISODIC_URL or http://127.0.0.1:8765")
    mcp.add_argument("--http", action="store_true", help="streamable HTTP at http://HOST:PORT/mcp instead of stdio")
    mcp.add_argument("--host", default="127.0.0.1", help="--http: the address to listen on")
    mcp.add_argument("--port", type=int, default=8766, help="--http: the port")


def _tokens(tokens: argparse.ArgumentParser) -> None:
    tokens.add_argument("action", choices=("list", "create", "rotate", "jwt"), nargs="?", default="list",
                        help="jwt: a short-lived JWT for the deployed API's authorizer")  # fmt: skip
    tokens.add_argument(
        "token", nargs="?", help="rotate: the token to replace (one that starts with - after --: rotate -- TOKEN)"
    )
    tokens.add_argument("--tenant", default="demo", help="create, jwt: the tenant")
    tokens.add_argument("--role", default="agent", choices=("agent", "operator"), help="create, jwt: the role")
    tokens.add_argument("--actor", action="append", metavar="ACTOR_ID",
                        help="create, jwt: bind the agent token to this actor (repeat for several); "
                        "unset: a tenant-wide token")  # fmt: skip
    tokens.add_argument("--data-dir", default=None, help=DATA_DIR_HELP)
    tokens.add_argument("--secret-id", help="jwt: the stack's JwtSecretArn output (or set EPISODIC_JWT_SECRET)")
    tokens.add_argument("--issuer", help="jwt: unset: cdk.json's auth.issuer")
    tokens.add_argument("--audience", help="jwt: unset: cdk.json's auth.audience")
    tokens.add_argument(
        "--subject",
        help="jwt: the caller's principal id (unset: cli:TENANT:ROLE[:ACTORS]; two "
        "tokens of one subject are one principal: the same idempotency keys, the same name in the audit)",
    )
    tokens.add_argument("--hours", type=float, default=1.0, help="jwt: how long it is valid (at most 24)")


AUDIT_DETAILS = (
    "verify exits 0 when every chain verifies and 1 naming the first record altered, removed, inserted or "
    "reordered; it only reads. heads prints each chain's newest link (TENANT:SHARD:SEQ:DIGEST): keep them where "
    "the data dir's owner cannot rewrite them, and pass them to verify --checkpoint."
)


def _audit(audit: argparse.ArgumentParser, handlers: Mapping[str, Handler]) -> None:
    actions = audit.add_subparsers(dest="audit_command", required=True, metavar="<action>")
    verify = actions.add_parser(
        "verify",
        help="check every chain, link by link",
        description="Check every audit chain of the data dir, link by link; exit 1 naming the first break.",
        formatter_class=_Formatter,
    )
    heads = actions.add_parser(
        "heads",
        help="print each chain's newest link",
        description="Print each audit chain's newest link as TENANT:SHARD:SEQ:DIGEST, to keep elsewhere.",
        formatter_class=_Formatter,
    )
    for one, name in ((verify, "audit verify"), (heads, "audit heads")):
        one.add_argument("--data-dir", default=None, help=DATA_DIR_HELP)
        one.add_argument("--tenant", default=None, help="one tenant (unset: every tenant with an audit record)")
        one.add_argument(
            "--backend", choices=("local", "aws"), default="local",
            help="a local data dir, or the deployment named by EPISODIC_* settings (its tables and checkpoints)",
        )  # fmt: skip
        if name in handlers:
            one.set_defaults(func=handlers[name])
    verify.add_argument(
        "--checkpoint", action="append", metavar="TENANT:SHARD:SEQ:DIGEST", help="a head printed earlier, to check"
    )


def _maintenance(command: Callable[..., argparse.ArgumentParser]) -> None:
    summarize = command("summarize", "Run the 24-hour summarisation now (a digest per busy actor).")
    summarize.add_argument("--data-dir", default=None, help=DATA_DIR_HELP)
    forget = command("forget", "Archive episodes whose relevance has decayed (restorable).")
    forget.add_argument("--data-dir", default=None, help=DATA_DIR_HELP)
    forget.add_argument("--dry-run", action="store_true", help="list what would be archived, change nothing")
    reembed = command("reembed", "Give every episode a vector from the current embedding model.")
    reembed.add_argument("--data-dir", default=None, help=DATA_DIR_HELP)
    reembed.add_argument("--batch-size", type=int, default=256, help="episodes embedded per batch")
