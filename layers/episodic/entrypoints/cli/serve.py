"""``episodic serve``: the local server -- the backend it runs, the listening socket, the worker
processes, the schedules -- from the command line's arguments."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

if TYPE_CHECKING:
    from episodic.application.service import MemoryService
    from episodic.application.settings import Settings
    from episodic.domain.model import DigestOutcome

DRAIN_SECONDS = 10.0
"""How long a stopping server waits for the requests it is answering before it closes the store
(new ones are told 503 ``shutting_down``): a request cut off by the close failed with a 500."""


def serve(args: argparse.Namespace) -> int:
    from episodic.application.settings import Settings
    from episodic.entrypoints.server.scheduler import STATE_FILE
    from episodic.entrypoints.server.tokens import load_tokens

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
    from episodic.entrypoints.server.workers import default_workers, supervise

    workers = default_workers(args.backend) if args.workers is None else args.workers
    if workers > 1 and args.backend != "local":
        print(
            "episodic: --workers above 1 needs the local backend (moto keeps aws-local in one process)", file=sys.stderr
        )
        return 2
    if workers < 1:
        print("episodic: --workers must be at least 1", file=sys.stderr)
        return 2
    from episodic.entrypoints import rest
    from episodic.entrypoints.server.http import create_server

    host, port = args.host or settings.host, settings.port if args.port is None else args.port
    try:
        server = create_server(host, port, tokens, rest.concurrent_handler, request_log=sys.stderr)
    except OSError as exc:
        print(f"episodic: cannot listen on {host}:{port}: {exc}", file=sys.stderr)
        return 2
    if workers > 1:  # each process's model gets its share of the cores, not all of them each
        os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // workers)))
    if args.backend == "local":
        from episodic.bootstrap.local import prepare_data_dir

        prepare_data_dir(settings)  # an upgrade of the data dir runs here, once, before the workers exist

    def one_process(index: int, replacing: bool) -> int:
        _stop_on_sigterm()
        with _backend(args.backend, settings) as (service, where):
            announce = where if index == 0 and not replacing else None
            kept = settings.data_dir.expanduser() / STATE_FILE if args.backend == "local" else None  # aws-local: memory
            return _run_server(server, settings, tokens, service, announce, (index == 0, kept), workers)

    if workers == 1:
        return one_process(0, False)
    code = supervise(workers, one_process)  # forked before any thread starts or the model loads
    if args.backend == "local":
        # Workers stopped together may each close while another still has the database open, and
        # then none is the last connection, which checkpoints SQLite's log and removes it: this one
        # is (the data dir is prepared already, so this only opens the store and closes it).
        prepare_data_dir(settings)
    return code


def _stop_on_sigterm() -> None:
    """SIGTERM -- what ``kill``, systemd and container runtimes send, and what the first process
    sends its workers -- stops the server the way Ctrl-C does: the store is closed (the vector
    index saved, SQLite's log checkpointed) instead of the process ending mid-flight. A second
    SIGTERM during that shutdown is ignored, so it cannot cut the close short."""

    def stop(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)


@contextmanager
def _backend(name: str, settings: Settings) -> Iterator[tuple[MemoryService, str]]:
    """The service ``episodic serve`` runs, and a line saying where its data lives."""
    if name == "aws-local":
        from episodic.bootstrap.aws_on_moto import aws_on_laptop

        with aws_on_laptop(settings) as laptop:
            ingestion = (
                "EventBridge bus 'episodic-ingest' on" if laptop.queue else "no ingestion mapping, EventBridge off"
            )
            yield (
                laptop.service,
                f"AWS backend on moto at {laptop.endpoint} ({ingestion}); in memory: gone when this stops",
            )
        return
    from episodic.bootstrap.local import build_local_service

    with build_local_service(settings) as service:
        yield service, f"data: {settings.data_dir.resolve()}"


def _run_server(
    server: Any,
    settings: Settings,
    tokens: Any,
    service: MemoryService,
    where: str | None,
    schedules: tuple[bool, Path | None],
    workers: int,
) -> int:
    """Serve until stopped; the first process also runs the schedules (``schedules``: whether this
    process runs them, and the file that keeps when each last started), and says where it listens
    and where its data lives (``where``) when started with the server, not as a replacement."""
    first, kept = schedules
    from episodic.entrypoints import rest
    from episodic.entrypoints.server.collector import tune_collector
    from episodic.entrypoints.server.events import Deliverer
    from episodic.entrypoints.server.scheduler import Scheduler

    rest.set_service(service)
    warm = getattr(service.deps.embedder, "warm_up", None)
    if warm is not None:
        warm()
    service.deps.policy.warm_up()  # the classifiers and detectors before the first request
    vectors = getattr(service.deps.index, "warm_up", None)  # the local backend: large tenants' words and vectors
    if vectors is not None:
        vectors(service.deps.embedder.dimension)
    tune_collector()  # what the start made is frozen; requests' temporaries die before a collection
    jobs: list[tuple[str, float, Callable[[], Any]]] = [
        ("sweep", settings.sweep_interval_seconds, service.sweeper.sweep),
        ("summarise", settings.summary_interval_seconds, lambda: _digest_counts(service.summarisation.summarise())),
        ("forget", settings.forget_interval_seconds, lambda: _forget_all(service)),
    ]
    scheduler = Scheduler(jobs if first else [], kept)
    scheduler.start()
    deliverer = Deliverer(service.notifications) if first and service.notifications is not None else None
    if deliverer is not None:
        deliverer.start()
    if where is not None:
        _announce(server, tokens, where, workers)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        if first:
            print("\nstopping")
    finally:
        for stop_signal in (signal.SIGINT, signal.SIGTERM):  # Ctrl-C reaches every worker, then the supervisor's
            signal.signal(stop_signal, signal.SIG_IGN)  # SIGTERM: neither may cut the drain and the close short
        if not server.drain(DRAIN_SECONDS):
            print(f"episodic: requests still running after {DRAIN_SECONDS:.0f} s; stopping anyway", file=sys.stderr)
        scheduler.stop()
        if deliverer is not None:
            deliverer.stop()
        server.server_close()
        rest.set_service(None)
    return 0


def _announce(server: Any, tokens: Any, where: str, workers: int) -> None:
    host, port = str(server.server_address[0]), int(server.server_address[1])
    processes = f"; {workers} processes" if workers > 1 else ""
    print(f"episodic memory service on http://{host}:{port}  ({where}{processes})")
    print(f"  API docs: http://{host}:{port}/v1/swagger   console: http://{host}:{port}/console")
    if tokens.created:
        print(f"  created {tokens.source} with two tokens for tenant 'demo' (keep them secret):")
        for token, caller in tokens.tokens.items():
            print(f"    {caller.role.value:<8} {token}")
    else:
        print(f"  tokens from {tokens.source} ({len(tokens.tokens)} known)")
    sys.stdout.flush()


def _digest_counts(outcomes: list[DigestOutcome]) -> str:
    """What the server log says about a summarisation run: counts only. Actor ids stay out of
    the log, which erasure cannot reach."""
    failed = sum(1 for o in outcomes if o.failed)
    return f"{len(outcomes) - failed} actor(s) summarised, {failed} failed" if outcomes else ""


def _forget_all(service: MemoryService) -> int:
    archived, cursor = 0, None
    while True:
        report = service.archival.forget(cursor=cursor)
        archived += len(report.archived)
        cursor = report.next_cursor
        if cursor is None:
            return archived
