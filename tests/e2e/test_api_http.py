"""End-to-end tests of the HTTP contract, over real HTTP to the local server.

Each test gets a fresh server and data dir (``api`` fixture in ``conftest.py``); the real
MiniLM embedder is shared for the session. Tests are named Given/When/Then.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.e2e.conftest import Api
from tests.support.factories import proposal_dict

pytestmark = pytest.mark.slow

ALL_STATUSES = ["active", "pending_review", "superseded", "archived"]
INVOICE_QUERY = "how does the user want to receive invoices?"


# ---------------------------------------------------------------------------- helpers


def allowed_proposal(**overrides: Any) -> dict[str, Any]:
    """A memorable proposal from a trusted source: the policy allows it."""
    return proposal_dict(**overrides)


def untrusted_proposal(**overrides: Any) -> dict[str, Any]:
    """A memorable proposal from untrusted content: the policy sends it to review."""
    values: dict[str, Any] = {
        "eventType": "tool_observed_event",
        "summary": "Scraped vendor page says the Acme support line moved to +1 555 0100 in November",
        "sourceRefs": ["web:https://vendor.example/contact"],
        "sourceTrust": "untrusted_content",
        "tags": ["vendor"],
    }
    values.update(overrides)
    return proposal_dict(**values)


def chatter_proposal(**overrides: Any) -> dict[str, Any]:
    """Routine chatter: the policy denies it as not memorable."""
    values: dict[str, Any] = {"eventType": "conversation_turn", "summary": "thanks so much!", "tags": []}
    values.update(overrides)
    return proposal_dict(**values)


def remember(api: Api, body: dict[str, Any], expected: int = 201, **kw: Any) -> dict[str, Any]:
    response = api.post("/v1/episodes", body, **kw)
    assert response.status_code == expected, response.text
    return response.json()


def recall(api: Api, body: dict[str, Any], as_: str = "agent") -> dict[str, Any]:
    response = api.post("/v1/recall", body, as_=as_)
    assert response.status_code == 200, response.text
    return response.json()


def recalled_ids(api: Api, body: dict[str, Any], as_: str = "agent") -> list[str]:
    return [item["episode"]["eventId"] for item in recall(api, body, as_=as_)["items"]]


def timeline_ids(api: Api, *, as_: str = "operator", statuses: list[str] | None = None) -> list[str]:
    response = api.get("/v1/timeline", as_=as_, params={"status": statuses or ALL_STATUSES, "limit": 200})
    assert response.status_code == 200, response.text
    return [item["eventId"] for item in response.json()["items"]]


# ---------------------------------------------------------------------------- POST /v1/episodes


def test_given_an_allowed_proposal_when_posted_then_201_returns_the_stored_episode(api: Api) -> None:
    body = remember(api, allowed_proposal(), 201)

    assert body["decision"] == "allow"
    assert body["status"] == "active"
    assert body["policyVersion"]
    episode = body["episode"]
    assert episode["eventId"] == body["eventId"]
    assert episode["tenantId"] == "acme"
    assert episode["actorId"] == "user-1"
    assert episode["summary"] == allowed_proposal()["summary"]
    assert episode["occurredAt"].startswith("2026-11-28T09:30:00")
    assert episode["sourceTrust"] == "user_provided"
    assert episode["status"] == "active"
    assert episode["tags"] == ["billing"]
    # and it is really stored: GET returns the same episode
    fetched = api.get(f"/v1/episodes/{body['eventId']}")
    assert fetched.status_code == 200
    assert fetched.json()["summary"] == episode["summary"]


def test_given_an_untrusted_source_when_posted_then_202_pending_review_with_review_id(api: Api) -> None:
    body = remember(api, untrusted_proposal(), 202)

    assert body["decision"] == "review"
    assert body["status"] == "pending_review"
    assert body["reviewId"]
    assert body["eventId"]
    assert "untrusted_source" in body["reasons"]
    assert "episode" not in body
    # not visible to the agent's default (active) timeline
    assert timeline_ids(api, as_="agent", statuses=["active"]) == []


def test_given_routine_chatter_when_posted_then_403_deny_with_reason_and_policy_version(api: Api) -> None:
    body = remember(api, chatter_proposal(), 403)

    assert body["decision"] == "deny"
    assert "not_memorable" in body["reason"]
    assert "not_memorable" in body["reasons"]
    assert body["policyVersion"] == api.service.deps.policy.version
    assert body.get("eventId") is None
    assert timeline_ids(api) == []


@pytest.mark.parametrize(
    ("overrides", "loc_field", "msg_fragment"),
    [
        pytest.param({"eventType": "daydream"}, "eventType", "", id="unknown-event-type"),
        pytest.param({"occurredAt": "2026-11-28T10:00:00"}, "occurredAt", "timezone", id="naive-datetime"),
        pytest.param({"favouriteColour": "blue"}, "favouriteColour", "", id="unknown-field"),
    ],
)
def test_given_a_schema_error_when_posted_then_422_and_nothing_is_stored(
    api: Api, overrides: dict[str, Any], loc_field: str, msg_fragment: str
) -> None:
    response = api.post("/v1/episodes", allowed_proposal(**overrides))

    assert response.status_code == 422, response.text
    body = response.json()
    assert body["error"] == "validation_error"
    locs = [loc for item in body["detail"] for loc in item["loc"]]
    assert loc_field in locs
    if msg_fragment:
        messages = " ".join(item["msg"] for item in body["detail"]).lower()
        assert msg_fragment in messages
    assert timeline_ids(api) == []


def test_given_a_schema_error_when_rejected_then_the_422_does_not_echo_the_input(api: Api) -> None:
    secret = "sk-live-DO-NOT-ECHO-0123456789abcdef"
    response = api.post("/v1/episodes", allowed_proposal(unknownSecretField=secret))

    assert response.status_code == 422
    assert secret not in response.text


# ---------------------------------------------------------------------------- Idempotency-Key


def test_given_the_same_idempotency_key_and_body_when_posted_twice_then_one_episode_and_same_result(
    api: Api,
) -> None:
    headers = {"Idempotency-Key": "key-0001"}
    first = api.post("/v1/episodes", allowed_proposal(), headers=headers)
    second = api.post("/v1/episodes", allowed_proposal(), headers=headers)

    assert first.status_code == second.status_code == 201
    assert first.json()["eventId"] == second.json()["eventId"]
    assert first.json()["decision"] == second.json()["decision"] == "allow"
    assert timeline_ids(api) == [first.json()["eventId"]]


def test_given_the_same_idempotency_key_when_posted_with_another_body_then_409(api: Api) -> None:
    headers = {"Idempotency-Key": "key-0002"}
    first = api.post("/v1/episodes", allowed_proposal(), headers=headers)
    other = api.post(
        "/v1/episodes", allowed_proposal(summary="User prefers invoices on paper, by post"), headers=headers
    )

    assert first.status_code == 201
    assert other.status_code == 409, other.text
    assert other.json()["error"] == "idempotency_key_reused"
    assert timeline_ids(api) == [first.json()["eventId"]]


def test_given_concurrent_requests_with_one_idempotency_key_when_posted_then_one_episode(api: Api) -> None:
    headers = {"Idempotency-Key": "key-race"}

    with ThreadPoolExecutor(max_workers=8) as pool:
        responses = list(pool.map(lambda _: api.post("/v1/episodes", allowed_proposal(), headers=headers), range(8)))

    assert [r.status_code for r in responses] == [201] * 8
    event_ids = {r.json()["eventId"] for r in responses}
    assert len(event_ids) == 1
    assert timeline_ids(api) == list(event_ids)


def test_given_another_tenant_uses_the_same_idempotency_key_when_posting_then_it_gets_its_own_episode(
    api: Api,
) -> None:
    headers = {"Idempotency-Key": "key-0003"}
    acme = api.post("/v1/episodes", allowed_proposal(), headers=headers)
    globex = api.post("/v1/episodes", allowed_proposal(), headers=headers, as_="globex")

    assert acme.status_code == globex.status_code == 201
    assert acme.json()["eventId"] != globex.json()["eventId"]
    assert globex.json()["episode"]["tenantId"] == "globex"
    assert timeline_ids(api) == [acme.json()["eventId"]]


def test_given_an_oversized_idempotency_key_when_posting_then_422_and_nothing_is_stored(api: Api) -> None:
    response = api.post("/v1/episodes", allowed_proposal(), headers={"Idempotency-Key": "k" * 256})

    assert response.status_code == 422
    assert response.json()["error"] == "invalid_request"
    assert timeline_ids(api) == []


# ---------------------------------------------------------------------------- POST /v1/episodes/batch


def test_given_allow_deny_review_items_when_batched_then_200_with_results_in_order(api: Api) -> None:
    response = api.post(
        "/v1/episodes/batch", {"episodes": [allowed_proposal(), chatter_proposal(), untrusted_proposal()]}
    )

    assert response.status_code == 200, response.text
    allow, deny, review = response.json()["results"]
    assert allow["decision"] == "allow"
    assert allow["eventId"]
    assert allow["status"] == "active"
    assert deny["decision"] == "deny"
    assert "not_memorable" in deny["reason"]
    assert "eventId" not in deny
    assert review["decision"] == "review"
    assert review["reviewId"]
    assert review["eventId"]
    assert review["status"] == "pending_review"
    assert "episode" not in allow and "episode" not in review
    assert sorted(timeline_ids(api)) == sorted([allow["eventId"], review["eventId"]])
    assert timeline_ids(api, statuses=["active"]) == [allow["eventId"]]


def test_given_more_than_100_items_when_batched_then_422_and_nothing_is_stored(api: Api) -> None:
    episodes = [
        allowed_proposal(summary=f"User prefers invoice format number {i} for account A-{i}") for i in range(101)
    ]
    response = api.post("/v1/episodes/batch", {"episodes": episodes})

    assert response.status_code == 422, response.text
    assert response.json()["error"] == "validation_error"
    assert timeline_ids(api) == []


# ---------------------------------------------------------------------------- GET /v1/episodes/{id}, tenancy


def test_given_an_own_episode_when_fetched_then_200_with_the_episode(api: Api) -> None:
    event_id = remember(api, allowed_proposal())["eventId"]

    response = api.get(f"/v1/episodes/{event_id}")

    assert response.status_code == 200
    body = response.json()
    assert body["eventId"] == event_id
    assert body["tenantId"] == "acme"
    assert body["summary"] == allowed_proposal()["summary"]


def test_given_an_unknown_id_when_fetched_then_404(api: Api) -> None:
    response = api.get("/v1/episodes/01JUNKNOWNEVENT0000000000")

    assert response.status_code == 404
    assert response.json()["error"] == "not_found"


def test_given_another_tenants_id_when_fetched_then_404_like_an_unknown_id(api: Api) -> None:
    event_id = remember(api, allowed_proposal())["eventId"]

    response = api.get(f"/v1/episodes/{event_id}", as_="globex")

    assert response.status_code == 404
    assert response.json()["error"] == "not_found"
    assert allowed_proposal()["summary"] not in response.text
    # nor does the other tenant's recall or timeline see it
    assert recalled_ids(api, {"query": INVOICE_QUERY, "actorId": "user-1"}, as_="globex") == []
    assert timeline_ids(api, as_="globex", statuses=["active"]) == []


def test_given_a_body_naming_another_tenant_when_posted_then_403_and_nothing_is_stored(api: Api) -> None:
    response = api.post("/v1/episodes", allowed_proposal(tenantId="globex"))

    assert response.status_code == 403, response.text
    assert response.json()["error"] == "forbidden"
    assert timeline_ids(api) == []
    assert timeline_ids(api, as_="globex", statuses=["active"]) == []


def test_given_another_tenants_id_when_erasing_or_correcting_then_404_and_the_episode_is_untouched(
    api: Api,
) -> None:
    event_id = remember(api, allowed_proposal())["eventId"]

    erase = api.delete(f"/v1/episodes/{event_id}", as_="globex")
    correct = api.post(
        f"/v1/episodes/{event_id}/corrections",
        allowed_proposal(summary="User wants invoices by fax"),
        as_="globex",
    )

    assert erase.status_code == 404
    assert correct.status_code == 404
    own = api.get(f"/v1/episodes/{event_id}")
    assert own.status_code == 200
    assert own.json()["status"] == "active"
    assert timeline_ids(api, as_="globex", statuses=["active"]) == []


def test_given_a_body_naming_the_callers_own_tenant_when_posted_then_201(api: Api) -> None:
    body = remember(api, allowed_proposal(tenantId="acme"), 201)

    assert body["episode"]["tenantId"] == "acme"


# ---------------------------------------------------------------------------- auth and public routes


@pytest.mark.parametrize(
    "authorization",
    [
        pytest.param(None, id="no-token"),
        pytest.param("Bearer not-a-known-token-0000", id="wrong-token"),
        pytest.param("Basic agent-token-acme-000001", id="wrong-scheme"),
    ],
)
def test_given_no_valid_bearer_token_when_calling_then_401(api: Api, authorization: str | None) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    for method, path, body in [
        ("POST", "/v1/episodes", allowed_proposal()),
        ("GET", "/v1/timeline", None),
        ("POST", "/v1/recall", {"query": INVOICE_QUERY}),
    ]:
        response = api.request(method, path, as_=None, headers=headers, json=body)
        assert response.status_code == 401, (method, path, response.text)
        assert response.json()["error"] == "unauthorized"
        assert response.headers["WWW-Authenticate"] == "Bearer"
    assert timeline_ids(api) == []


def test_given_no_token_when_checking_health_then_200_ok(api: Api) -> None:
    response = api.get("/v1/health", as_=None)

    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["backend"] == "local-sqlite"
    assert body["policyVersion"] == api.service.deps.policy.version
    assert "MiniLM" in body["embedder"]


def test_given_no_token_when_fetching_the_openapi_json_then_it_lists_the_routes(api: Api) -> None:
    response = api.get("/v1/swagger", as_=None, params={"format": "json"})

    assert response.status_code == 200, response.text
    document = response.json()
    assert document["openapi"].startswith("3.")
    assert document["info"]["title"] == "Episodic memory API"
    assert "/v1/recall" in document["paths"]
    assert "post" in document["paths"]["/v1/recall"]
    assert "/v1/episodes" in document["paths"]


def test_given_a_body_over_one_mebibyte_when_posted_then_413_and_nothing_is_stored(api: Api) -> None:
    oversized = allowed_proposal(summary="x" * 3000, details={"input": {"blob": "y" * 1_100_000}})
    for _ in range(5):  # the refused body is drained, so the client reliably reads the 413
        response = api.post("/v1/episodes", oversized)
        assert response.status_code == 413
        assert response.json()["error"] == "payload_too_large"
    assert timeline_ids(api) == []


def test_given_malformed_json_when_posted_then_422_not_500(api: Api) -> None:
    response = api.request("POST", "/v1/episodes", content=b"{not json", headers={"Content-Type": "application/json"})

    assert response.status_code == 422
    assert response.json()["error"] == "validation_error"


# ---------------------------------------------------------------------------- operator-only routes

OPERATOR_ROUTES = [
    pytest.param("GET", "/v1/audit", None, id="audit"),
    pytest.param("GET", "/v1/reviews", None, id="reviews"),
    pytest.param("POST", "/v1/erasure", {"actorId": "user-9"}, id="actor-erasure"),
    pytest.param("PUT", "/v1/admin/writes", {"enabled": True}, id="kill-switch"),
]


@pytest.mark.parametrize(("method", "path", "body"), OPERATOR_ROUTES)
def test_given_an_agent_token_when_calling_an_operator_route_then_403(
    api: Api, method: str, path: str, body: dict[str, Any] | None
) -> None:
    response = api.request(method, path, as_="agent", json=body)

    assert response.status_code == 403, response.text
    assert response.json()["error"] == "forbidden"


@pytest.mark.parametrize(("method", "path", "body"), OPERATOR_ROUTES)
def test_given_an_operator_token_when_calling_an_operator_route_then_it_works(
    api: Api, method: str, path: str, body: dict[str, Any] | None
) -> None:
    response = api.request(method, path, as_="operator", json=body)

    assert response.status_code == 200, response.text
    payload = response.json()
    if path == "/v1/audit" or path == "/v1/reviews":
        assert isinstance(payload["items"], list)
    elif path == "/v1/erasure":
        assert payload == {"erased": [], "cascaded": [], "archivedRecordsDeleted": 0}
    else:
        assert payload["writesEnabled"] is True


@pytest.mark.parametrize("actor_id", ["sam ", "sam,alex", "", "a" * 129])
def test_given_an_actor_id_no_episode_could_have_when_erasing_the_actor_then_422(api: Api, actor_id: str) -> None:
    response = api.request("POST", "/v1/erasure", as_="operator", json={"actorId": actor_id})

    assert response.status_code == 422, response.text


def test_given_an_agent_write_when_the_operator_reads_the_audit_then_the_decision_is_there(api: Api) -> None:
    event_id = remember(api, allowed_proposal())["eventId"]

    response = api.get("/v1/audit", as_="operator", params={"eventId": event_id})

    assert response.status_code == 200
    actions = [r["action"] for r in response.json()["items"]]
    assert actions == ["episode.written"]
    assert response.json()["items"][0]["tenantId"] == "acme"


# ---------------------------------------------------------------------------- review flow


def test_given_an_untrusted_write_when_the_operator_approves_then_it_becomes_recallable(api: Api) -> None:
    held = remember(api, untrusted_proposal(), 202)
    query = {"query": "Acme support line phone number", "actorId": "user-1"}
    assert held["eventId"] not in recalled_ids(api, query)

    queue = api.get("/v1/reviews", as_="operator")
    assert queue.status_code == 200
    pending = queue.json()["items"]
    assert [v["review"]["reviewId"] for v in pending] == [held["reviewId"]]
    assert pending[0]["episode"]["status"] == "pending_review"

    decision = api.post(f"/v1/reviews/{held['reviewId']}/decision", {"decision": "approve"}, as_="operator")

    assert decision.status_code == 200, decision.text
    assert decision.json()["review"]["status"] == "approved"
    assert decision.json()["episode"]["status"] == "active"
    assert held["eventId"] in recalled_ids(api, query)
    assert api.get(f"/v1/episodes/{held['eventId']}").json()["status"] == "active"
    assert api.get("/v1/reviews", as_="operator").json()["items"] == []


def test_given_an_untrusted_write_when_the_operator_denies_then_it_is_gone(api: Api) -> None:
    held = remember(api, untrusted_proposal(), 202)

    decision = api.post(
        f"/v1/reviews/{held['reviewId']}/decision",
        {"decision": "deny", "note": "not a real source"},
        as_="operator",
    )

    assert decision.status_code == 200, decision.text
    assert decision.json()["review"]["status"] == "denied"
    assert decision.json()["episode"] is None
    assert api.get(f"/v1/episodes/{held['eventId']}").status_code == 404
    assert held["eventId"] not in recalled_ids(api, {"query": "Acme support line phone number", "actorId": "user-1"})
    again = api.post(f"/v1/reviews/{held['reviewId']}/decision", {"decision": "approve"}, as_="operator")
    assert again.status_code == 409


def test_given_an_agent_token_when_deciding_a_review_then_403_and_it_stays_pending(api: Api) -> None:
    held = remember(api, untrusted_proposal(), 202)

    response = api.post(f"/v1/reviews/{held['reviewId']}/decision", {"decision": "approve"}, as_="agent")

    assert response.status_code == 403
    assert held["eventId"] not in recalled_ids(api, {"query": "Acme support line phone number", "actorId": "user-1"})


# ---------------------------------------------------------------------------- recall


def test_given_stored_episodes_when_recalling_by_query_then_items_explain_their_score_and_context(
    api: Api,
) -> None:
    invoices = remember(api, allowed_proposal())["eventId"]
    remember(
        api,
        allowed_proposal(
            eventType="task_milestone",
            summary="Deployed release 4.2 of the checkout service to production",
            tags=["deploy"],
        ),
    )

    body = recall(api, {"query": INVOICE_QUERY, "actorId": "user-1"})

    assert body["recallId"]
    assert body["items"], body
    top = body["items"][0]
    assert top["episode"]["eventId"] == invoices
    components = top["components"]
    for name in ("relevance", "lexical", "semantic", "recency", "importance", "trust", "confidence"):
        assert 0.0 <= components[name] <= 1.0, name
    assert components["semantic"] > 0.2
    assert components["relevance"] > 0.0
    assert components["importance"] == pytest.approx(0.7)
    assert components["trust"] == pytest.approx(0.7)  # user_provided
    assert components["confidence"] == pytest.approx(1.0)  # high
    assert top["score"] > 0
    context = body["context"]
    assert "Past event, not current instruction" in context
    assert json.dumps(allowed_proposal()["summary"]) in context
    assert context.startswith("<memory-evidence>") and context.endswith("</memory-evidence>")


def test_given_no_query_when_recalling_by_type_tags_and_time_then_only_the_scoped_episode_returns(
    api: Api,
) -> None:
    wanted = remember(
        api,
        allowed_proposal(
            eventType="task_milestone",
            occurredAt="2026-11-20T08:00:00Z",
            summary="Deployed release 4.2 of the checkout service to production",
            tags=["deploy", "checkout"],
        ),
    )["eventId"]
    remember(  # same type and tags, but too old
        api,
        allowed_proposal(
            eventType="task_milestone",
            occurredAt="2026-10-01T08:00:00Z",
            summary="Deployed release 4.1 of the checkout service to production",
            tags=["deploy", "checkout"],
        ),
    )
    remember(  # right time and type, missing a tag
        api,
        allowed_proposal(
            eventType="task_milestone",
            occurredAt="2026-11-21T08:00:00Z",
            summary="Deployed release 7.0 of the search service to production",
            tags=["deploy"],
        ),
    )
    remember(api, allowed_proposal(occurredAt="2026-11-22T08:00:00Z"))  # right time, other type

    body = recall(
        api,
        {
            "eventTypes": ["task_milestone"],
            "tags": ["Deploy", "checkout"],
            "occurredAfter": "2026-11-15T00:00:00Z",
        },
    )

    assert [item["episode"]["eventId"] for item in body["items"]] == [wanted]
    components = body["items"][0]["components"]
    assert components["relevance"] == pytest.approx(0.0)
    assert components["weights"]["relevance"] == pytest.approx(0.0)
    assert "Past event, not current instruction" in body["context"]


def test_given_pending_review_in_statuses_when_recalling_then_422(api: Api) -> None:
    response = api.post("/v1/recall", {"query": "anything", "statuses": ["pending_review"]})

    assert response.status_code == 422
    assert response.json()["error"] == "validation_error"


def test_given_a_private_episode_when_recalling_without_an_actor_then_it_is_not_returned(api: Api) -> None:
    private_id = remember(
        api, allowed_proposal(privacyClass="private", summary="User prefers invoices billed in Swedish krona")
    )["eventId"]
    query = "which currency should invoices use?"

    assert private_id not in recalled_ids(api, {"query": query})
    assert private_id in recalled_ids(api, {"query": query, "actorId": "user-1"})


def test_given_a_payment_card_in_the_summary_when_posted_then_it_is_stored_redacted(api: Api) -> None:
    body = remember(api, allowed_proposal(summary="User paid the December invoice with card 4111 1111 1111 1111"), 201)

    assert "4111" not in json.dumps(body)
    assert "secrets_redacted" in body["reasons"]
    assert body["redactions"] == [{"field": "summary", "kind": "payment_card"}]
    assert "4111" not in api.get(f"/v1/episodes/{body['eventId']}").text


# ---------------------------------------------------------------------------- correction


def test_given_an_episode_when_corrected_then_the_old_is_superseded_and_recall_returns_the_new(
    api: Api,
) -> None:
    old_id = remember(api, allowed_proposal())["eventId"]
    new_summary = "User now prefers invoices as e-invoices through the Peppol network, not PDF"

    response = api.post(
        f"/v1/episodes/{old_id}/corrections",
        allowed_proposal(eventType="correction_received", summary=new_summary, occurredAt="2026-11-28T11:00:00Z"),
    )

    assert response.status_code == 201, response.text
    body = response.json()
    new_id = body["eventId"]
    assert new_id != old_id
    assert body["episode"]["summary"] == new_summary
    assert body["episode"]["supersedesEventIds"] == [old_id]
    old = api.get(f"/v1/episodes/{old_id}")
    assert old.status_code == 200
    assert old.json()["status"] == "superseded"
    ids = recalled_ids(api, {"query": INVOICE_QUERY, "actorId": "user-1"})
    assert new_id in ids
    assert old_id not in ids
    assert api.post(f"/v1/episodes/{old_id}/corrections", allowed_proposal(summary=new_summary)).status_code == 409


# ---------------------------------------------------------------------------- erasure


def test_given_an_episode_when_erased_then_it_is_gone_and_the_audit_keeps_no_text(api: Api) -> None:
    summary = "User Zebulon Quartermaine prefers invoices mailed to 12 Juniper Lane"
    event_id = remember(api, allowed_proposal(summary=summary))["eventId"]

    response = api.delete(f"/v1/episodes/{event_id}")

    assert response.status_code == 200, response.text
    assert response.json() == {"erased": [event_id], "cascaded": [], "archivedRecordsDeleted": 0}
    assert api.get(f"/v1/episodes/{event_id}").status_code == 404
    assert event_id not in recalled_ids(
        api, {"query": "Zebulon Quartermaine invoices Juniper Lane", "actorId": "user-1"}
    )
    assert api.delete(f"/v1/episodes/{event_id}").status_code == 404
    audit = api.get("/v1/audit", as_="operator", params={"eventId": event_id})
    assert audit.status_code == 200
    records = audit.json()["items"]
    erased = [r for r in records if r["action"] == "episode.erased"]
    assert len(erased) == 1
    assert erased[0]["detail"]["contentHash"].startswith("hmac-sha256:")  # keyed
    text = json.dumps(audit.json())
    assert "Zebulon" not in text
    assert "Juniper" not in text


def data_files_containing(api: Api, needle: str) -> list[str]:
    data_dir = api.service.deps.settings.data_dir.resolve()
    return sorted(
        str(path.relative_to(data_dir))
        for path in data_dir.rglob("*")
        if path.is_file() and needle.encode() in path.read_bytes()
    )


def test_given_an_erased_episode_when_the_data_dir_is_scanned_then_its_text_is_gone(api: Api) -> None:
    summary = "User Zebulon Quartermaine prefers invoices mailed to 12 Juniper Lane"
    event_id = remember(api, allowed_proposal(summary=summary))["eventId"]
    recall(api, {"query": "Zebulon invoices", "actorId": "user-1"})
    assert data_files_containing(api, "Zebulon") != []

    assert api.delete(f"/v1/episodes/{event_id}").status_code == 200

    assert data_files_containing(api, "Zebulon") == []


def test_given_an_episode_written_with_an_idempotency_key_when_erased_then_no_trace_remains(api: Api) -> None:
    summary = "User Zebulon Quartermaine prefers invoices mailed to 12 Juniper Lane"
    headers = {"Idempotency-Key": "key-erase-1"}
    event_id = remember(api, allowed_proposal(summary=summary), headers=headers)["eventId"]

    assert api.delete(f"/v1/episodes/{event_id}").status_code == 200

    assert data_files_containing(api, "Zebulon") == []


def test_given_an_erased_episode_when_its_idempotency_key_is_replayed_then_no_erased_episode_is_returned(
    api: Api,
) -> None:
    summary = "User Zebulon Quartermaine prefers invoices mailed to 12 Juniper Lane"
    headers = {"Idempotency-Key": "key-erase-2"}
    event_id = remember(api, allowed_proposal(summary=summary), headers=headers)["eventId"]
    assert api.delete(f"/v1/episodes/{event_id}").status_code == 200

    replay = api.post("/v1/episodes", allowed_proposal(summary=summary), headers=headers)

    assert api.get(f"/v1/episodes/{event_id}").status_code == 404
    assert not (replay.status_code == 201 and replay.json().get("eventId") == event_id), replay.text


# ---------------------------------------------------------------------------- kill-switch


def disable_writes(api: Api) -> None:
    off = api.put("/v1/admin/writes", {"enabled": False, "reason": "incident 42"}, as_="operator")
    assert off.status_code == 200, off.text
    assert off.json() == {"writesEnabled": False, "deploymentKillSwitch": False}


def test_given_writes_disabled_when_posting_then_503_writes_disabled(api: Api) -> None:
    disable_writes(api)

    single = api.post("/v1/episodes", allowed_proposal())
    batch = api.post("/v1/episodes/batch", {"episodes": [allowed_proposal()]})

    assert single.status_code == 503, single.text
    assert single.json()["error"] == "writes_disabled"
    assert batch.status_code == 503, batch.text
    assert batch.json()["error"] == "writes_disabled"


def test_given_writes_disabled_when_a_write_is_attempted_then_nothing_is_stored_and_recall_still_works(
    api: Api,
) -> None:
    stored = remember(api, allowed_proposal())["eventId"]
    disable_writes(api)

    refused = api.post("/v1/episodes", allowed_proposal(summary="User prefers quarterly billing for account A-9"))

    assert refused.status_code == 503
    assert api.get("/v1/admin/writes").json()["writesEnabled"] is False
    response = api.post("/v1/recall", {"query": INVOICE_QUERY, "actorId": "user-1"})
    assert response.status_code == 200
    assert [item["episode"]["eventId"] for item in response.json()["items"]] == [stored]
    assert timeline_ids(api) == [stored]
    # the kill-switch is per tenant: globex still writes
    assert api.post("/v1/episodes", allowed_proposal(), as_="globex").status_code == 201


@pytest.mark.parametrize("ambiguous", ["no", "off", 0, "false", None])
def test_given_a_kill_switch_value_that_is_no_boolean_when_put_then_422_and_writes_stay_as_they_were(
    api: Api, ambiguous: object
) -> None:
    refused = api.put("/v1/admin/writes", {"enabled": ambiguous}, as_="operator")
    assert refused.status_code == 422, refused.text
    assert api.get("/v1/admin/writes").json()["writesEnabled"] is True


def test_given_writes_disabled_when_the_operator_re_enables_then_writes_succeed_again(api: Api) -> None:
    disable_writes(api)

    on = api.put("/v1/admin/writes", {"enabled": True}, as_="operator")

    assert on.status_code == 200, on.text
    assert on.json()["writesEnabled"] is True
    assert api.get("/v1/admin/writes").json()["writesEnabled"] is True
    body = remember(api, allowed_proposal(), 201)
    assert body["decision"] == "allow"
    assert timeline_ids(api) == [body["eventId"]]
    actions = [r["action"] for r in api.get("/v1/audit", as_="operator").json()["items"]]
    assert actions[:2] == ["writes.disabled", "writes.enabled"]
