"""The served OpenAPI document, fuzzed over real HTTP; and hand-written malformed-input probes.

Schemathesis (4.x API) loads the document the server itself serves at
``GET /v1/swagger?format=json`` and generates requests -- valid ones (positive) and ones that
break the schema (negative) -- for every operation. Each goes over a TCP socket to the real
local server (SQLite, the real MiniLM model) with a tenant's agent token, and again with its
operator token; some path ids are replaced by ids of episodes that exist, so corrections,
feedback, erasure and restore get past 404. Every response must:

* not be a 5xx (``not_a_server_error``);
* carry a status code the document lists for that operation (``status_code_conformance``);
* match the documented content type and JSON schema (``content_type_conformance``,
  ``response_schema_conformance``).

Failures are collected over the whole run, one per (operation, status, check), each with
the shortest curl command that produced it, and reported together at the end -- so one run
lists everything that is wrong instead of stopping at the first case.

The probes below send, by hand, the malformed inputs likeliest to reach a 5xx -- calendar-edge
offset datetimes, out-of-range time phrases, well-formed cursors of the wrong shape, deeply
nested and huge-number bodies, a multipart type without a boundary, a thousand ``tag=``
parameters, and raw-socket requests with a bad ``Content-Length`` -- and each must get a
4xx: never a 5xx, never a dropped connection, never a held thread.

Tiers: the default run generates 80 cases per role (160 in all, derandomized); the
``fuzz``-marked test (``HYPOTHESIS_PROFILE=fuzz``) generates 600 per role (1,200).
"""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import requests
import schemathesis
from hypothesis import given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from episodic.application.service import MemoryService
from episodic.application.settings import Settings
from episodic.bootstrap.local import build_local_service
from tests.e2e.conftest import serving
from tests.support.fuzzing import FUZZ_SELECTED

pytestmark = pytest.mark.slow

# ---------------------------------------------------------------------------- tiers (tests/support/fuzzing.py)

DEFAULT_CASES_PER_ROLE = 80
FUZZ_CASES_PER_ROLE = 600

# ---------------------------------------------------------------------------- the server

AGENT_TOKEN = "fuzz-agent-token-0000001"
OPERATOR_TOKEN = "fuzz-oper-token-00000001"
TOKENS = {"agent": AGENT_TOKEN, "operator": OPERATOR_TOKEN}
TOKEN_SPEC = f"{AGENT_TOKEN}=fuzzco:agent,{OPERATOR_TOKEN}=fuzzco:operator"
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@dataclass
class Target:
    base_url: str
    http: httpx.Client
    service: MemoryService
    document: dict[str, Any]
    known_ids: list[str] = field(default_factory=list)

    def auth(self, role: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {TOKENS[role]}"}


def seed_episodes(target: Target, count: int = 6) -> None:
    """Episodes that exist, so that generated requests on ids can reach past the 404."""
    for n in range(count):
        body = {
            "eventType": "task_milestone",
            "actorId": f"fuzz-actor-{n % 2}",
            "occurredAt": f"2026-11-{10 + n:02d}T09:00:00Z",
            "summary": f"Release 3.{n} of the fuzzing harness service shipped to production after review",
            "sourceRefs": [f"ci:pipeline/{900 + n}"],
            "sourceTrust": "tool_result",
            "tags": ["deploy"],
        }
        response = target.http.post("/v1/episodes", json=body, headers=target.auth("agent"))
        assert response.status_code == 201, response.text
        target.known_ids.append(response.json()["eventId"])


@pytest.fixture(scope="module")
def target(tmp_path_factory, minilm) -> Iterator[Target]:
    service = build_local_service(Settings(data_dir=tmp_path_factory.mktemp("openapi-fuzz") / "data"), embedder=minilm)
    with serving(service, TOKEN_SPEC) as base_url, httpx.Client(base_url=base_url, timeout=60.0) as http:
        document = http.get("/v1/swagger", params={"format": "json"})
        assert document.status_code == 200, document.text
        state = Target(base_url=base_url, http=http, service=service, document=document.json())
        seed_episodes(state)
        yield state


# ---------------------------------------------------------------------------- the schema-driven run


@dataclass
class Findings:
    """Distinct failures of a run: one per (operation, status, failure kind), shortest reproducer kept."""

    cases: int = 0
    statuses: dict[str, set[int]] = field(default_factory=dict)
    failures: dict[tuple[str, str, str], tuple[str, str]] = field(default_factory=dict)

    def record(self, operation: str, status: str, kind: str, message: str, curl: str) -> None:
        key = (operation, status, kind)
        if key not in self.failures or len(curl) < len(self.failures[key][1]):
            self.failures[key] = (message, curl)

    def report(self) -> str:
        lines = [f"{len(self.failures)} distinct failure(s) in {self.cases} generated cases:"]
        for (operation, status, kind), (message, curl) in sorted(self.failures.items()):
            lines.append(f"- {operation} -> {status}: {kind}\n    {message}\n    {curl}")
        return "\n".join(lines)


def failure_kinds(error: BaseException) -> list[tuple[str, str]]:
    """(title, first line of message) for each failure a check raised."""
    if isinstance(error, BaseExceptionGroup):
        return [kind for inner in error.exceptions for kind in failure_kinds(inner)]
    title = getattr(error, "title", None) or type(error).__name__
    message = (getattr(error, "message", None) or str(error)).strip().splitlines()
    return [(title, message[0][:300] if message else "")]


def load_schema(target: Target) -> Any:
    return schemathesis.openapi.from_dict(target.document)


def fuzz(target: Target, role: str, cases: int) -> Findings:
    """Generate ``cases`` requests (positive and negative) across every operation as ``role``."""
    schema = load_schema(target)
    strategy = st.one_of(schema.as_strategy(GenerationMode.POSITIVE), schema.as_strategy(GenerationMode.NEGATIVE))
    findings = Findings()
    session = requests.Session()
    headers = target.auth(role)

    @settings(max_examples=cases)
    @given(case=strategy, known=st.integers(0, 3 * len(target.known_ids) - 1))
    def run(case: Any, known: int) -> None:
        findings.cases += 1
        path_parameters = case.path_parameters or {}
        if "eventId" in path_parameters and known < len(target.known_ids):
            case.path_parameters = {**path_parameters, "eventId": target.known_ids[known]}
        label = case.operation.label
        curl = case.as_curl_command(headers=headers, base_url=target.base_url)
        try:
            response = case.call(base_url=target.base_url, session=session, headers=headers, timeout=60)
        except requests.RequestException as exc:  # a dropped connection or a hung request
            findings.record(label, "no answer", type(exc).__name__, str(exc)[:300], curl)
            return
        findings.statuses.setdefault(label, set()).add(response.status_code)
        try:
            case.validate_response(response, checks=CHECKS, headers=headers)
        except (AssertionError, BaseExceptionGroup) as error:
            for title, message in failure_kinds(error):
                findings.record(label, str(response.status_code), title, message, curl)
        if label == "PUT /v1/admin/writes":
            # the kill-switch answers writes with 503 by design: switch it back on, so that any
            # other 503 is a failure
            back_on = target.http.put("/v1/admin/writes", json={"enabled": True}, headers=target.auth("operator"))
            assert back_on.status_code == 200, back_on.text

    try:
        run()
    finally:
        session.close()
    return findings


def assert_clean(findings: Findings, expected_cases: int) -> None:
    assert findings.cases >= expected_cases * 0.9, f"only {findings.cases} cases were generated"
    assert not findings.failures, findings.report()
    # the run was spread over the API and got both through to the service and refused
    assert len(findings.statuses) >= 10, findings.statuses
    seen = set().union(*findings.statuses.values())
    assert seen & {200, 201, 202} and seen & {404, 422}, findings.statuses


@pytest.mark.parametrize("role", ["agent", "operator"])
def test_given_the_served_openapi_document_when_fuzzing_every_operation_then_responses_conform(
    target: Target, role: str
) -> None:
    findings = fuzz(target, role, DEFAULT_CASES_PER_ROLE)

    assert_clean(findings, DEFAULT_CASES_PER_ROLE)


@pytest.mark.fuzz
@pytest.mark.skipif(not FUZZ_SELECTED, reason="fuzz tier: run with HYPOTHESIS_PROFILE=fuzz (make test-fuzz)")
@pytest.mark.parametrize("role", ["agent", "operator"])
def test_given_the_served_openapi_document_when_fuzzing_at_length_then_responses_conform(
    target: Target, role: str
) -> None:
    findings = fuzz(target, role, FUZZ_CASES_PER_ROLE)

    assert_clean(findings, FUZZ_CASES_PER_ROLE)


# ---------------------------------------------------------------------------- every method, by schemathesis

METHOD_CHECKS = "not_a_server_error,unsupported_method,allow_header_conformance"
"""No 5xx; a method the document does not list gets 405; ``Allow`` names what it does list."""


def schemathesis_cli(target: Target, role: str | None, phases: str, examples: int) -> subprocess.CompletedProcess[str]:
    """``schemathesis run`` against the served document: its coverage phase sends every operation
    the methods it does not have too (TRACE, QUERY, OPTIONS, ...), and bodies of every kind."""
    command = [
        str(Path(sys.executable).parent / "schemathesis"), "run", f"{target.base_url}/v1/swagger?format=json",
        "--url", target.base_url, f"--phases={phases}", "--checks", METHOD_CHECKS,
        "--max-examples", str(examples), "--generation-deterministic", "--no-color",
        # the kill-switch answers every later write with 503 by design; the schema-driven run above covers it
        "--exclude-path", "/v1/admin/writes",
    ]  # fmt: skip
    if role is not None:
        command += ["--header", f"Authorization: Bearer {TOKENS[role]}"]
    with tempfile.TemporaryDirectory() as scratch:  # where the CLI keeps its own files
        return subprocess.run(command, capture_output=True, text=True, timeout=900, check=False, cwd=scratch)


@pytest.mark.parametrize("role", ["agent", "operator", None])
def test_given_every_operation_asked_with_every_method_when_served_then_never_a_5xx_and_405_with_allow(
    target: Target, role: str | None
) -> None:
    done = schemathesis_cli(target, role, "coverage", 20)
    assert done.returncode == 0, done.stdout[-6000:]
    assert " passed" in done.stdout and "generated" in done.stdout


@pytest.mark.fuzz
@pytest.mark.skipif(not FUZZ_SELECTED, reason="fuzz tier: run with HYPOTHESIS_PROFILE=fuzz (make test-fuzz)")
@pytest.mark.parametrize("role", ["agent", "operator"])
def test_given_every_method_and_generated_bodies_at_length_when_served_then_never_a_5xx(
    target: Target, role: str
) -> None:
    done = schemathesis_cli(target, role, "coverage,fuzzing", 200)
    assert done.returncode == 0, done.stdout[-6000:]


def test_given_a_response_the_document_does_not_list_when_validated_then_the_checks_fail(target: Target) -> None:
    """The checks bite: with 200 struck from the health route's documented answers, a 200 fails."""
    document = json.loads(json.dumps(target.document))
    responses = document["paths"]["/v1/health"]["get"]["responses"]
    responses.pop("200")
    responses.setdefault("503", {"description": "down"})
    case = schemathesis.openapi.from_dict(document)["/v1/health"]["GET"].Case()
    response = case.call(base_url=target.base_url)

    assert response.status_code == 200
    with pytest.raises((AssertionError, BaseExceptionGroup)) as raised:
        case.validate_response(response, checks=CHECKS)
    assert any("status code" in message.lower() or "status" in title.lower() for title, message in
               failure_kinds(raised.value))  # fmt: skip


# ---------------------------------------------------------------------------- hand-written probes

CLIENT_ERROR = range(400, 500)


def episode(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "eventType": "task_milestone",
        "actorId": "probe-actor",
        "occurredAt": "2026-11-28T09:30:00Z",
        "summary": "Release 9.1 of the probe service shipped to production after the canary stage",
        "sourceRefs": ["ci:pipeline/77"],
        "sourceTrust": "tool_result",
    }
    body.update(overrides)
    return body


def assert_client_error(response: httpx.Response, what: str) -> None:
    assert response.status_code in CLIENT_ERROR, f"{what} -> {response.status_code} {response.text[:300]}"
    assert response.headers.get("content-type", "").startswith("application/json"), response.headers
    assert "error" in response.json(), response.text


CALENDAR_EDGES = ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"]


@pytest.mark.parametrize("value", CALENDAR_EDGES)
def test_given_a_calendar_edge_offset_datetime_when_sent_anywhere_then_4xx(target: Target, value: str) -> None:
    agent, operator = target.auth("agent"), target.auth("operator")
    archived_or_not = target.known_ids[0]
    probes = {
        "POST /v1/episodes occurredAt": target.http.post("/v1/episodes", json=episode(occurredAt=value), headers=agent),
        "POST /v1/episodes retention.expiresAt": target.http.post(
            "/v1/episodes", json=episode(retention={"expiresAt": value}), headers=agent
        ),
        "GET /v1/timeline after": target.http.get("/v1/timeline", params={"after": value}, headers=agent),
        "GET /v1/timeline before": target.http.get("/v1/timeline", params={"before": value}, headers=agent),
        "POST /v1/recall occurredBefore": target.http.post(
            "/v1/recall", json={"query": "release", "occurredBefore": value}, headers=agent
        ),
        "POST /v1/recall occurredAfter": target.http.post("/v1/recall", json={"occurredAfter": value}, headers=agent),
        "POST /v1/episodes/{id}/restore expiresAt": target.http.post(
            f"/v1/episodes/{archived_or_not}/restore", json={"expiresAt": value}, headers=operator
        ),
        "POST /v1/episodes/{unknown}/restore expiresAt": target.http.post(
            "/v1/episodes/01JUNKNOWNEVENT0000000000/restore", json={"expiresAt": value}, headers=operator
        ),
    }
    for what, response in probes.items():
        assert_client_error(response, f"{what}={value}")


@pytest.mark.parametrize(
    "query", ["what shipped in the last 99999999 days", "releases in december 9999", "deploys since october 0000"]
)
def test_given_an_out_of_range_time_phrase_when_recalling_then_no_5xx(target: Target, query: str) -> None:
    """A phrase with no representable window is refused (4xx) or read as plain words (200); never a 5xx."""
    response = target.http.post("/v1/recall", json={"query": query}, headers=target.auth("agent"))

    assert response.status_code == 200 or response.status_code in CLIENT_ERROR, (
        f"POST /v1/recall {json.dumps({'query': query})} -> {response.status_code} {response.text[:300]}"
    )
    assert response.headers.get("content-type", "").startswith("application/json")
    body = response.json()
    assert isinstance(body["items"], list) if response.status_code == 200 else "error" in body, body


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


WRONG_SHAPE_CURSORS = ["W10", "WyJ4Il0", b64(b"[null,null]"), b64(b'{"a":1}'), b64(b"[1,2,3,4,5]"), b64(b"null")]


@pytest.mark.parametrize("cursor", WRONG_SHAPE_CURSORS)
@pytest.mark.parametrize(("path", "role"), [("/v1/timeline", "agent"), ("/v1/audit", "operator")])
def test_given_a_well_formed_cursor_of_the_wrong_shape_when_paging_then_4xx(
    target: Target, path: str, role: str, cursor: str
) -> None:
    response = target.http.get(path, params={"cursor": cursor}, headers=target.auth(role))

    assert_client_error(response, f"GET {path}?cursor={cursor}")


@pytest.mark.parametrize("path", ["/v1/episodes", "/v1/recall", "/v1/episodes/batch"])
def test_given_a_body_of_100000_nested_arrays_when_posted_then_4xx(target: Target, path: str) -> None:
    body = "[" * 100_000 + "]" * 100_000

    response = target.http.post(
        path, content=body.encode(), headers={**target.auth("agent"), "Content-Type": "application/json"}
    )

    assert_client_error(response, f"POST {path} with 100,000 nested arrays")


@pytest.mark.parametrize("digits", [4300, 4301])
@pytest.mark.parametrize(("path", "field_name"), [("/v1/episodes", "importance"), ("/v1/recall", "limit")])
def test_given_a_body_with_a_4300_digit_integer_when_posted_then_4xx(
    target: Target, path: str, field_name: str, digits: int
) -> None:
    base = episode() if path == "/v1/episodes" else {"query": "release"}
    text = json.dumps(base)[:-1] + f', "{field_name}": ' + "9" * digits + "}"

    response = target.http.post(
        path, content=text.encode(), headers={**target.auth("agent"), "Content-Type": "application/json"}
    )

    assert_client_error(response, f"POST {path} with a {digits}-digit {field_name}")


def test_given_a_4300_digit_integer_in_details_when_posted_then_4xx(target: Target) -> None:
    text = json.dumps(episode())[:-1] + ', "details": {"input": {"n": ' + "7" * 4300 + "}}}"

    response = target.http.post(
        "/v1/episodes", content=text.encode(), headers={**target.auth("agent"), "Content-Type": "application/json"}
    )

    assert_client_error(response, "POST /v1/episodes with a 4,300-digit integer in details")


@pytest.mark.parametrize("path", ["/v1/episodes", "/v1/recall"])
def test_given_multipart_form_data_without_a_boundary_when_posted_then_4xx(target: Target, path: str) -> None:
    body = json.dumps(episode() if path == "/v1/episodes" else {"query": "release"}).encode()

    response = target.http.post(
        path, content=body, headers={**target.auth("agent"), "Content-Type": "multipart/form-data"}
    )

    assert_client_error(response, f"POST {path} with Content-Type: multipart/form-data (no boundary)")


def test_given_a_thousand_tag_parameters_when_listing_the_timeline_then_4xx(target: Target) -> None:
    params = [("tag", f"tag-{n}") for n in range(1000)]

    response = target.http.get("/v1/timeline", params=params, headers=target.auth("agent"))

    assert_client_error(response, "GET /v1/timeline with 1,000 tag= parameters")


# ---------------------------------------------------------------------------- raw sockets


def raw_exchange(target: Target, head: str, body: bytes = b"", wait: float = 10.0) -> tuple[bytes, float]:
    """Send a hand-made request, keep the connection open, read what comes back within ``wait`` s."""
    host, port = target.base_url.removeprefix("http://").split(":")
    started = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=wait) as sock:
        sock.sendall(head.replace("\n", "\r\n").encode() + b"\r\n" + body)
        received = b""
        sock.settimeout(wait)
        try:
            while b"\r\n\r\n" not in received:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                received += chunk
        except TimeoutError:
            pass
    return received, time.monotonic() - started


def raw_request(path: str, length: str) -> str:
    return (
        f"POST {path} HTTP/1.1\n"
        "Host: 127.0.0.1\n"
        f"Authorization: Bearer {AGENT_TOKEN}\n"
        "Content-Type: application/json\n"
        f"Content-Length: {length}\n"
        "\n"
    )


def status_of(raw: bytes) -> int | None:
    first = raw.split(b"\r\n", 1)[0].split()
    return int(first[1]) if len(first) >= 2 and first[0].startswith(b"HTTP/") and first[1].isdigit() else None


@pytest.mark.parametrize("path", ["/v1/episodes", "/v1/recall"])
def test_given_a_non_numeric_content_length_when_sent_on_a_raw_socket_then_an_http_400(
    target: Target, path: str
) -> None:
    raw, _ = raw_exchange(target, raw_request(path, "abc"), b"{}")

    assert status_of(raw) == 400, f"POST {path} with Content-Length: abc -> {raw[:300]!r}"


@pytest.mark.parametrize("path", ["/v1/episodes", "/v1/recall"])
def test_given_a_negative_content_length_when_sent_on_a_raw_socket_then_a_prompt_400(target: Target, path: str) -> None:
    raw, took = raw_exchange(target, raw_request(path, "-1"), b"{}", wait=60.0)

    # A thread that waited for a body that never ends would be cut off by the body deadline: 408.
    assert status_of(raw) == 400, f"POST {path} with Content-Length: -1 -> {raw[:300]!r} after {took:.1f} s"


def test_given_the_probes_when_done_then_the_server_still_answers(target: Target) -> None:
    raw_exchange(target, raw_request("/v1/recall", "-1"), b"{}", wait=2.0)
    raw_exchange(target, raw_request("/v1/recall", "abc"), b"{}", wait=2.0)

    health = target.http.get("/v1/health")
    recall = target.http.post("/v1/recall", json={"query": "release"}, headers=target.auth("agent"))

    assert health.status_code == 200
    assert recall.status_code == 200, recall.text
