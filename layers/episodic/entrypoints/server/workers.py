"""Several server processes over one data dir (``episodic serve --workers N``; by default one per
core, up to :data:`MAX_DEFAULT_WORKERS`).

One process resolves many requests at once (``entrypoints/rest/resolver.py``), but they share one
interpreter lock: the Python work of a request (validation, the policy, ranking, JSON) uses one
core at a time, so more cores need more processes. The listening socket is opened once; a
supervisor process that never starts a thread or loads the model forks the workers from there,
so each builds its own service (its own SQLite connections, model and embedding worker) and the
kernel hands each connection to one of them. SQLite's WAL and the store's transactions keep them
consistent: every commit is a ``BEGIN IMMEDIATE`` transaction, and the vector cache follows the
database by rowid, so each process sees the others' writes. Worker 0 alone runs the schedules
(sweep, summaries, decay) and delivers memory events.

The supervisor replaces a worker that dies (the replacement takes its number, so the schedules
go on), and gives up -- stopping the others, exit code 1 -- when one keeps dying as it starts.
SIGTERM or SIGINT to the supervisor stops every worker the way Ctrl-C stops one process (its
store closed) and waits for them.

Linux only: a worker asks the kernel to stop it when the supervisor dies (``PR_SET_PDEATHSIG``),
even by SIGKILL, so no worker outlives the server it belongs to.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
from collections.abc import Callable

PR_SET_PDEATHSIG = 1
MAX_DEFAULT_WORKERS = 8
"""The default stops here: each worker holds its own model and vectors (see docs/operations.md)."""
EARLY_EXIT_SECONDS = 10.0
"""A worker that ends sooner than this after it started failed to start."""
EARLY_EXITS_ALLOWED = 3
"""Failed starts in a row (of any worker) after which the supervisor stops the server."""


def default_workers(backend: str) -> int:
    """One worker per core this process may use (at most :data:`MAX_DEFAULT_WORKERS`) for the local
    backend on Linux; one elsewhere (moto keeps ``aws-local`` in one process)."""
    if backend != "local" or not sys.platform.startswith("linux"):
        return 1
    return max(1, min(len(os.sched_getaffinity(0)), MAX_DEFAULT_WORKERS))


class _Stop(Exception):
    """SIGTERM or SIGINT reached the supervisor."""


def _stop(signum: int, frame: object) -> None:
    raise _Stop


def supervise(count: int, run: Callable[[int, bool], int]) -> int:
    """Run ``run(index, replacing)`` in ``count`` forked workers (``index`` 0 to ``count - 1``) until
    SIGTERM or SIGINT, replacing any that dies (``replacing`` is then true: what a server says once
    at its start, its tokens included, is not said again); returns the server's exit code."""
    if not sys.platform.startswith("linux"):
        raise ValueError("--workers above 1 needs Linux")
    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    workers: dict[int, tuple[int, float]] = {}  # pid -> (index, started at)
    failed_starts = 0
    code = 0
    try:
        for index in range(count):
            workers[_spawn(index, run, False)] = (index, time.monotonic())
        while workers:
            pid, status = os.wait()
            if pid not in workers:
                continue
            index, started = workers.pop(pid)
            failed_starts = failed_starts + 1 if time.monotonic() - started < EARLY_EXIT_SECONDS else 0
            if failed_starts >= EARLY_EXITS_ALLOWED:
                print(f"episodic: worker {index} keeps ending as it starts ({_how(status)}); stopping", file=sys.stderr)
                code = 1
                break
            print(f"episodic: worker {index} ended ({_how(status)}); starting another", file=sys.stderr)
            workers[_spawn(index, run, True)] = (index, time.monotonic())
    except _Stop:
        pass
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_IGN)  # a second signal must not cut the shutdown short
        _stop_all(list(workers))
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return code


def _spawn(index: int, run: Callable[[int, bool], int], replacing: bool) -> int:
    """Fork one worker running ``run(index, replacing)``; it never returns into the supervisor's code."""
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _stop_with_parent()
        code = run(index, replacing)
    except KeyboardInterrupt:
        code = 0
    except BaseException:  # say why, then end this worker only
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _stop_all(pids: list[int]) -> None:
    """Ask every worker to stop, then wait for each."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
    for pid in pids:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            continue


def _how(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"signal {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit code {os.waitstatus_to_exitcode(status)}"


def _stop_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
