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
import socket
import threading
import time
from dataclasses import dataclass
from http import HTTPStatus

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
    the handler's blocked read."""

    TICK_SECONDS = 0.25

    def __init__(self) -> None:
        self._deadlines: dict[socket.socket, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="episodic-watchdog", daemon=True)
        self._thread.start()

    def arm(self, connection: socket.socket, seconds: float) -> None:
        with self._lock:
            self._deadlines[connection] = time.monotonic() + seconds

    def disarm(self, connection: socket.socket) -> None:
        with self._lock:
            self._deadlines.pop(connection, None)

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.TICK_SECONDS):
            now = time.monotonic()
            with self._lock:
                late = [c for c, deadline in self._deadlines.items() if deadline <= now]
                for connection in late:
                    del self._deadlines[connection]
            for connection in late:
                _give_up(connection)


def _give_up(connection: socket.socket) -> None:
    """408 to a client that did not send its request in time, then the connection closed."""
    with contextlib.suppress(OSError):
        connection.settimeout(1)
        connection.sendall(json_error(408, "request_timeout", "the request did not arrive in time"))
    with contextlib.suppress(OSError):
        connection.shutdown(socket.SHUT_RDWR)
