"""End-to-end fixtures: the real local service behind the real local HTTP server.

Every request in these tests goes over a TCP socket to ``create_server`` (which turns it
into an API Gateway proxy event with the authorizer context), through the Powertools
resolver in :mod:`functions.api`, into a :class:`~episodic.application.service.MemoryService` wired
to SQLite, the folder archive and the REAL MiniLM embedder (``minilm``, loaded once per
session in ``tests/conftest.py``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

import functions.api
from episodic.application.service import MemoryService
from episodic.application.settings import Settings
from episodic.bootstrap.local import build_local_service
from episodic.entrypoints import rest
from episodic.entrypoints.server.http import create_server
from episodic.entrypoints.server.tokens import TokenBook, parse_tokens

AGENT_TOKEN = "agent-token-acme-000001"
OPERATOR_TOKEN = "oper-token-acme-0000001"
GLOBEX_TOKEN = "agent-token-globex-0001"
SAM_TOKEN = "agent-token-acme-sam-001"
"""An agent token of tenant acme bound to actor ``sam`` (it acts for sam only)."""
TOKEN_SPEC = (
    f"{AGENT_TOKEN}=acme:agent,{OPERATOR_TOKEN}=acme:operator,{GLOBEX_TOKEN}=globex:agent,{SAM_TOKEN}=acme:agent:sam"
)


@dataclass
class Api:
    """A tiny HTTP client: ``as_`` picks the caller ("agent", "operator", "globex", "sam" -- bound
    to actor sam -- or None)."""

    http: httpx.Client
    tokens: dict[str, str]
    service: MemoryService

    def headers(self, as_: str | None, extra: dict[str, str] | None = None) -> dict[str, str]:
        headers = dict(extra or {})
        if as_ is not None:
            headers["Authorization"] = f"Bearer {self.tokens[as_]}"
        return headers

    def request(
        self,
        method: str,
        path: str,
        *,
        as_: str | None = "agent",
        headers: dict[str, str] | None = None,
        **kw: Any,
    ) -> httpx.Response:
        return self.http.request(method, path, headers=self.headers(as_, headers), **kw)

    def get(self, path: str, **kw: Any) -> httpx.Response:
        return self.request("GET", path, **kw)

    def post(self, path: str, body: Any = None, **kw: Any) -> httpx.Response:
        return self.request("POST", path, json=body, **kw)

    def put(self, path: str, body: Any = None, **kw: Any) -> httpx.Response:
        return self.request("PUT", path, json=body, **kw)

    def delete(self, path: str, **kw: Any) -> httpx.Response:
        return self.request("DELETE", path, **kw)


@contextmanager
def serving(service: MemoryService | None, token_spec: str) -> Iterator[str]:
    """The real HTTP server and Lambda handler in a thread of this process, in front of
    ``service`` (None: the caller sets the service itself); yields the base URL."""
    if service is not None:
        functions.api.set_service(service)
    server = create_server("127.0.0.1", 0, TokenBook(parse_tokens(token_spec), "test"), rest.concurrent_handler)
    thread = threading.Thread(target=server.serve_forever, name="episodic-e2e-server", daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    try:
        yield f"http://{host}:{port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
        if service is not None:
            functions.api.set_service(None)
            service.close()


@pytest.fixture
def api(tmp_path, minilm) -> Iterator[Api]:
    service = build_local_service(Settings(data_dir=tmp_path / "e2e-data"), embedder=minilm)
    with serving(service, TOKEN_SPEC) as base_url, httpx.Client(base_url=base_url, timeout=60.0) as client:
        yield Api(
            http=client,
            tokens={"agent": AGENT_TOKEN, "operator": OPERATOR_TOKEN, "globex": GLOBEX_TOKEN, "sam": SAM_TOKEN},
            service=service,
        )
