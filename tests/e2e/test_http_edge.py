"""The local HTTP edge, sent what a careless client or an attacker sends: every answer is a 4xx
in the API's JSON shape (never a 5xx, never http.server's HTML page), and no client can hold a
connection or the server past its deadlines.

Real sockets against the real server in this process. The deadline tests give the server short
deadlines (``Limits``) and check what happened -- a 408, a closed connection, a 503 -- never how
long it took.
"""

from __future__ import annotations

import io
import json
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import httpx
import pytest

import functions.api
from benchmarks import pathological
from episodic.application.settings import Settings
from episodic.bootstrap.local import build_local_service
from episodic.entrypoints import rest
from episodic.entrypoints.server.edge import Limits
from episodic.entrypoints.server.http import create_server
from episodic.entrypoints.server.tokens import TokenBook, parse_tokens
from tests.e2e.conftest import AGENT_TOKEN, TOKEN_SPEC
from tests.support.doubles import HashingTestEmbedder

SHORT = Limits(idle_seconds=1.0, headers_seconds=0.5, body_seconds=0.5, max_connections=4)


@contextmanager
def edge(tmp_path, limits: Limits = SHORT, log: io.StringIO | None = None) -> Iterator[tuple[str, int]]:
    service = build_local_service(Settings(data_dir=tmp_path / "edge"), embedder=HashingTestEmbedder())
    functions.api.set_service(service)
    tokens = TokenBook(parse_tokens(TOKEN_SPEC), "test")
    server = create_server("127.0.0.1", 0, tokens, rest.concurrent_handler, request_log=log, limits=limits)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[:2]
    finally:
        server.shutdown()
        server.server_close()
        functions.api.set_service(None)
        service.close()


@pytest.fixture
def address(tmp_path) -> Iterator[tuple[str, int]]:
    with edge(tmp_path) as where:
        yield where


def exchange(address: tuple[str, int], request: bytes, wait: float = 10.0) -> bytes:
    """Send ``request`` and read until the server closes the connection (or ``wait`` passes)."""
    with socket.create_connection(address, timeout=wait) as sock:
        sock.sendall(request)
        return read_all(sock)


def read_all(sock: socket.socket) -> bytes:
    chunks = []
    while True:
        try:
            chunk = sock.recv(65536)
        except (TimeoutError, ConnectionResetError):
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def status_and_body(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, body


def request(method: str, path: str, body: bytes = b"", **headers: str) -> bytes:
    """A request as bytes, with the agent's token unless ``Authorization`` is given."""
    headers = {"Authorization": f"Bearer {AGENT_TOKEN}", "Connection": "close", **headers}
    lines = [f"{method} {path} HTTP/1.1", "Host: x", *(f"{k.replace('_', '-')}: {v}" for k, v in headers.items())]
    if body or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def json_error(raw: bytes, status: int) -> dict[str, str]:
    code, headers, body = status_and_body(raw)
    assert code == status, raw[:400]
    assert headers["content-type"] == "application/json", headers
    error = dict(json.loads(body))
    assert error["error"] and error["message"], error
    return error


# ---------------------------------------------------------------------------- methods


@pytest.mark.parametrize("method", ["TRACE", "QUERY", "CONNECT", "PROPFIND", "LINK", "BREW"])
def test_given_a_method_no_route_has_when_sent_then_405_lists_the_allowed_ones(address, method):
    raw = exchange(address, request(method, "/v1/timeline"))
    assert json_error(raw, 405)["error"] == "method_not_allowed"
    assert status_and_body(raw)[1]["allow"] == "GET, HEAD, OPTIONS"
    assert json_error(exchange(address, request(method, "/v1/nowhere")), 404)["error"] == "not_found"


def test_given_a_method_of_another_route_when_sent_then_405_names_the_edges_methods_too(address):
    raw = exchange(address, request("PUT", "/v1/episodes"))
    assert json_error(raw, 405)["error"] == "method_not_allowed"
    assert status_and_body(raw)[1]["allow"] == "OPTIONS, POST"


def test_given_head_where_get_exists_when_sent_then_the_get_answer_comes_without_its_body(address):
    get_status, get_headers, get_body = status_and_body(exchange(address, request("GET", "/v1/health")))
    head_status, head_headers, head_body = status_and_body(exchange(address, request("HEAD", "/v1/health")))
    assert (head_status, head_body) == (get_status, b"")
    assert head_headers["content-length"] == str(len(get_body)) == get_headers["content-length"]
    assert status_and_body(exchange(address, request("HEAD", "/v1/timeline", Authorization="Bearer nope")))[0] == 401


def test_given_options_when_sent_then_allow_is_listed_and_no_cors_is_granted(address):
    code, headers, body = status_and_body(exchange(address, request("OPTIONS", "/v1/episodes/batch")))
    assert (code, body) == (204, b"")
    assert headers["allow"] == "OPTIONS, POST"
    assert not [k for k in headers if k.startswith("access-control-")]
    assert status_and_body(exchange(address, request("OPTIONS", "/v1/swagger")))[1]["allow"] == "GET, HEAD, OPTIONS"


# ---------------------------------------------------------------------------- bodies and framing


@pytest.mark.parametrize("media_type", ["text/plain", "multipart/form-data", "application/x-www-form-urlencoded"])
@pytest.mark.parametrize("path", ["/v1/episodes", "/v1/recall"])
def test_given_an_empty_body_of_another_media_type_when_posted_then_415(address, media_type, path):
    assert json_error(exchange(address, request("POST", path, Content_Type=media_type)), 415)


def test_given_an_empty_json_body_when_posted_then_422(address):
    assert json_error(exchange(address, request("POST", "/v1/recall", Content_Type="application/json")), 422)


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (b"GET /v1/health HTTP/2.0\r\nHost: x\r\n\r\n", 400),  # http.server says 505
        (b"NONSENSE\r\n\r\n", 400),
        (b"GET /v1/health HTTP/1.1 extra\r\n\r\n", 400),
        (b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n", 414),
        (b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Long: " + b"b" * 70_000 + b"\r\n\r\n", 431),
        (b"GET /v1/health HTTP/1.1\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(120)) + b"\r\n", 431),
        (b"GET /v1/health\r\n\r\n", 400),  # HTTP/0.9: no status line to answer with
        (b"GET /v1/health HTTP/1.1\r\nHost: x\r\nNoColonHere\r\n\r\n", 400),
        (b"POST /v1/recall HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 40\r\n\r\n{}", 400),
    ],
)
def test_given_a_malformed_request_when_sent_then_a_json_4xx_and_the_connection_closes(address, raw, status):
    assert json_error(exchange(address, raw), status)


def test_given_a_malformed_header_line_before_the_narrowing_header_then_400_not_a_tenant_wide_answer(address):
    """The parser would take a line with no colon, and every line after it, for the body: the
    request would run without the headers that followed, ``X-Episodic-Actor`` among them."""
    raw = (
        f"GET /v1/whoami HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {AGENT_TOKEN}\r\nBadHeaderLine\r\n"
        "X-Episodic-Actor: sam\r\nConnection: close\r\n\r\n"
    ).encode()
    assert json_error(exchange(address, raw), 400)["error"] == "bad_request"
    whoami = request("GET", "/v1/whoami", X_Episodic_Actor="sam")
    assert json.loads(status_and_body(exchange(address, whoami))[2])["actors"] == ["sam"]  # well formed, narrowed


@pytest.mark.parametrize(
    "head",
    [
        f"Authorization: Bearer {AGENT_TOKEN}\rX-Episodic-Actor: sam\r\n",  # a second header inside the first
        f"X-Note: hi\rAuthorization: Bearer {AGENT_TOKEN}\r\n",  # a credential inside another header
    ],
)
def test_given_a_bare_cr_inside_a_header_line_then_400_as_a_proxy_may_read_the_line_otherwise(address, head):
    raw = f"GET /v1/whoami HTTP/1.1\r\nHost: x\r\n{head}Connection: close\r\n\r\n".encode()
    assert json_error(exchange(address, raw), 400)["error"] == "bad_request"


@pytest.mark.parametrize(
    "repeated",
    [
        f"Authorization: Bearer {AGENT_TOKEN}\r\nAuthorization: Bearer unknown-token-00000",
        "X-Episodic-Actor: sam\r\nx-episodic-actor: ana",
    ],
)
def test_given_a_header_that_says_who_is_asking_twice_when_sent_then_400(address, repeated):
    """Which of two credentials, or two narrowings, a request meant is not guessed."""
    raw = f"GET /v1/whoami HTTP/1.1\r\nHost: x\r\n{repeated}\r\nConnection: close\r\n\r\n".encode()
    assert json_error(exchange(address, raw), 400)["error"] == "bad_request"


def test_given_a_body_declared_far_over_the_limit_when_it_never_comes_then_413_without_waiting_for_it(address):
    """The read socket gives up after 3 s; draining the declared body would hold the answer 5 s."""
    raw = request("POST", "/v1/recall", Content_Type="application/json").replace(
        b"Content-Length: 0", b"Content-Length: 2000000000"
    )
    assert json_error(exchange(address, raw, wait=3.0), 413)["error"] == "payload_too_large"


def test_given_a_refused_body_that_trickles_in_when_drained_then_the_413_comes_all_the_same(address):
    """A byte a second never lets the drain's reads time out; its whole time is bounded instead
    (the client gives up reading after 15 s, while it trickles for 30)."""
    raw = request("POST", "/v1/recall", Content_Type="application/json").replace(
        b"Content-Length: 0", b"Content-Length: 2000000"
    )
    with socket.create_connection(address, timeout=15) as sock:
        sock.sendall(raw)
        stop = threading.Event()

        def trickle() -> None:
            while not stop.wait(1.0):
                try:
                    sock.sendall(b"x")
                except OSError:
                    return

        threading.Thread(target=trickle, daemon=True).start()
        try:
            answer = read_all(sock)  # the 413 closes the connection
        finally:
            stop.set()
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]


def test_given_a_body_that_is_not_utf8_when_posted_then_422_and_nothing_is_stored(address):
    body = b'{"eventType": "user_preference_stated", "actorId": "sam", "summary": "prefers tea \xff\xfe", ' + (
        b'"occurredAt": "2026-12-06T10:00:00Z", "sourceRefs": ["chat:1"], "sourceTrust": "user_provided"}'
    )
    raw = exchange(address, request("POST", "/v1/episodes", body, Content_Type="application/json"))
    assert "UTF-8" in json_error(raw, 422)["message"]
    timeline = exchange(address, request("GET", "/v1/timeline"))
    assert json.loads(status_and_body(timeline)[2])["items"] == []


def test_given_a_path_only_its_routes_pattern_refuses_when_sent_then_404_not_405(address):
    raw = exchange(address, request("GET", "/v1/episodes/\u00e9").decode().encode("utf-8"))
    assert json_error(raw, 404)["error"] == "not_found"


def test_given_a_request_log_when_an_unreadable_request_comes_then_it_is_answered_and_logged(tmp_path):
    log = io.StringIO()
    with edge(tmp_path, log=log) as address:
        assert json_error(exchange(address, b"NONSENSE\r\n\r\n"), 400)
        assert json_error(exchange(address, b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n"), 414)
    lines = log.getvalue().splitlines()
    assert [line.split()[3] for line in lines] == ["400", "414"]


def test_given_a_path_with_terminal_escapes_when_logged_then_the_log_holds_none_of_them(tmp_path):
    """Anyone may send a path; the request log is read in terminals."""
    log = io.StringIO()
    with edge(tmp_path, log=log) as address:
        raw = exchange(address, b"GET /v1/\x1b[31mRED\x1b[0m\x00x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert status_and_body(raw)[0] in (400, 401, 404)
    (line,) = log.getvalue().splitlines()
    assert line.isprintable() and "\\x1b[31mRED\\x1b[0m\\x00x" in line


# ---------------------------------------------------------------------------- deadlines and the cap


def test_given_headers_that_trickle_in_when_their_deadline_passes_then_408_and_the_connection_closes(address):
    with socket.create_connection(address, timeout=10) as sock:
        sock.sendall(b"GET /v1/health HTTP/1.1\r\n")
        answer = b""
        for _ in range(100):  # one header byte every 0.05 s: never a stall long enough for a timeout
            try:
                sock.sendall(b"X")
            except OSError:  # the server closed the connection
                break
            time.sleep(0.05)
        answer = read_all(sock)
    assert json_error(answer, 408)["error"] == "request_timeout"


def test_given_a_body_shorter_than_its_content_length_when_sent_then_408_not_a_held_thread(address):
    head = request("POST", "/v1/recall", Content_Type="application/json").replace(
        b"Content-Length: 0", b"Content-Length: 100"
    )
    assert json_error(exchange(address, head + b'{"query": '), 408)["error"] == "request_timeout"


def test_given_an_idle_keep_alive_connection_when_idle_too_long_then_it_is_closed_quietly(address):
    with socket.create_connection(address, timeout=10) as sock:
        sock.sendall(request("GET", "/v1/health", Connection="keep-alive"))
        first = sock.recv(65536)
        while b"\r\n\r\n" not in first:
            first += sock.recv(65536)
        code, headers, body = status_and_body(first)
        while len(body) < int(headers["content-length"]):
            body += sock.recv(65536)
        assert code == 200
        assert read_all(sock) == b""  # closed, after the idle time, with nothing more said


def test_given_the_connection_cap_when_one_more_client_connects_then_503_at_once_and_room_again_later(address):
    idle = [socket.create_connection(address, timeout=10) for _ in range(SHORT.max_connections)]
    try:
        time.sleep(0.2)  # the server has accepted them all
        answer = exchange(address, request("GET", "/v1/health"))
        assert json_error(answer, 503)["error"] == "busy"
        assert status_and_body(answer)[1]["retry-after"] == "1"
    finally:
        for sock in idle:
            sock.close()
    for _ in range(50):  # the server notices the closed connections
        if status_and_body(exchange(address, request("GET", "/v1/health")))[0] == 200:
            break
        time.sleep(0.1)
    else:
        pytest.fail("the server never took a connection again")


def test_given_slow_clients_when_another_client_asks_then_it_is_answered(address):
    stalled = [socket.create_connection(address, timeout=10) for _ in range(SHORT.max_connections - 1)]
    try:
        for sock in stalled:
            sock.sendall(b"POST /v1/recall HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
        response = httpx.get(f"http://{address[0]}:{address[1]}/v1/health", timeout=10)
        assert response.status_code == 200
    finally:
        for sock in stalled:
            sock.close()


def test_given_the_costliest_write_when_it_runs_then_health_is_answered_meanwhile(tmp_path):
    """A 1 MiB batch of the policy's worst shape (``benchmarks/pathological.py``; the benchmark
    times both sides): /v1/health, asked again and again on another connection, gets answers
    while the write is still being judged -- one request's policy work stops nobody else."""
    worst = pathological.proposal_body(pathological.KNOWN_WORST[1], 60 * 1024)
    items = [dict(worst, actorId=f"p{n}") for n in range(15)]
    with edge(tmp_path, Limits()) as (host, port):
        base = f"http://{host}:{port}"
        finished = threading.Event()
        answered_meanwhile = 0

        def write() -> None:
            with httpx.Client(base_url=base, timeout=300) as writer:
                response = writer.post("/v1/episodes/batch", json={"episodes": items},
                                       headers={"Authorization": f"Bearer {AGENT_TOKEN}"})  # fmt: skip
                assert response.status_code == 200, response.text
            finished.set()

        thread = threading.Thread(target=write)
        thread.start()
        with httpx.Client(base_url=base, timeout=60) as checker:
            while not finished.is_set():
                assert checker.get("/v1/health").status_code == 200
                answered_meanwhile += not finished.is_set()
        thread.join()
    assert answered_meanwhile >= 3


# ---------------------------------------------------------------------------- stopping


@contextmanager
def serving(handler) -> Iterator[tuple[object, str]]:
    """The HTTP server in front of ``handler`` (a Lambda handler of the test's), and its address."""
    server = create_server("127.0.0.1", 0, TokenBook(parse_tokens(TOKEN_SPEC), "test"), handler, limits=SHORT)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server, "http://{}:{}".format(*server.server_address[:2])
    finally:
        server.shutdown()
        server.server_close()


def test_given_a_request_in_flight_when_the_server_drains_then_it_is_answered_and_new_ones_are_told_503():
    """What ``episodic serve`` does on SIGTERM before it closes the store: a request cut off by the
    close would fail with a 500, so the ones being answered finish, and new ones are refused."""
    entered, release = threading.Event(), threading.Event()

    def slow_handler(event, context):
        entered.set()
        release.wait(30)
        return {"statusCode": 200, "headers": {"Content-Type": "application/json"}, "body": '{"ok": true}'}

    with serving(slow_handler) as (server, base), ThreadPoolExecutor(2) as pool:
        try:
            first = pool.submit(httpx.get, f"{base}/v1/health", timeout=30)
            assert entered.wait(30)
            drained = pool.submit(server.drain, 30)
            while not server.requests.draining:
                time.sleep(0.01)
            refused = httpx.get(f"{base}/v1/health", timeout=30)
            assert refused.status_code == 503 and refused.json()["error"] == "shutting_down"
            assert refused.headers["Retry-After"] == "1" and refused.headers["Connection"] == "close"
            assert not drained.done(), "the drain waits for the request being answered"
            release.set()
            assert first.result().status_code == 200 and first.result().json() == {"ok": True}
            assert drained.result() is True
        finally:
            release.set()


def test_given_a_request_that_outlasts_the_drain_when_the_server_drains_then_it_says_so():
    release = threading.Event()

    def stuck_handler(event, context):
        release.wait(30)
        return {"statusCode": 200, "body": "{}"}

    with serving(stuck_handler) as (server, base), ThreadPoolExecutor(1) as pool:
        try:
            pending = pool.submit(httpx.get, f"{base}/v1/health", timeout=30)
            while not server.requests.busy():
                time.sleep(0.01)
            assert server.drain(0.2) is False
            release.set()
            assert pending.result().status_code == 200
        finally:
            release.set()
