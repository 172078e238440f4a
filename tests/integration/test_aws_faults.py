"""Faults in the AWS backend: what a caller sees, and what is left behind.

The service is the real one, built with ``build_aws_service`` on DynamoDB, S3 and KMS under
moto, driven through the Lambda API handler (so a test sees the HTTP status a caller gets) or
through the stream handler with recorded events. Faults are injected at the client
boundary: :class:`InjectedFaults` answers chosen operations with an AWS error response
before the request leaves botocore, which then raises the modelled exception exactly as it
does once its own retries are spent; everything not chosen reaches moto. Bedrock is a real
bedrock-runtime client behind ``botocore.stub.Stubber``; OpenSearch is a real client pointed
at a closed port (down) or at a socket that never answers (slow).

After every fault the tables themselves are checked: no episode without the audit record
of its write, and no audit record of a write whose episode is missing.
"""

from __future__ import annotations

import io
import json
import socket
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.config import Config
from botocore.exceptions import ReadTimeoutError
from botocore.response import StreamingBody
from botocore.stub import Stubber

from episodic.adapters.bedrock.embedder import TitanEmbedder
from episodic.adapters.dynamodb.store import DynamoTimelineStore
from episodic.adapters.opensearch.client import client_for
from episodic.adapters.opensearch.fallback import FallbackRecallIndex
from episodic.adapters.opensearch.index import OpenSearchRecallIndex
from episodic.adapters.opensearch.scoped import DynamoScopedIndex
from episodic.adapters.s3.archive import S3ColdArchive
from episodic.application.ports import Scope
from episodic.bootstrap.aws import build_aws_service
from episodic.bootstrap.aws import stream_processor as build_stream_processor
from episodic.domain.errors import StorageError
from episodic.domain.forgetting.pseudonyms import Pseudonyms
from episodic.entrypoints.server.proxy_event import LocalLambdaContext
from functions import api, stream
from tests.support.factories import at

EVENTS = Path(__file__).parents[2] / "events"
WRITE_AUDITS = ("episode.written", "episode.review_requested", "episode.restored")
GONE_AUDITS = ("episode.erased", "episode.expired", "review.denied", "review.expired")


# ---------------------------------------------------------------------------- injecting faults


@dataclass
class Fault:
    code: str
    status: int
    after: int
    times: int | None
    reasons: tuple[str, ...]

    def applies(self, call: int) -> bool:
        return call > self.after and (self.times is None or call <= self.after + self.times)

    def response(self) -> tuple[AWSResponse, dict[str, Any]]:
        message = "injected fault"
        if self.reasons:  # worded as DynamoDB words it
            listed = ", ".join(self.reasons)
            message = f"Transaction cancelled, please refer cancellation reasons for specific reasons [{listed}]"
        parsed: dict[str, Any] = {"Error": {"Code": self.code, "Message": message}}
        if self.reasons:
            parsed["CancellationReasons"] = [{"Code": reason} for reason in self.reasons]
        parsed["ResponseMetadata"] = {"HTTPStatusCode": self.status}
        return AWSResponse("https://injected.invalid", self.status, {}, None), parsed


class InjectedFaults:
    """Answers chosen operations of a real client with AWS errors; the rest reach moto."""

    def __init__(self, client: Any) -> None:
        self.calls: Counter[str] = Counter()
        self._planned: dict[str, list[Fault]] = {}
        client.meta.events.register(f"before-call.{client.meta.service_model.service_id.hyphenize()}", self._answer)

    def fail(
        self,
        operation: str,
        code: str,
        *,
        status: int = 400,
        after: int = 0,
        times: int | None = None,
        reasons: tuple[str, ...] = (),
    ) -> None:
        """Fail calls ``after + 1`` .. ``after + times`` of ``operation`` (every later one if ``times`` is None)."""
        self._planned.setdefault(operation, []).append(Fault(code, status, after, times, reasons))

    def heal(self) -> None:
        self._planned.clear()

    def _answer(self, model: Any, **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        self.calls[model.name] += 1
        for fault in self._planned.get(model.name, []):
            if fault.applies(self.calls[model.name]):
                return fault.response()
        return None


# ---------------------------------------------------------------------------- the service and its tables


@dataclass
class Aws:
    resources: dict[str, Any]
    dynamodb: InjectedFaults
    s3: InjectedFaults

    @property
    def settings(self) -> Any:
        return self.resources["settings"]

    def _scan(self, table: str) -> list[dict[str, Any]]:
        pages = self.resources["dynamodb"].get_paginator("scan").paginate(TableName=table)
        return [item for page in pages for item in page["Items"]]

    def episodes(self) -> set[str]:
        items = self._scan(self.settings.timeline_table)
        return {i["pk"]["S"].split("#EP#", 1)[1] for i in items if i["sk"]["S"] == "EPISODE"}

    def audit(self) -> list[dict[str, Any]]:
        return sorted(
            (json.loads(i["rec"]["S"]) for i in self._scan(self.settings.audit_table)), key=lambda r: r["auditId"]
        )

    def actions(self, event_id: str | None = None) -> list[str]:
        return [r["action"] for r in self.audit() if event_id is None or r.get("eventId") == event_id]

    def assert_no_half_writes(self) -> None:
        records = self.audit()
        written = {r["eventId"] for r in records if r["action"] in WRITE_AUDITS}
        gone = {r["eventId"] for r in records if r["action"] in GONE_AUDITS}
        episodes = self.episodes()
        assert episodes <= written, f"episodes without the audit record of their write: {episodes - written}"
        assert written - gone <= episodes, f"audited writes whose episode is missing: {written - gone - episodes}"

    def archived(self) -> set[str]:
        listing = self.resources["s3"].list_objects_v2(Bucket=self.settings.archive_bucket, Prefix="archive/")
        return {o["Key"].rsplit("/", 1)[-1].removesuffix(".json.gz") for o in listing.get("Contents", [])
                if o["Key"].endswith(".json.gz")}  # fmt: skip


@pytest.fixture
def aws(aws_resources) -> Aws:
    return Aws(aws_resources, InjectedFaults(aws_resources["dynamodb"]), InjectedFaults(aws_resources["s3"]))


@pytest.fixture
def wired(aws, minilm, clock) -> Iterator[Any]:
    """The API handler on the AWS service (moto behind the fault injectors)."""
    service = build_aws_service(
        aws.settings, dynamodb=aws.resources["dynamodb"], s3=aws.resources["s3"], embedder=minilm, clock=clock
    )
    api.set_service(service)
    yield service
    api.set_service(None)


def api_event(
    method: str, path: str, body: Any = None, *, role: str = "agent", key: str | None = None
) -> dict[str, Any]:
    """An API Gateway proxy event, shaped like the recorded ``events/api/post_episode.json``."""
    event = json.loads((EVENTS / "api" / "post_episode.json").read_text())
    headers = {"Content-Type": "application/json", **({"Idempotency-Key": key} if key else {})}
    event.update(
        httpMethod=method,
        path=path,
        resource=path,
        body=None if body is None else json.dumps(body),
        headers=headers,
        multiValueHeaders={k: [v] for k, v in headers.items()},
    )
    event["requestContext"].update(httpMethod=method, path=f"/prod{path}", resourcePath=path)
    event["requestContext"]["authorizer"] = {"principalId": f"{role}:acme", "tenantId": "acme", "role": role}
    return event


def invoke(event: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    response = api.handler(event, LocalLambdaContext(aws_request_id="fault-test"))
    return response["statusCode"], json.loads(response["body"])


def episode_body(**overrides: Any) -> dict[str, Any]:
    body = json.loads(json.loads((EVENTS / "api" / "post_episode.json").read_text())["body"])
    return {**body, **overrides}


def remember(**overrides: Any) -> str:
    status, body = invoke(api_event("POST", "/v1/episodes", episode_body(**overrides)))
    assert status == 201, body
    return str(body["eventId"])


# ---------------------------------------------------------------------------- DynamoDB: writes


@pytest.mark.parametrize("code", ["ProvisionedThroughputExceededException", "ThrottlingException"])
def test_given_throttled_transactions_when_writing_then_503_and_nothing_is_stored(aws, wired, code):
    aws.dynamodb.fail("TransactWriteItems", code)

    status, body = invoke(api_event("POST", "/v1/episodes", episode_body()))

    assert (status, body["error"]) == (503, "storage_unavailable")
    assert code in body["message"]
    assert aws.episodes() == set() and aws.audit() == []


@pytest.mark.parametrize("code", ["ProvisionedThroughputExceededException", "ThrottlingException"])
def test_given_throttled_reads_before_a_write_when_writing_then_503_not_500_and_nothing_is_stored(aws, wired, code):
    aws.dynamodb.fail("GetItem", code)  # the kill-switch and idempotency-key lookups come first

    status, body = invoke(api_event("POST", "/v1/episodes", episode_body(), key="k-1"))

    assert (status, body["error"]) == (503, "storage_unavailable")
    assert aws.episodes() == set() and aws.audit() == []
    aws.dynamodb.heal()
    assert invoke(api_event("POST", "/v1/episodes", episode_body(), key="k-1"))[0] == 201
    aws.assert_no_half_writes()


@pytest.mark.parametrize("reason", ["TransactionConflict", "ThrottlingError"])
def test_given_a_transaction_cancelled_once_for_a_transient_reason_when_writing_then_it_is_sent_again(
    aws, wired, reason
):
    aws.dynamodb.fail("TransactWriteItems", "TransactionCanceledException", times=1, reasons=("None", reason))

    event_id = remember()

    assert aws.dynamodb.calls["TransactWriteItems"] == 2
    assert aws.episodes() == {event_id}
    assert aws.actions(event_id) == ["episode.written"]
    aws.assert_no_half_writes()


def test_given_transaction_conflicts_that_persist_when_writing_then_503_after_three_attempts_and_nothing_stored(
    aws, wired
):
    aws.dynamodb.fail("TransactWriteItems", "TransactionCanceledException", reasons=("TransactionConflict", "None"))

    status, body = invoke(api_event("POST", "/v1/episodes", episode_body()))

    assert (status, body["error"]) == (503, "storage_unavailable")
    assert "TransactionConflict" in body["message"]
    assert aws.dynamodb.calls["TransactWriteItems"] == 3
    assert aws.episodes() == set() and aws.audit() == []


def test_given_a_failed_condition_when_correcting_then_409_and_neither_the_correction_nor_its_audit_is_stored(
    aws, wired
):
    old = remember()
    # Another writer superseded the old episode between the read and the commit.
    aws.dynamodb.fail("TransactWriteItems", "TransactionCanceledException", reasons=("None", "ConditionalCheckFailed"))

    status, body = invoke(
        api_event("POST", f"/v1/episodes/{old}/corrections", episode_body(summary="Invoices as PDF, in English"))
    )

    assert (status, body["error"]) == (409, "conflict")
    assert aws.dynamodb.calls["TransactWriteItems"] == 2, "a failed condition is an answer, not retried"
    assert aws.episodes() == {old}
    assert aws.actions() == ["episode.written"]
    aws.assert_no_half_writes()


def test_given_a_throttled_recall_audit_when_recalling_then_503_and_nothing_was_served_unaudited(aws, wired):
    remember()
    aws.dynamodb.fail("TransactWriteItems", "ThrottlingException")

    status, body = invoke(api_event("POST", "/v1/recall", {"query": "invoice format", "actorId": "customer-42"}))

    assert (status, body["error"]) == (503, "storage_unavailable")
    assert "items" not in body
    assert aws.actions() == ["episode.written"]


# ---------------------------------------------------------------------------- S3: expiry through the stream


@pytest.fixture
def stream_processor(aws) -> Iterator[None]:
    settings = aws.settings
    store = DynamoTimelineStore(aws.resources["dynamodb"], settings.timeline_table, settings.audit_table)
    pseudonyms = Pseudonyms(store.pseudonym_key)
    archive = S3ColdArchive(aws.resources["s3"], settings.archive_bucket, pseudonyms, settings.archive_kms_key_id)
    stream.set_stream_processor(build_stream_processor(store.episodes, archive, pseudonyms))
    yield
    stream.set_stream_processor(None)


def ttl_removal() -> dict[str, Any]:
    """The recorded TTL removal after an ordinary insert, in one batch (a batch whose every record
    fails raises instead of reporting, and Lambda retries it whole)."""
    insert = json.loads((EVENTS / "streams" / "insert.json").read_text())["Records"]
    removal = json.loads((EVENTS / "streams" / "ttl_remove.json").read_text())["Records"]
    return {"Records": insert + removal}


EXPIRED = "01KAZ3Q7J9X2B8M4T6V0W1Y3C5"  # the episode in events/streams/ttl_remove.json


def test_given_s3_failing_the_archive_record_when_a_ttl_removal_arrives_then_the_record_is_retried_until_archived(
    aws, stream_processor
):
    aws.s3.fail("PutObject", "SlowDown", status=503, after=1, times=1)  # the pointer lands, the record does not
    event = ttl_removal()

    response = stream.handler(event, LocalLambdaContext(aws_request_id="stream"))

    sequence = event["Records"][1]["dynamodb"]["SequenceNumber"]
    assert response == {"batchItemFailures": [{"itemIdentifier": sequence}]}
    assert aws.actions() == [], "no expiry is audited before its archive record exists"
    assert aws.archived() == set()

    assert stream.handler(event, LocalLambdaContext(aws_request_id="stream")) == {"batchItemFailures": []}
    assert aws.archived() == {EXPIRED}
    assert aws.actions(EXPIRED) == ["episode.expired"]


def test_given_dynamodb_throttling_the_expiry_audit_when_a_ttl_removal_arrives_then_a_retry_audits_it_once(
    aws, stream_processor
):
    aws.dynamodb.fail("TransactWriteItems", "ThrottlingException", times=1)
    event = ttl_removal()

    first = stream.handler(event, LocalLambdaContext(aws_request_id="stream"))
    again = stream.handler(event, LocalLambdaContext(aws_request_id="stream"))
    redelivered = stream.handler(event, LocalLambdaContext(aws_request_id="stream"))

    assert len(first["batchItemFailures"]) == 1
    assert again == redelivered == {"batchItemFailures": []}
    assert aws.archived() == {EXPIRED}
    assert aws.actions(EXPIRED) == ["episode.expired"]


# ---------------------------------------------------------------------------- S3: erasure and restore


def expire_into_archive(clock: Any, wired: Any, **overrides: Any) -> str:
    event_id = remember(retention={"expiresAt": at(30)}, **overrides)
    clock.advance(days=2)
    wired.sweeper.sweep()
    return event_id


def test_given_s3_refusing_deletes_when_an_actor_is_erased_then_503_and_a_retry_finishes_the_erasure(aws, wired, clock):
    archived = expire_into_archive(clock, wired, actorId="gail")
    active = remember(actorId="gail", summary="Gail asked for a callback on Friday")
    aws.s3.fail("DeleteObjects", "InternalError", status=500)

    status, body = invoke(api_event("POST", "/v1/erasure", {"actorId": "gail"}, role="operator"))

    assert (status, body["error"]) == (503, "storage_unavailable")
    # Archive copies go first: nothing is tombstoned while a copy of it is still kept.
    assert active in aws.episodes()
    assert "episode.erased" not in aws.actions(active)
    assert aws.archived() == {archived}
    assert "actor.erased" not in aws.actions()

    aws.s3.heal()
    status, body = invoke(api_event("POST", "/v1/erasure", {"actorId": "gail"}, role="operator"))

    assert status == 200 and body["archivedRecordsDeleted"] == 1
    assert aws.archived() == set()
    assert aws.actions()[-1] == "actor.erased"
    aws.assert_no_half_writes()


def test_given_s3_refusing_deletes_when_an_archived_episode_is_erased_then_503_and_a_retry_finishes_it(
    aws, wired, clock
):
    archived = expire_into_archive(clock, wired)
    aws.s3.fail("DeleteObjects", "InternalError", status=500)

    status, _ = invoke(api_event("DELETE", f"/v1/episodes/{archived}"))

    assert status == 503
    assert aws.archived() == {archived}
    aws.s3.heal()
    assert invoke(api_event("DELETE", f"/v1/episodes/{archived}"))[0] == 200
    assert aws.archived() == set()
    assert aws.actions(archived)[-1] == "episode.erased"


def test_given_s3_failing_to_read_the_archive_when_restoring_then_503_and_nothing_changes(aws, wired, clock):
    archived = expire_into_archive(clock, wired)
    aws.s3.fail("GetObject", "InternalError", status=500)
    before = aws.audit()

    later = (clock.now() + timedelta(days=90)).isoformat()
    status, _ = invoke(api_event("POST", f"/v1/episodes/{archived}/restore", {"expiresAt": later}, role="operator"))

    assert status == 503
    assert aws.episodes() == set() and aws.archived() == {archived}
    assert aws.audit() == before


def test_given_s3_failing_to_delete_the_copy_when_restoring_then_a_retry_finishes_the_restore(aws, wired, clock):
    archived = expire_into_archive(clock, wired)
    later = (clock.now() + timedelta(days=90)).isoformat()
    aws.s3.fail("DeleteObjects", "InternalError", status=500, times=1)

    first, _ = invoke(api_event("POST", f"/v1/episodes/{archived}/restore", {"expiresAt": later}, role="operator"))
    assert first == 503
    assert archived in aws.episodes() and aws.archived() == {archived}  # restored, and still archived
    aws.assert_no_half_writes()

    retry, _ = invoke(api_event("POST", f"/v1/episodes/{archived}/restore", {"expiresAt": later}, role="operator"))
    assert retry == 200
    assert aws.archived() == set()


# ---------------------------------------------------------------------------- OpenSearch down or slow


@pytest.fixture
def closed_port() -> str:
    """An endpoint nothing listens on: every connection is refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"https://127.0.0.1:{port}"


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """An endpoint that accepts connections and never answers (a cluster too busy to reply)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        yield f"https://127.0.0.1:{server.getsockname()[1]}"


def with_opensearch(aws: Aws, minilm: Any, clock: Any, endpoint: str) -> Any:
    client = client_for(endpoint, "us-east-1", "es", timeout=0.3, retry_on_timeout=False)
    index = OpenSearchRecallIndex(client, aws.settings.opensearch_index, minilm.dimension, minilm.name)
    service = build_aws_service(
        aws.settings, dynamodb=aws.resources["dynamodb"], s3=aws.resources["s3"], embedder=minilm, index=index,
        clock=clock,
    )  # fmt: skip
    api.set_service(service)
    return service


@pytest.mark.parametrize("endpoint", ["closed_port", "silent_endpoint"], ids=["down", "slow"])
def test_given_opensearch_down_or_slow_when_recalling_then_the_timeline_answers_and_says_so(
    aws, wired, minilm, clock, request, endpoint
):
    remember()
    remember(actorId="customer-7", summary="Customer wants invoices by post")
    expected = {
        i["episode"]["eventId"]
        for i in invoke(api_event("POST", "/v1/recall", {"query": "invoice", "actorId": "customer-42"}))[1]["items"]
    }
    with_opensearch(aws, minilm, clock, request.getfixturevalue(endpoint))

    started = time.monotonic()
    status, body = invoke(api_event("POST", "/v1/recall", {"query": "invoice", "actorId": "customer-42"}))

    assert status == 200
    assert body["degraded"] == ["fallback_index"]
    assert {i["episode"]["eventId"] for i in body["items"]} == expected != set()
    assert time.monotonic() - started < 3, "one short attempt, not the client's default retries"


def test_given_opensearch_down_and_a_scope_too_large_for_the_fallback_when_recalling_then_503_not_a_full_read(
    aws, wired, closed_port, minilm
):
    remember()
    remember(summary="Customer wants invoices in Portuguese")
    store = wired.deps.episodes
    client = client_for(closed_port, "us-east-1", "es", timeout=0.3, retry_on_timeout=False)
    index = FallbackRecallIndex(
        OpenSearchRecallIndex(client, "episodic-recall", minilm.dimension, minilm.name),
        DynamoScopedIndex(store, max_scope=1, embedder=minilm.name),
    )
    scope = Scope(tenant_id="acme", now=wired.deps.clock.now(), actor_id="customer-42")

    with pytest.raises(StorageError) as raised:
        index.candidates(scope, "invoice", minilm.embed(["invoice"])[0], 10, embedder=minilm.name)

    assert raised.value.status == 503
    assert raised.value.details == {"reason": "fallback_scope_too_large", "maxScope": 1}


# ---------------------------------------------------------------------------- Bedrock during a write


@pytest.fixture
def bedrock(aws_env) -> Any:
    """A real bedrock-runtime client; botocore's own retries off, so the adapter's are what is seen."""
    return boto3.client("bedrock-runtime", region_name="us-east-1", config=Config(retries={"max_attempts": 1}))


@pytest.fixture
def stubber(bedrock) -> Iterator[Stubber]:
    with Stubber(bedrock) as stub:
        yield stub
        stub.assert_no_pending_responses()


@pytest.fixture
def titan_wired(aws, bedrock, clock) -> Iterator[Any]:
    embedder = TitanEmbedder(bedrock, dimensions=256, sleep=lambda _: None)
    service = build_aws_service(
        aws.settings, dynamodb=aws.resources["dynamodb"], s3=aws.resources["s3"], embedder=embedder, clock=clock
    )
    api.set_service(service)
    yield service
    api.set_service(None)


def titan_vector() -> dict[str, Any]:
    payload = json.dumps({"embedding": [1.0] + [0.0] * 255, "inputTextTokenCount": 9}).encode()
    return {"body": StreamingBody(io.BytesIO(payload), len(payload)), "contentType": "application/json"}


@pytest.mark.parametrize(
    ("code", "status"),
    [("ThrottlingException", 429), ("ModelTimeoutException", 408)],
    ids=["throttled", "model-timeout"],
)
def test_given_bedrock_failing_every_attempt_when_writing_then_503_and_nothing_is_stored(
    aws, stubber, titan_wired, code, status
):
    for _ in range(5):
        stubber.add_client_error("invoke_model", code, "injected", status)

    result, body = invoke(api_event("POST", "/v1/episodes", episode_body()))

    assert (result, body["error"]) == (503, "embedding_unavailable")
    assert f"after 5 attempts ({code})" in body["message"]
    assert aws.episodes() == set() and aws.audit() == []


def test_given_a_bedrock_model_timeout_once_when_writing_then_it_is_retried_and_stored_with_its_audit(
    aws, stubber, titan_wired
):
    stubber.add_client_error("invoke_model", "ModelTimeoutException", "injected", 408)
    stubber.add_response("invoke_model", titan_vector())

    event_id = remember()

    assert aws.actions(event_id) == ["episode.written"]
    aws.assert_no_half_writes()


def test_given_a_read_timeout_talking_to_bedrock_when_writing_a_batch_then_503_and_no_item_is_stored(
    aws, bedrock, titan_wired
):
    def time_out(**_: Any) -> None:
        raise ReadTimeoutError(endpoint_url="https://bedrock-runtime.us-east-1.amazonaws.com")

    bedrock.meta.events.register("before-send.bedrock-runtime.InvokeModel", time_out)
    items = [episode_body(summary=f"Customer wants invoice batch {n} as PDF") for n in range(3)]

    status, body = invoke(api_event("POST", "/v1/episodes/batch", {"episodes": items}))

    assert (status, body["error"]) == (503, "embedding_unavailable")
    assert aws.episodes() == set() and aws.audit() == []


@pytest.mark.parametrize("route", ["/v1/timeline", "/v1/audit"])
@pytest.mark.parametrize("cursor", ["W10", "W251bGwsbnVsbF0", "WzEsMl0", "WzFd", "!!!"])
def test_given_a_cursor_of_the_wrong_shape_when_paging_the_dynamodb_store_then_422(wired, route, cursor):
    event = api_event("GET", route, role="operator")
    event.update(queryStringParameters={"cursor": cursor}, multiValueQueryStringParameters={"cursor": [cursor]})
    status, body = invoke(event)
    assert (status, body["error"]) == (422, "invalid_request")
