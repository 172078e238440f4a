"""``episodic serve``: a local HTTP server in front of the same application as the Lambda handler.

Each HTTP request becomes an API Gateway REST proxy event -- with the authorizer
context this server established from the bearer token, exactly as an API Gateway
authorizer would -- and is passed to the handler it was given
(:func:`episodic.adapters.rest.concurrent_handler` when serving: the Lambda handler's twin,
safe to call from many request threads at once). So what runs locally is what runs in Lambda,
down to the event shape.

Background work runs in-process: the embedder warms up at start, and a scheduler
thread runs the retention/review-timeout sweep every ``sweep_interval_seconds``.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TextIO
from urllib.parse import parse_qs, urlsplit

from episodic.adapters.local.tokens import TokenBook
from episodic.logs import service_logger

PUBLIC_PATHS = ("/v1/health", "/v1/swagger", "/console")
MAX_BODY_BYTES = 1_048_576
SOCKET_TIMEOUT_SECONDS = 30
DRAIN_LIMIT_BYTES = 16 * MAX_BODY_BYTES

logger = service_logger("episodic-server")

LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]


@dataclass
class LocalLambdaContext:
    """What the Lambda runtime would pass as ``context``, filled in for local calls."""

    aws_request_id: str
    function_name: str = "episodic-api-local"
    function_version: str = "$LATEST"
    invoked_function_arn: str = "arn:aws:lambda:local:000000000000:function:episodic-api-local"
    memory_limit_in_mb: int = 1024

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def build_event(
    method: str,
    raw_path: str,
    headers: dict[str, str],
    body: str | None,
    authorizer: dict[str, str] | None,
    source_ip: str = "127.0.0.1",
) -> dict[str, Any]:
    """An API Gateway REST (v1) proxy event for one local request."""
    parts = urlsplit(raw_path)
    multi_query = parse_qs(parts.query, keep_blank_values=True)
    request_id = str(uuid.uuid4())
    return {
        "resource": parts.path,
        "path": parts.path,
        "httpMethod": method,
        "headers": dict(headers),
        "multiValueHeaders": {k: [v] for k, v in headers.items()},
        "queryStringParameters": {k: v[-1] for k, v in multi_query.items()} or None,
        "multiValueQueryStringParameters": multi_query or None,
        "pathParameters": None,
        "stageVariables": None,
        "requestContext": {
            "requestId": request_id,
            "stage": "local",
            "httpMethod": method,
            "path": parts.path,
            "resourcePath": parts.path,
            "identity": {"sourceIp": source_ip},
            "authorizer": authorizer,
        },
        "body": body,
        "isBase64Encoded": False,
    }


class _Handler(BaseHTTPRequestHandler):
    """One HTTP request turned into an API Gateway event for the Lambda handler the server holds."""

    server: _Server
    server_version = "episodic-local/1"
    protocol_version = "HTTP/1.1"
    timeout = SOCKET_TIMEOUT_SECONDS  # a client that stops sending frees its thread

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes; without TCP_NODELAY, Nagle's algorithm
        # holds the body back until the client's delayed ACK (about 40 ms on every response).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("http", line=format % args)

    def _send(self, status: int, body: str, headers: dict[str, str] | None = None) -> None:
        payload = body.encode()
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        self._log_request(status)

    def _log_request(self, status: int) -> None:
        """One line per request when the server keeps a request log: time, method, path (never
        the query string, which can carry a search), status and how long it took."""
        log = self.server.request_log
        if log is None:
            return
        took = (time.perf_counter() - getattr(self, "_started", time.perf_counter())) * 1000
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        log.write(f"{now} {self.command} {urlsplit(self.path).path} {status} {took:.1f}ms\n")
        log.flush()

    def _error(self, status: int, code: str, message: str, extra: dict[str, str] | None = None) -> None:
        headers = {"Content-Type": "application/json", **(extra or {})}
        self._send(status, json.dumps({"error": code, "message": message}), headers)

    def _drain(self, length: int) -> None:
        """Read (and drop) a refused body so the client sees the 413, not a reset connection."""
        remaining = min(length, DRAIN_LIMIT_BYTES)
        self.connection.settimeout(5)
        try:
            while remaining > 0:
                chunk = self.rfile.read(min(remaining, 65536))
                if not chunk:
                    break
                remaining -= len(chunk)
        except OSError:
            pass

    def _body_length(self) -> int | None:
        """The declared body length, or None once a body that cannot be read has been refused."""
        declared = (self.headers.get("Content-Length") or "0").strip()
        if not declared.isdigit() or self.headers.get("Transfer-Encoding"):
            # Unreadable framing: the body's end is unknown, so the connection cannot be reused.
            self.close_connection = True
            self._error(
                400,
                "bad_request",
                "Content-Length must be a non-negative integer (chunked bodies are not accepted)",
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

    def _dispatch(self) -> None:
        self._started = time.perf_counter()
        length = self._body_length()
        if length is None:
            return
        body = self.rfile.read(length).decode("utf-8", errors="replace") if length else None
        authorizer = None
        if not urlsplit(self.path).path.startswith(PUBLIC_PATHS):
            authorizer = self._authorizer()
            if authorizer is None:
                self._error(401, "unauthorized", "a valid bearer token is required", {"WWW-Authenticate": "Bearer"})
                return
        headers = {k: v for k, v in self.headers.items() if k.lower() != "authorization"}
        event = build_event(self.command, self.path, headers, body, authorizer, self.client_address[0])
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
        self._send(int(response["statusCode"]), response.get("body") or "", out_headers)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _dispatch


def _where(exc: BaseException) -> str:
    """``file:line`` of the innermost frame of a traceback."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}" if tb is not None else "unknown"


class Scheduler:
    """Runs periodic jobs (the sweep, the summarisation, the decay sweep) in daemon threads.

    A job that fails is logged and tried again at its next tick; one job never blocks another.
    """

    def __init__(self, jobs: list[tuple[str, float, Callable[[], Any]]]) -> None:
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._run, args=job, name=f"episodic-{job[0]}", daemon=True) for job in jobs
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=5)

    def _run(self, name: str, interval: float, job: Callable[[], Any]) -> None:
        while not self._stop.wait(interval):
            try:
                outcome = job()
                if outcome:
                    logger.info("scheduled job", job=name, outcome=str(outcome)[:500])
            except Exception:
                logger.exception("scheduled job failed; will retry", job=name)


class _Server(ThreadingHTTPServer):
    """Holds the token book and the Lambda handler that every request's :class:`_Handler` uses."""

    daemon_threads = True
    request_queue_size = 128
    """The listen backlog: the default of 5 resets connections when a burst of clients connect at once."""

    def __init__(
        self, address: tuple[str, int], tokens: TokenBook, lambda_handler: LambdaHandler, request_log: TextIO | None
    ) -> None:
        self.tokens = tokens
        self.lambda_handler = lambda_handler
        self.request_log = request_log
        super().__init__(address, _Handler)


def create_server(
    host: str, port: int, tokens: TokenBook, lambda_handler: LambdaHandler, request_log: TextIO | None = None
) -> ThreadingHTTPServer:
    """The local HTTP server; ``request_log`` (``episodic serve`` passes stderr) gets one line per request."""
    return _Server((host, port), tokens, lambda_handler, request_log)
