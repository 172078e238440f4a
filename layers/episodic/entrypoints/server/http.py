"""``episodic serve``: a local HTTP server in front of the same application as the Lambda handler.

Each HTTP request becomes an API Gateway REST proxy event -- with the authorizer
context this server established from the bearer token, exactly as an API Gateway
authorizer would -- and is passed to the handler it was given
(:func:`episodic.entrypoints.rest.concurrent_handler` when serving: the Lambda handler's twin,
safe to call from many request threads at once). So what runs locally is what runs in Lambda,
down to the event shape.

Background work runs in-process: the embedder warms up at start, and a scheduler
thread runs the retention/review-timeout sweep every ``sweep_interval_seconds``.

The edge answers every request, however malformed, with JSON and a 4xx -- never a 5xx of
http.server's own, never an HTML page: an unknown method gets 405 with ``Allow``, ``HEAD`` is
``GET`` without the body, ``OPTIONS`` lists the methods (no CORS headers: the API is not for
browsers of other origins). Slow clients cannot hold the server: a request's line and headers
must arrive within a deadline of its first byte and its body within another (408 and the
connection closed otherwise), an idle keep-alive connection is closed, and past a cap of open
connections a new one gets 503 with ``Retry-After`` at once (:mod:`episodic.entrypoints.server.edge`).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from email.errors import InvalidHeaderDefect, MissingHeaderBodySeparatorDefect
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TextIO
from urllib.parse import urlsplit

from episodic.entrypoints.server.edge import HeadReader, InFlight, Limits, Watchdog, bare_cr, json_error
from episodic.entrypoints.server.proxy_event import LocalLambdaContext, build_event
from episodic.entrypoints.server.tokens import TokenBook
from episodic.logs import service_logger

_MALFORMED_HEADER = (MissingHeaderBodySeparatorDefect, InvalidHeaderDefect)
"""What the header parser finds in a header line that is no header (other defects it reports are
about the media type, such as a multipart type without a boundary: the API's 415 says those)."""

PUBLIC_PATHS = ("/v1/health", "/v1/swagger", "/console")
SINGLE_HEADERS = ("Authorization", "X-Episodic-Actor")
"""Headers that say who is asking: a request carries each at most once."""
MAX_BODY_BYTES = 1_048_576
DRAIN_LIMIT_BYTES = 16 * MAX_BODY_BYTES

logger = service_logger("episodic-server")

LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]
MethodsFor = Callable[[str], list[str]]
"""The methods the API serves a path with (``[]``: no route)."""


class _Handler(BaseHTTPRequestHandler):
    """One HTTP request turned into an API Gateway event for the Lambda handler the server holds."""

    server: _Server
    server_version = "episodic-local/1"
    protocol_version = "HTTP/1.1"
    error_content_type = "application/json"

    def setup(self) -> None:
        super().setup()
        # A response goes out in one write (:meth:`_send`), but errors the base class sends write
        # headers and body apart; without TCP_NODELAY, Nagle's algorithm would hold the body back
        # until the client's delayed ACK (about 40 ms).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.rfile = HeadReader(self.rfile)  # type: ignore[assignment]

    def handle_one_request(self) -> None:
        """Wait (at most the idle time) for a request to begin, then give its line and headers
        their deadline; the body gets its own in :meth:`_dispatch`."""
        limits = self.server.limits
        self.connection.settimeout(limits.idle_seconds)
        try:
            started = self.rfile.peek(1)  # type: ignore[attr-defined]
        except OSError:  # the idle time passed, or the client went away
            started = b""
        if not started:
            self.close_connection = True
            return
        self.connection.settimeout(limits.headers_seconds + limits.body_seconds)
        self.server.watchdog.arm(self.connection, limits.headers_seconds)
        self.rfile.start()  # type: ignore[attr-defined]
        try:
            super().handle_one_request()
        except OSError:  # the watchdog shut the connection, or the client reset it
            self.close_connection = True
        finally:
            self.server.watchdog.disarm(self.connection)

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("http", line=format % args)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals (a malformed request line, headers too long, a method it has
        no handler for, an HTTP version it does not speak) in the API's JSON shape, as 4xx."""
        self.close_connection = True
        if self.request_version == "HTTP/0.9":  # no request line could be read: answer as HTTP/1.1
            self.request_version = self.protocol_version
        if code == HTTPStatus.NOT_IMPLEMENTED:  # a method http.server has no do_ for
            self._not_allowed()
            return
        if code >= 500:  # 505 HTTP Version Not Supported: the request is what is wrong
            code = HTTPStatus.BAD_REQUEST
        status = HTTPStatus(code)
        self._error(status.value, status.phrase.lower().replace(" ", "_"), message or status.description,
                    {"Connection": "close"})  # fmt: skip

    def _send(self, status: int, body: str, headers: dict[str, str] | None = None, *, head: bool = False) -> None:
        payload = body.encode()
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        # Headers and body in one write: each write to a loopback socket also runs the client's
        # side of TCP, so two cost about twice one.
        buffered: list[bytes] = getattr(self, "_headers_buffer", [])  # none at all for HTTP/0.9
        lines = b"".join([*buffered, b"\r\n"]) if buffered else b""
        buffered.clear()
        self.wfile.write(lines + (b"" if head else payload))
        self._log_request(status)

    def _log_request(self, status: int) -> None:
        """One line per request when the server keeps a request log: time, method, path (never
        the query string, which can carry a search), status and how long it took."""
        log = self.server.request_log
        if log is None:
            return
        took = (time.perf_counter() - getattr(self, "_started", time.perf_counter())) * 1000
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        path = urlsplit(getattr(self, "path", "") or "").path  # no path: the request line was unreadable
        log.write(f"{now} {_printable(self.command or '-')} {_printable(path or '-')} {status} {took:.1f}ms\n")
        log.flush()

    def _error(self, status: int, code: str, message: str, extra: dict[str, str] | None = None) -> None:
        headers = {"Content-Type": "application/json", **(extra or {})}
        self._send(status, json.dumps({"error": code, "message": message}), headers, head=self.command == "HEAD")

    def _drain(self, length: int) -> None:
        """Read and drop a refused body, for at most 5 s in all, so the client sees the 413, not a
        reset connection; one declared over :data:`DRAIN_LIMIT_BYTES` is not waited for at all."""
        remaining, deadline = (length if length <= DRAIN_LIMIT_BYTES else 0), time.monotonic() + 5
        try:
            while remaining > 0 and (left := deadline - time.monotonic()) > 0:
                self.connection.settimeout(left)  # for one read of what has come (a trickle cannot reset it)
                chunk = self.rfile.read1(min(remaining, 65536))  # type: ignore[attr-defined]
                if not chunk:
                    break
                remaining -= len(chunk)
        except OSError:
            pass

    def parse_request(self) -> bool:
        """http.server's parse, then refuse (400, connection closed) what it lets through but cannot
        be read as one HTTP/1.x request: no version on the request line (HTTP/0.9, which has no
        status line to answer with), or a header line that is no header -- the parser takes it and
        every line after it for the body, and the request would go on without them (a narrowing
        ``X-Episodic-Actor`` among them), or one holding a bare CR (:class:`.edge.HeadReader`); or two
        of a header that says who is asking (:data:`SINGLE_HEADERS`), read first or last by others."""
        if not super().parse_request():
            return False
        repeated = [name for name in SINGLE_HEADERS if len(self.headers.get_all(name) or ()) > 1]
        if repeated:
            self.send_error(400, f"{repeated[0]} must be sent at most once")
            return False
        if self.request_version == "HTTP/0.9":
            self.send_error(400, "the request line must end with an HTTP version (HTTP/1.0 or HTTP/1.1)")
            return False
        malformed = any(isinstance(d, _MALFORMED_HEADER) for d in self.headers.defects)
        if self.headers.get_payload() or malformed or bare_cr(self.rfile.lines):  # type: ignore[attr-defined]
            self.send_error(400, "a header line is malformed (every header line is 'Name: value', ending in CRLF)")
            return False
        return True

    def _body_length(self) -> int | None:
        """The declared body length, or None once a body that cannot be read has been refused."""
        lengths = self.headers.get_all("Content-Length") or ["0"]
        declared = lengths[0].strip()
        if len(lengths) > 1 or not declared.isdigit() or self.headers.get("Transfer-Encoding"):
            # Unreadable framing: the body's end is unknown, so the connection cannot be reused.
            self.close_connection = True
            self._error(
                400,
                "bad_request",
                "Content-Length must be one non-negative integer (chunked bodies are not accepted)",
                {"Connection": "close"},
            )
            return None
        length = int(declared)
        if length > MAX_BODY_BYTES:
            self._drain(length)
            self.close_connection = True
            self._error(
                413,
                "payload_too_large",
                f"request bodies are limited to {MAX_BODY_BYTES} bytes",
                {"Connection": "close"},
            )
            return None
        return length

    def _authorizer(self) -> dict[str, str] | None:
        """What an API Gateway authorizer would pass on for the bearer token; None for no valid token."""
        scheme, _, token = self.headers.get("Authorization", "").partition(" ")
        caller = self.server.tokens.authenticate(token.strip()) if scheme.lower() == "bearer" else None
        if caller is None:
            return None
        context = {"principalId": caller.principal_id, "tenantId": caller.tenant_id, "role": caller.role.value}
        if caller.actors:
            context["actors"] = ",".join(caller.actors)  # authorizer context values are strings, as in AWS
        return context

    def _allowed(self) -> list[str]:
        """The methods this path is served with, ``HEAD`` where ``GET`` is, and ``OPTIONS``."""
        methods = set(self.server.methods_for(urlsplit(self.path).path))
        if not methods:
            return []
        return sorted(methods | {"OPTIONS"} | ({"HEAD"} if "GET" in methods else set()))

    def _not_allowed(self) -> None:
        self._started = time.perf_counter()
        allowed = self._allowed()
        if not allowed or self.command in allowed:  # a path only its route's pattern could tell apart
            self._error(
                404, "not_found", f"no route {self.command} {urlsplit(self.path).path}", {"Connection": "close"}
            )
            return
        message = f"{self.command} is not allowed on {urlsplit(self.path).path}; use {', '.join(allowed)}"
        self._error(405, "method_not_allowed", message, {"Allow": ", ".join(allowed), "Connection": "close"})

    def do_OPTIONS(self) -> None:
        self._started = time.perf_counter()
        length = self._body_length()
        if length is None:
            return
        self._read_body(length)
        allowed = self._allowed()
        if not allowed:
            self._error(404, "not_found", f"no route for {urlsplit(self.path).path}")
            return
        self._send(204, "", {"Allow": ", ".join(allowed)})

    def _read_body(self, length: int) -> bytes:
        """The body, within :data:`BODY_SECONDS` (the watchdog closes a connection that stalls)."""
        if not length:
            return b""
        self.server.watchdog.arm(self.connection, self.server.limits.body_seconds)
        try:
            return self.rfile.read(length)
        finally:
            self.server.watchdog.disarm(self.connection)

    def _dispatch(self) -> None:
        if not self.server.requests.begin():
            stopping = {"Retry-After": "1", "Connection": "close"}
            self._error(503, "shutting_down", "the server is stopping; try again shortly", stopping)
            return
        try:
            self._answer()
        finally:
            self.server.requests.end()

    def _answer(self) -> None:
        self._started = time.perf_counter()
        self.server.watchdog.disarm(self.connection)  # the headers are in
        length = self._body_length()
        if length is None:
            return
        try:
            body = self._read_body(length).decode("utf-8") or None
        except UnicodeDecodeError:  # JSON is UTF-8: a body that is not is no JSON (422, as any other)
            self._error(422, "validation_error", "the request body is not UTF-8, so it is not JSON")
            return
        head = self.command == "HEAD"
        method = "GET" if head else self.command
        authorizer = None
        if not urlsplit(self.path).path.startswith(PUBLIC_PATHS):
            authorizer = self._authorizer()
            if authorizer is None:
                self._error(401, "unauthorized", "a valid bearer token is required", {"WWW-Authenticate": "Bearer"})
                return
        headers = {k: v for k, v in self.headers.items() if k.lower() != "authorization"}
        event = build_event(method, self.path, headers, body, authorizer, self.client_address[0])
        context = LocalLambdaContext(aws_request_id=event["requestContext"]["requestId"])
        try:
            response = self.server.lambda_handler(event, context)
        except Exception as exc:
            # The type and place only: an exception's message can quote request content.
            logger.error("handler failed", error=type(exc).__name__, where=_where(exc))
            self._error(500, "internal_error", "the request failed; see the server log")
            return
        out_headers = dict(response.get("headers") or {})
        for key, values in (response.get("multiValueHeaders") or {}).items():
            out_headers[key] = ", ".join(values)
        out_headers.pop("Content-Length", None)
        status = int(response["statusCode"])
        if status == 405:  # the route exists with other methods: say which, the edge's own included
            self._not_allowed()
            return
        self._send(status, response.get("body") or "", out_headers, head=head)

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = _dispatch


def _printable(text: str) -> str:
    """``text`` with what a terminal would act on (escape sequences, NUL, line breaks) written as
    ``\\xNN``: a request's path comes from anyone, and the log is read in terminals."""
    return text if text.isprintable() else "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)


def _where(exc: BaseException) -> str:
    """``file:line`` of the innermost frame of a traceback."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}" if tb is not None else "unknown"


class _Server(ThreadingHTTPServer):
    """Holds the token book and the Lambda handler that every request's :class:`_Handler` uses,
    the watchdog of their deadlines, and the count of open connections."""

    daemon_threads = True
    request_queue_size = 128
    """The listen backlog: the default of 5 resets connections when a burst of clients connect at once."""

    def __init__(
        self,
        address: tuple[str, int],
        tokens: TokenBook,
        lambda_handler: LambdaHandler,
        request_log: TextIO | None,
        methods_for: MethodsFor,
        limits: Limits,
    ) -> None:
        self.tokens = tokens
        self.lambda_handler = lambda_handler
        self.request_log = request_log
        self.methods_for = methods_for
        self.limits = limits
        self.watchdog = Watchdog()
        self._open = 0
        self._open_lock = threading.Lock()
        self.requests = InFlight()
        super().__init__(address, _Handler)

    def drain(self, seconds: float) -> bool:
        """:meth:`InFlight.drain`: before ``episodic serve`` closes the store."""
        return self.requests.drain(seconds)

    def process_request(self, request: Any, client_address: Any) -> None:
        """A thread for the connection, or -- past the cap -- 503 at once and the connection closed."""
        with self._open_lock:
            full = self._open >= self.limits.max_connections
            if not full:
                self._open += 1
        if not full:
            super().process_request(request, client_address)
            return
        with contextlib.suppress(OSError):
            request.settimeout(1)
            request.sendall(
                json_error(503, "busy", "too many open connections; try again shortly", {"Retry-After": "1"})
            )
        self.shutdown_request(request)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._open_lock:
                self._open -= 1

    def server_close(self) -> None:
        self.watchdog.stop()
        super().server_close()


def create_server(
    host: str,
    port: int,
    tokens: TokenBook,
    lambda_handler: LambdaHandler,
    request_log: TextIO | None = None,
    methods_for: MethodsFor | None = None,
    limits: Limits | None = None,
) -> ThreadingHTTPServer:
    """The local HTTP server; ``request_log`` (``episodic serve`` passes stderr) gets one line per
    request; ``methods_for`` says which methods a path has (the REST app's routes by default)."""
    if methods_for is None:
        from episodic.entrypoints.rest import methods_for as routes_methods

        methods_for = routes_methods
    return _Server((host, port), tokens, lambda_handler, request_log, methods_for, limits or Limits())
