"""The local HTTP edge's limits: deadlines for a request to arrive, and a cap on connections.

A client that sends its request slowly -- a header byte every few seconds, a body that never
ends -- would otherwise hold a connection and its thread for as long as it likes, and enough of
them would hold every thread. So each request has a deadline from its first byte to the end of
its headers and another for its body (:class:`Watchdog` answers 408 and closes the connection
when one passes), an idle keep-alive connection is closed, and past a cap of open connections a
new one is told 503 at once (:func:`json_error` writes both answers outside any handler).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

IDLE_SECONDS = 30.0
"""How long a keep-alive connection may wait for its next request."""
HEADERS_SECONDS = 10.0
"""From a request's first byte to the end of its headers."""
BODY_SECONDS = 30.0
"""From the end of the headers to the end of the body (1 MiB at 35 KB/s)."""
MAX_CONNECTIONS = 256
"""Open connections at once (each has a thread); past it a new one is told 503 and closed."""


@dataclass(frozen=True)
class Limits:
    """The edge's deadlines and its connection cap (see the module docstring)."""

    idle_seconds: float = IDLE_SECONDS
    headers_seconds: float = HEADERS_SECONDS
    body_seconds: float = BODY_SECONDS
    max_connections: int = MAX_CONNECTIONS


def json_error(status: int, code: str, message: str, extra: dict[str, str] | None = None) -> bytes:
    """A whole HTTP/1.1 response that closes its connection, for answers sent outside a handler."""
    body = json.dumps({"error": code, "message": message}).encode()
    reason = HTTPStatus(status).phrase
    headers = {"Content-Type": "application/json", "Content-Length": str(len(body)), "Connection": "close"}
    lines = [f"HTTP/1.1 {status} {reason}", *(f"{k}: {v}" for k, v in {**headers, **(extra or {})}.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


class Watchdog:
    """Closes connections whose request is not in by its deadline: one thread for all of them.

    A handler arms a deadline while it waits for a request's headers or body and disarms it once
    they are in; when one passes, the client is told 408 and the socket is shut down, which ends
    the handler's blocked read.

    The thread starts with the first deadline armed in a process, not with the watchdog: the server
    is made before ``serve --workers`` forks, and a thread does not cross a fork, so a thread started
    then would have watched nothing in the workers (slow clients held their connections for as
    long as they liked). A forked worker arming its first deadline starts its own thread, with
    state of its own."""

    TICK_SECONDS = 0.25

    def __init__(self) -> None:
        self._pid: int | None = None
        """The process whose thread watches (None: no deadline armed yet)."""
        self._deadlines: dict[socket.socket, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def arm(self, connection: socket.socket, seconds: float) -> None:
        self._watching()
        with self._lock:
            self._deadlines[connection] = time.monotonic() + seconds

    def disarm(self, connection: socket.socket) -> None:
        with self._lock:
            self._deadlines.pop(connection, None)

    def stop(self) -> None:
        self._stop.set()

    def _watching(self) -> None:
        """This process's thread, started on first use (with state of its own after a fork: what the
        parent held, its lock included, is not this process's)."""
        pid = os.getpid()
        if self._pid == pid:
            return
        with _STARTING:
            if self._pid != pid:
                self._deadlines, self._lock = {}, threading.Lock()
                threading.Thread(target=self._run, args=(self._lock, self._deadlines), name="episodic-watchdog",
                                 daemon=True).start()  # fmt: skip
                self._pid = pid

    def _run(self, lock: threading.Lock, deadlines: dict[socket.socket, float]) -> None:
        while not self._stop.wait(self.TICK_SECONDS):
            now = time.monotonic()
            with lock:
                late = [c for c, deadline in deadlines.items() if deadline <= now]
                for connection in late:
                    del deadlines[connection]
            for connection in late:
                _give_up(connection)


_STARTING = threading.Lock()
"""Held while a watchdog starts its thread (two handlers may arm their first deadlines at once)."""


class InFlight:
    """The requests being answered (their headers in, their response not yet out), and the drain a
    stopping server waits in: it closes the store next, and a request still running then would fail
    with a 500. Once draining, a new request is told 503 ``shutting_down``."""

    def __init__(self) -> None:
        self._busy = 0
        self._quiet = threading.Condition()
        self.draining = False

    def begin(self) -> bool:
        """Count a request in; False once draining."""
        with self._quiet:
            if self.draining:
                return False
            self._busy += 1
            return True

    def end(self) -> None:
        with self._quiet:
            self._busy -= 1
            self._quiet.notify_all()

    def busy(self) -> int:
        with self._quiet:
            return self._busy

    def drain(self, seconds: float) -> bool:
        """Take no new request and wait (at most ``seconds``) for those being answered; True when none
        was left."""
        with self._quiet:
            self.draining = True
            return self._quiet.wait_for(lambda: self._busy == 0, timeout=seconds)


def _give_up(connection: socket.socket) -> None:
    """408 to a client that did not send its request in time, then the connection closed."""
    with contextlib.suppress(OSError):
        connection.settimeout(1)
        connection.sendall(json_error(408, "request_timeout", "the request did not arrive in time"))
    with contextlib.suppress(OSError):
        connection.shutdown(socket.SHUT_RDWR)


class HeadReader:
    """A connection's reader that keeps the lines of the request head as they were read (from the
    last :meth:`start`), so that a bare CR inside one can be refused (:func:`bare_cr`): the header
    parser (e-mail's) takes a CR alone for a line break, where a proxy in front may not, so one
    header line could carry a second header past it (an ``X-Episodic-Actor``, an ``Authorization``)."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self.lines: list[bytes] = []

    def start(self) -> None:
        self.lines = []

    def readline(self, limit: int = -1) -> bytes:
        line: bytes = self.raw.readline(limit)
        self.lines.append(line)
        return line

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


def bare_cr(lines: list[bytes]) -> bool:
    """Whether any of ``lines`` holds a CR that does not end it (HTTP ends a line with CRLF)."""
    return any(b"\r" in (line[:-2] if line.endswith(b"\r\n") else line.rstrip(b"\n")) for line in lines)
