"""The local server under many connections and broken framing.

Real sockets against the real server (see ``conftest.py``): the server runs in this process,
so its open file descriptors are this process's ``/proc/self/fd``.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from episodic.application.settings import Settings
from episodic.bootstrap.local import build_local_service
from tests.e2e.conftest import AGENT_TOKEN, GLOBEX_TOKEN, TOKEN_SPEC, serving
from tests.support.doubles import HashingTestEmbedder


def _open_files() -> int:
    return len(os.listdir("/proc/self/fd"))


def _raw(api, request: bytes, timeout: float = 10.0) -> bytes:
    host, port = api.http.base_url.host, api.http.base_url.port
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(request)
        chunks = []
        while True:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)


def _get(api, path: str) -> bytes:
    return _raw(
        api,
        f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {AGENT_TOKEN}\r\nConnection: close\r\n\r\n".encode(),
    )


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts file descriptors through /proc")
def test_given_thousands_of_connections_when_served_then_open_files_do_not_grow_with_them(api):
    assert api.post("/v1/episodes", _episode()).status_code == 201

    def connections(count: int) -> list[bytes]:
        with ThreadPoolExecutor(max_workers=16) as pool:
            return list(pool.map(lambda _: _get(api, "/v1/timeline?actorId=customer-42"), range(count)))

    # Warm up at the same concurrency: the reader pool fills to what it keeps idle (a few files per
    # SQLite connection), which is bounded, not what is measured.
    assert all(a.startswith(b"HTTP/1.1 200") for a in connections(200))
    time.sleep(0.2)  # let the last handler threads finish
    before = _open_files()
    answers = connections(2000)
    assert all(a.startswith(b"HTTP/1.1 200") for a in answers)
    grown = _open_files() - before
    for _ in range(50):  # the last handler threads may still be closing their sockets
        if grown < 20:
            break
        time.sleep(0.1)
        grown = _open_files() - before
    assert grown < 20, f"{grown} more files open after 2,000 connections"


def test_given_a_non_numeric_content_length_when_sent_then_the_answer_is_400_not_a_dropped_connection(api):
    answer = _raw(
        api,
        b"POST /v1/recall HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + AGENT_TOKEN.encode() + b"\r\n"
        b"Content-Type: application/json\r\nContent-Length: abc\r\n\r\n{}",
    )
    assert answer.startswith(b"HTTP/1.1 400")


def test_given_a_negative_content_length_when_sent_then_the_answer_is_400_at_once(api):
    started = time.monotonic()
    answer = _raw(
        api,
        b"POST /v1/recall HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + AGENT_TOKEN.encode() + b"\r\n"
        b"Content-Type: application/json\r\nContent-Length: -1\r\n\r\n{}",
        timeout=20,
    )
    assert answer.startswith(b"HTTP/1.1 400")
    assert time.monotonic() - started < 5  # answered, not held until the client gives up


def test_given_a_chunked_body_when_sent_then_it_is_refused_rather_than_misread(api):
    answer = _raw(
        api,
        b"POST /v1/recall HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + AGENT_TOKEN.encode() + b"\r\n"
        b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    )
    assert answer.startswith(b"HTTP/1.1 400")


def _episode() -> dict:
    return {
        "eventType": "user_preference_stated",
        "actorId": "customer-42",
        "occurredAt": "2026-11-28T09:30:00Z",
        "summary": "Customer wants invoices as PDF, in Portuguese",
        "sourceRefs": ["chat:session-9/turn-4"],
        "sourceTrust": "user_provided",
    }


@pytest.fixture
def fast_server(tmp_path) -> Iterator[str]:
    """The real server and handler over SQLite with the hashing test double for embeddings: the
    race below needs many requests in flight, not the real model."""
    service = build_local_service(Settings(data_dir=tmp_path / "race"), embedder=HashingTestEmbedder())
    with serving(service, TOKEN_SPEC) as base_url:
        yield base_url


@pytest.mark.parametrize("requests", [6000, pytest.param(20000, marks=pytest.mark.fuzz)])
def test_given_two_tenants_hammering_at_once_when_served_then_every_answer_is_for_its_own_caller(fast_server, requests):
    """Powertools keeps the request being served in process-wide state: two requests resolved at
    once could swap callers or bodies (before the first fix this run saw a 422 or a 500 a few times
    in 6,000 requests). The resolver now keeps each request's state per thread and serves them at
    once (``entrypoints/rest/resolver.py``)."""
    tokens = {"acme": AGENT_TOKEN, "globex": GLOBEX_TOKEN}
    clients = threading.local()

    def call(tenant: str, method: str, path: str, body: dict | None = None) -> httpx.Response:
        if not hasattr(clients, "http"):  # a keep-alive connection per worker: 16 requests in flight
            clients.http = httpx.Client(base_url=fast_server, timeout=30)
        return clients.http.request(method, path, json=body, headers={"Authorization": f"Bearer {tokens[tenant]}"})

    acme = call("acme", "POST", "/v1/episodes", _episode()).json()["eventId"]
    globex = call("globex", "POST", "/v1/episodes", _episode() | {"summary": "Globex wants quotes in euros"})
    globex_id = globex.json()["eventId"]
    own = {"acme": acme, "globex": globex_id}

    def one(n: int) -> str | None:
        tenant = ("acme", "globex")[n % 2]
        other = own["globex" if tenant == "acme" else "acme"]
        kind = n % 3
        if kind == 0:
            response = call(tenant, "POST", "/v1/recall", {"query": "invoices quotes", "actorId": "customer-42"})
            ok = response.status_code == 200 and own[tenant] in response.text and other not in response.text
        elif kind == 1:
            response = call(tenant, "GET", f"/v1/episodes/{other}")
            ok = response.status_code == 404 and response.json()["error"] == "not_found"
        else:
            response = call(tenant, "GET", "/v1/timeline")
            ok = response.status_code == 200 and own[tenant] in response.text and other not in response.text
        return None if ok else f"{tenant} #{n}: {response.status_code} {response.text[:200]}"

    with ThreadPoolExecutor(max_workers=16) as pool:
        problems = [p for p in pool.map(one, range(requests)) if p]
    assert problems == []
