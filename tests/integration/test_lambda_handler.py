"""The Lambda entry point, invoked the way API Gateway invokes it (recorded events in events/api/).

moto has no API Gateway proxy routing, so the gateway boundary is tested with recorded
proxy events: the handler must take the tenant and role from requestContext.authorizer.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from episodic.entrypoints.server.proxy_event import LocalLambdaContext
from functions import api

EVENTS = Path(__file__).parents[2] / "events" / "api"


@pytest.fixture
def wired(local_service):
    api.set_service(local_service)
    yield local_service
    api.set_service(None)


def invoke(event):
    return api.handler(event, LocalLambdaContext(aws_request_id="test-request"))


def test_given_a_recorded_gateway_event_when_invoked_then_the_authorizer_tenant_is_used(wired):
    event = json.loads((EVENTS / "post_episode.json").read_text())
    response = invoke(event)
    assert response["statusCode"] == 201
    body = json.loads(response["body"])
    assert body["episode"]["tenantId"] == "acme"
    assert body["episode"]["actorId"] == "customer-42"
    again = invoke(event)  # same Idempotency-Key and body
    assert json.loads(again["body"])["eventId"] == body["eventId"]


def test_given_an_event_without_authorizer_context_when_invoked_then_it_is_unauthorized(wired):
    event = json.loads((EVENTS / "post_episode.json").read_text())
    event["requestContext"]["authorizer"] = None
    response = invoke(event)
    assert response["statusCode"] == 401
    assert wired.deps.episodes.count("acme") == 0


def posted(**changes):
    """The recorded write with ``changes`` to its body, and no idempotency key (a new write)."""
    event = json.loads((EVENTS / "post_episode.json").read_text())
    event["body"] = json.dumps({**json.loads(event["body"]), **changes})
    event["headers"].pop("Idempotency-Key")
    event["multiValueHeaders"].pop("Idempotency-Key")
    return event


def test_given_a_body_naming_another_tenant_when_invoked_then_it_is_forbidden(wired):
    assert invoke(posted(tenantId="globex"))["statusCode"] == 403


def test_given_the_core_package_when_imported_then_no_heavy_or_cloud_library_is_loaded():
    code = (
        "import sys, episodic.application.service, episodic.domain.policy, episodic.domain.model,"
        " episodic.domain.recall.ranking, functions.api\n"
        "print(sorted(m for m in ('boto3','sqlite3','numpy','torch','opensearchpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_given_a_summary_in_another_script_when_read_back_then_the_body_is_utf8_json_of_the_same_text(wired):
    summary = "Zoë paid the café invoice for 東京 — 200 €"
    response = invoke(posted(summary=summary))
    assert response["statusCode"] == 201
    assert "東京" in response["body"]  # written as UTF-8, not as \u escapes
    assert json.loads(response["body"])["episode"]["summary"] == summary


def test_given_a_string_no_utf8_can_hold_when_a_response_is_written_then_it_is_escaped_json():
    from episodic.entrypoints.rest.app import _write_json

    written = _write_json({"summary": "half a pair \ud800 here", "n": 1})
    assert "\\ud800" in written
    assert json.loads(written) == {"summary": "half a pair \ud800 here", "n": 1}
