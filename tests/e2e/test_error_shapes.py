"""One error shape everywhere: a path no route serves is a 404 and a route asked with another
method a 405 with ``Allow`` (the route's methods, and the ``HEAD`` and ``OPTIONS`` the local
server answers), both as ``{"error", "message"}`` like every other error, not Powertools' own
``{"statusCode", "message"}``."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Api


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("GET", "/v1/recall", "OPTIONS, POST"),
        ("PATCH", "/v1/episodes/01ABC", "DELETE, GET, HEAD, OPTIONS"),
        ("DELETE", "/v1/audit", "GET, HEAD, OPTIONS"),
    ],
)
def test_given_a_route_asked_with_another_method_when_served_then_405_names_the_allowed_ones(
    api: Api, method: str, path: str, allowed: str
) -> None:
    response = api.request(method, path)
    assert response.status_code == 405 and response.headers["Allow"] == allowed
    assert response.json() == {
        "error": "method_not_allowed",
        "message": f"{method} is not allowed on {path}; use {allowed}",
    }


def test_given_a_path_no_route_serves_when_asked_then_404_in_the_common_shape(api: Api) -> None:
    response = api.get("/v1/nowhere")
    assert response.status_code == 404
    assert response.json() == {"error": "not_found", "message": "no route GET /v1/nowhere"}
    unknown = api.get("/v1/episodes/01NOSUCHEPISODE0000000000")  # a route, an unknown id: same shape
    assert unknown.status_code == 404 and set(unknown.json()) == {"error", "message"}


def test_given_a_policy_denial_when_answered_then_a_person_can_read_why_beside_the_codes(api: Api) -> None:
    chatter = {
        "eventType": "conversation_turn",
        "actorId": "sam",
        "occurredAt": "2026-11-20T18:00:00Z",
        "summary": "Thanks! Have a great weekend",
        "sourceRefs": ["t1"],
        "sourceTrust": "user_provided",
    }
    denied = api.post("/v1/episodes", chatter)
    assert denied.status_code == 403
    body = denied.json()
    assert body["decision"] == "deny" and body["reasons"] == ["not_memorable"]
    assert body["message"] == (
        "the write policy denied this proposal: no sentence carries anything worth remembering (see sentences)"
    )
    [item] = api.post("/v1/episodes/batch", {"episodes": [chatter]}).json()["results"]
    assert item["message"] == body["message"]


def test_given_the_openapi_document_when_read_then_swagger_ui_can_authenticate_with_a_bearer_token(api: Api) -> None:
    doc = api.get("/v1/swagger", params={"format": "json"}, as_=None).json()
    assert doc["components"]["securitySchemes"]["bearer"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "A local token (`episodic tokens`) or, in AWS, a JWT",
    }
    assert doc["security"] == [{"bearer": []}]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/episodes/AKIAIOSFODNN7EXAMPLE"),
        ("DELETE", "/v1/episodes/AKIAIOSFODNN7EXAMPLE"),
        ("POST", "/v1/episodes/AKIAIOSFODNN7EXAMPLE/feedback"),
    ],
)
def test_given_an_unknown_id_when_asked_for_then_404_says_so_without_repeating_it(
    api: Api, method: str, path: str
) -> None:
    """An id is the caller's text, which may be anything (a pasted secret among it): the answer
    says that no such episode exists, not which one was asked for."""
    body = {"helpful": True} if path.endswith("feedback") else None
    response = api.request(method, path, json=body)
    assert response.status_code == 404, response.text
    assert response.json()["error"] == "not_found" and "AKIA" not in response.text
