"""Several server processes over one data dir (``episodic serve --workers N``).

One process resolves many requests at once (``entrypoints/rest/resolver.py``), but they share one
interpreter lock: the Python work of a request (validation, the policy, ranking, JSON) uses one
core at a time, so more cores need more processes. The listening socket is opened once and the
processes fork from there, *before* anything starts a thread or loads the model, so each builds
its own service (its own SQLite connections, model and embedding worker) and the kernel hands
each connection to one of them. SQLite's WAL and the store's transactions keep them consistent:
every commit is a ``BEGIN IMMEDIATE`` transaction, and the vector cache follows the database by
rowid, so each process sees the others' writes. Only the first process runs the schedules
(sweep, summaries, decay).

Linux only: a child asks the kernel to stop it when the first process dies (``PR_SET_PDEATHSIG``),
so no worker outlives the server it belongs to.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def fork_workers(count: int) -> tuple[bool, list[int]]:
    """Fork ``count - 1`` children of this process; returns ``(is_first, children)``: the first
    process gets the children's pids, each child ``(False, [])``."""
    if count > 1 and not sys.platform.startswith("linux"):
        raise ValueError("--workers above 1 needs Linux")
    children: list[int] = []
    for _ in range(count - 1):
        pid = os.fork()
        if pid == 0:
            _stop_with_parent()
            return False, []
        children.append(pid)
    return True, children


def stop_workers(children: list[int]) -> None:
    """Ask every child to stop, then wait for it."""
    for pid in children:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
    for pid in children:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            continue


def _stop_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
