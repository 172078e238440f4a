"""Bad input gets a clear 4xx and changes nothing.

Each request below once answered 500. They go to the Lambda handler as API Gateway proxy
events (the same handler ``episodic serve`` runs), with the real local service behind it.
"""

from __future__ import annotations

import base64
import json

import pytest

from episodic.entrypoints.server.proxy_event import LocalLambdaContext, build_event
from functions import api

AGENT = {"principalId": "agent:acme", "tenantId": "acme", "role": "agent"}
OPERATOR = {"principalId": "operator:acme", "tenantId": "acme", "role": "operator"}
EPISODE = {
    "eventType": "user_preference_stated",
    "actorId": "customer-42",
    "occurredAt": "2026-11-28T09:30:00Z",
    "summary": "Customer wants invoices as PDF, in Portuguese",
    "sourceRefs": ["chat:session-9/turn-4"],
    "sourceTrust": "user_provided",
}
EDGES = ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"]


@pytest.fixture
def wired(local_service):
    api.set_service(local_service)
    yield local_service
    api.set_service(None)


def call(method, path, body=None, *, caller=AGENT, content_type="application/json"):
    raw = body if isinstance(body, str) or body is None else json.dumps(body)
    event = build_event(method, path, {"Content-Type": content_type}, raw, caller)
    return api.handler(event, LocalLambdaContext(aws_request_id="test"))


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _nested(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth):
        value = {"a": value}
    return value


MALFORMED = [
    *[
        pytest.param("POST", "/v1/episodes", {**EPISODE, "occurredAt": d}, AGENT, id=f"occurredAt-{d[:4]}")
        for d in EDGES
    ],
    *[
        pytest.param("GET", f"/v1/timeline?after={d.replace('+', '%2B')}", None, AGENT, id=f"timeline-after-{d[:4]}")
        for d in EDGES
    ],
    *[pytest.param("POST", "/v1/recall", {"occurredBefore": d}, AGENT, id=f"recall-before-{d[:4]}") for d in EDGES],
    *[
        pytest.param("POST", "/v1/episodes/01X/restore", {"expiresAt": d}, OPERATOR, id=f"restore-{d[:4]}")
        for d in EDGES
    ],
    *[
        pytest.param("GET", f"/v1/{route}?cursor={c}", None, OPERATOR, id=f"{route}-cursor-{c}")
        for route in ("timeline", "audit")
        for c in (
            "W10",
            "WyJ4Il0",
            _b64("[null,null]"),
            _b64('[1e999, "x"]'),
            _b64("[" * 5000),
            _b64('[0, "\\ud800"]'),  # a lone surrogate, which no store can hold
            _b64('["\\udfff", "x"]'),
        )
    ],
    pytest.param("POST", "/v1/recall", "[" * 100_000 + "]" * 100_000, AGENT, id="100k-nesting"),
    pytest.param("POST", "/v1/recall", '{"query": "x", "limit": ' + "9" * 4300 + "}", AGENT, id="4300-digits"),
    pytest.param("POST", "/v1/episodes", {**EPISODE, "durationMs": 10**40}, AGENT, id="huge-duration"),
    pytest.param("POST", "/v1/episodes", {**EPISODE, "details": {"input": {"x": 10**30}}}, AGENT, id="huge-int"),
    pytest.param("POST", "/v1/episodes", json.dumps({**EPISODE, "importance": float("nan")}), AGENT, id="nan"),
    pytest.param(
        "POST", "/v1/episodes", json.dumps({**EPISODE, "details": {"input": {"x": float("inf")}}}), AGENT, id="inf"
    ),
    pytest.param("POST", "/v1/episodes", {**EPISODE, "details": {"input": _nested(40)}}, AGENT, id="deep-details"),
    pytest.param(
        "POST", "/v1/episodes", {**EPISODE, "details": {"input": {"blob": "x" * 70_000}}}, AGENT, id="big-details"
    ),
    pytest.param("GET", "/v1/timeline?" + "&".join(f"tag=t{i}" for i in range(1000)), None, AGENT, id="1000-tags"),
    pytest.param("GET", "/v1/timeline?" + "eventType=error&" * 1000, None, AGENT, id="1000-event-types"),
    pytest.param("GET", "/v1/timeline?actorId=" + "a" * 5001, None, AGENT, id="timeline-long-actor"),
    pytest.param("GET", "/v1/timeline?actorId=sam%00", None, AGENT, id="timeline-nul-actor"),
    pytest.param("GET", "/v1/timeline?projectId=-lead", None, AGENT, id="timeline-bad-project"),
    pytest.param("GET", "/v1/timeline?tag=%ff", None, AGENT, id="timeline-bad-tag"),
    pytest.param("GET", "/v1/audit?eventId=" + "e" * 5001, None, OPERATOR, id="audit-long-event-id"),
]


@pytest.mark.parametrize(("method", "path", "body", "caller"), MALFORMED)
def test_given_malformed_input_when_sent_then_it_gets_a_4xx_and_nothing_changes(wired, method, path, body, caller):
    response = call(method, path, body, caller=caller)
    assert 400 <= response["statusCode"] < 500, response
    assert "error" in json.loads(response["body"])
    assert wired.deps.episodes.count("acme") == 0


@pytest.mark.parametrize("phrase", ["in the last 99999999 days", "in december 9999", "since october 0000"])
def test_given_a_time_phrase_out_of_range_when_recalled_then_it_is_read_as_text(wired, phrase):
    response = call("POST", "/v1/recall", {"query": f"invoices {phrase}"})
    assert response["statusCode"] == 200
    assert json.loads(response["body"])["interpretation"]["timePhrase"] is None


@pytest.mark.parametrize(
    "content_type",
    [
        "multipart/form-data",
        "multipart/form-data; boundary=x",
        "application/x-www-form-urlencoded",
        "text/plain",
        "application/json; charset=latin1",
    ],
)
def test_given_a_body_that_is_not_json_when_sent_then_it_is_415(wired, content_type):
    response = call("POST", "/v1/episodes", "a=b", content_type=content_type)
    assert response["statusCode"] == 415
    assert wired.deps.episodes.count("acme") == 0


@pytest.mark.parametrize(
    "content_type",
    [
        "application/json; charset=utf-8",
        "Application/JSON",
        "APPLICATION/JSON; Charset=UTF-8",
        "application/problem+json",
    ],
)
def test_given_a_json_body_with_a_charset_or_in_capitals_when_sent_then_it_is_accepted(wired, content_type):
    assert call("POST", "/v1/episodes", EPISODE, content_type=content_type)["statusCode"] == 201


@pytest.mark.parametrize(
    ("path", "body"),
    [
        pytest.param("/v1/recall", {"query": "invoices", "limit": True}, id="limit-true"),
        pytest.param("/v1/recall", {"query": "invoices", "limit": "5"}, id="limit-string"),
        pytest.param("/v1/recall", {"query": "invoices", "neighbours": 1.0}, id="neighbours-float"),
        pytest.param("/v1/recall", {"query": "invoices", "widen": 0}, id="widen-zero"),
        pytest.param("/v1/recall", {"query": "invoices", "countAccess": "false"}, id="count-access-string"),
        pytest.param("/v1/episodes", {**EPISODE, "importance": "0.9"}, id="importance-string"),
        pytest.param("/v1/episodes", {**EPISODE, "importance": True}, id="importance-true"),
        pytest.param("/v1/episodes", {**EPISODE, "success": "yes"}, id="success-string"),
        pytest.param("/v1/episodes", {**EPISODE, "durationMs": 5.5}, id="duration-float"),
        pytest.param("/v1/episodes", {**EPISODE, "retention": {"deleteOnRequest": 0}}, id="delete-on-request-zero"),
        pytest.param("/v1/episodes", {**EPISODE, "consent": {"required": "no"}}, id="consent-string"),
        pytest.param("/v1/episodes", {**EPISODE, "occurredAt": 1700000000}, id="occurred-at-seconds"),
        pytest.param("/v1/episodes", {**EPISODE, "occurredAt": "1700000000"}, id="occurred-at-numeral"),
        pytest.param("/v1/recall", {"query": "invoices", "occurredAfter": -62135596800}, id="occurred-after-number"),
    ],
)
def test_given_a_value_of_another_json_type_when_sent_then_it_is_422_not_read_as_another(wired, path, body):
    """JSON's types are kept: ``true`` is no number, ``"5"`` and ``5.5`` no integer, ``0`` no boolean."""
    response = call("POST", path, body)
    assert response["statusCode"] == 422, response
    assert wired.deps.episodes.count("acme") == 0


def test_given_a_feedback_vote_that_is_no_boolean_when_sent_then_it_is_422(wired):
    event_id = json.loads(call("POST", "/v1/episodes", EPISODE)["body"])["eventId"]
    response = call("POST", f"/v1/episodes/{event_id}/feedback", {"helpful": 1})
    assert response["statusCode"] == 422, response
    assert wired.deps.episodes.get("acme", event_id).feedback_count == 0


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", "GZIP"])
def test_given_a_compressed_body_when_sent_then_it_is_415(wired, encoding):
    event = build_event("POST", "/v1/episodes", {"Content-Type": "application/json", "Content-Encoding": encoding},
                        json.dumps(EPISODE), AGENT)  # fmt: skip
    response = api.handler(event, LocalLambdaContext(aws_request_id="test"))
    assert response["statusCode"] == 415
    assert "uncompressed" in json.loads(response["body"])["message"]
    assert wired.deps.episodes.count("acme") == 0


def test_given_an_identity_encoding_when_sent_then_the_body_is_read(wired):
    event = build_event("POST", "/v1/episodes", {"Content-Type": "application/json", "Content-Encoding": "identity"},
                        json.dumps(EPISODE), AGENT)  # fmt: skip
    assert api.handler(event, LocalLambdaContext(aws_request_id="test"))["statusCode"] == 201
