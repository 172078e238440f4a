"""The Titan V2 embedder against a real bedrock-runtime client, stubbed with ``botocore.stub.Stubber``.

The client is real, so every request is checked against the service model; the Stubber pins
each call's exact parameters (the JSON body compared as decoded JSON, not as bytes). The
Stubber answers calls strictly in the order they were queued, so tests that queue several
different calls use ``max_workers=1``; the concurrency test queues identical responses and
checks the requests as a set.
"""

from __future__ import annotations

import io
import json
import threading
from typing import Any

import boto3
import numpy as np
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, EndpointConnectionError
from botocore.response import StreamingBody

from episodic.adapters.bedrock import embedder as bedrock_embedder
from episodic.adapters.bedrock.embedder import EmbeddingError, TitanEmbedder

MODEL_ID = "amazon.titan-embed-text-v2:0"


class JsonBody:
    """Equal to a request body whose decoded JSON is ``expected`` (key order and spacing aside)."""

    def __init__(self, expected: dict[str, Any]) -> None:
        self.expected = expected

    def __eq__(self, other: object) -> bool:
        return isinstance(other, bytes | str) and json.loads(other) == self.expected

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"JsonBody({self.expected!r})"


def request(text: str, dimensions: int = 1024) -> dict[str, Any]:
    """The exact InvokeModel parameters the embedder must send for ``text``."""
    return {
        "modelId": MODEL_ID,
        "contentType": "application/json",
        "accept": "application/json",
        "body": JsonBody({"inputText": text, "dimensions": dimensions, "normalize": True}),
    }


def response(embedding: list[float]) -> dict[str, Any]:
    payload = json.dumps({"embedding": embedding, "inputTextTokenCount": 3}).encode()
    return raw_response(payload)


def raw_response(payload: bytes) -> dict[str, Any]:
    return {"body": StreamingBody(io.BytesIO(payload), len(payload)), "contentType": "application/json"}


def unit(index: int, dimensions: int = 1024) -> list[float]:
    """A distinct unit vector per index, exact in float32."""
    vector = [0.0] * dimensions
    vector[index] = 1.0
    return vector


def test_given_duplicate_texts_when_embedded_then_order_is_kept_and_each_text_is_sent_once(client, stubber):
    # max_workers=1: the Stubber answers in queue order, so the calls must be made in order.
    embedder = TitanEmbedder(client, max_workers=1)
    for index, text in enumerate(["alpha", "beta", "gamma"]):
        stubber.add_response("invoke_model", response(unit(index)), request(text))

    vectors = embedder.embed(["alpha", "beta", "alpha", "gamma", "beta"])

    assert [vector.tolist() for vector in vectors] == [unit(0), unit(1), unit(0), unit(2), unit(1)]
    assert all(vector.dtype == np.float32 for vector in vectors)


def test_given_a_tenants_question_asked_again_then_it_is_kept_for_that_tenant_only(client, stubber):
    """A tenant's repeated question is not sent again; another tenant's same question is, so no
    tenant learns by a faster answer what another asked."""
    embedder = TitanEmbedder(client, max_workers=1)
    stubber.add_response("invoke_model", response(unit(0)), request("alpha"))
    first = embedder.embed_query("alpha", tenant="acme")
    assert embedder.embed_query("alpha", tenant="acme") is first  # kept: nothing sent
    stubber.add_response("invoke_model", response(unit(0)), request("alpha"))
    other = embedder.embed_query("alpha", tenant="globex")
    stubber.assert_no_pending_responses()
    assert other.tolist() == unit(0) and other is not first


def test_given_a_stored_text_embedded_again_then_it_is_sent_again(client, stubber):
    """Stored texts are not kept: a faster write would tell a tenant that someone wrote the same."""
    embedder = TitanEmbedder(client, max_workers=1)
    stubber.add_response("invoke_model", response(unit(0)), request("alpha"))
    embedder.embed(["alpha"])
    stubber.add_response("invoke_model", response(unit(0)), request("alpha"))
    assert embedder.embed(["alpha"])[0].tolist() == unit(0)
    stubber.assert_no_pending_responses()


def test_given_a_kept_vector_when_a_caller_writes_to_it_then_it_is_refused(client, stubber):
    embedder = TitanEmbedder(client)
    stubber.add_response("invoke_model", response(unit(0)), request("alpha"))
    vector = embedder.embed_query("alpha", tenant="acme")

    with pytest.raises(ValueError, match="read-only"):
        vector[0] = 0.5

    assert embedder.embed_query("alpha", tenant="acme").tolist() == unit(0)


def test_given_256_dimensions_when_embedding_then_the_request_asks_for_256_and_the_name_says_so(client, stubber):
    embedder = TitanEmbedder(client, dimensions=256)
    stubber.add_response("invoke_model", response(unit(7, 256)), request("alpha", dimensions=256))

    vectors = embedder.embed(["alpha"])

    assert vectors[0].tolist() == unit(7, 256)
    assert embedder.name == f"{MODEL_ID}/256"
    assert embedder.dimension == 256


def test_given_throttling_twice_when_embedding_then_it_waits_longer_each_time_and_succeeds(client, stubber, sleeps):
    embedder = TitanEmbedder(client, sleep=sleeps.append)
    for _ in range(2):
        stubber.add_client_error("invoke_model", "ThrottlingException", "slow down", 429, expected_params=request("a"))
    stubber.add_response("invoke_model", response(unit(0)), request("a"))

    vectors = embedder.embed(["a"])

    assert vectors[0].tolist() == unit(0)
    assert len(sleeps) == 2
    assert 0.25 <= sleeps[0] <= 0.5 <= sleeps[1] <= 1.0
    assert sleeps[0] < sleeps[1]


@pytest.mark.parametrize(
    ("code", "status"),
    [("ServiceUnavailableException", 503), ("ModelNotReadyException", 429), ("ModelTimeoutException", 408)],
)
def test_given_a_transient_error_when_embedding_then_it_is_retried(client, stubber, sleeps, code, status):
    embedder = TitanEmbedder(client, sleep=sleeps.append)
    stubber.add_client_error("invoke_model", code, "try again", status, expected_params=request("a"))
    stubber.add_response("invoke_model", response(unit(0)), request("a"))

    vectors = embedder.embed(["a"])

    assert vectors[0].tolist() == unit(0)
    assert len(sleeps) == 1


def test_given_throttling_that_never_ends_when_embedding_then_it_gives_up_after_five_attempts(client, stubber, sleeps):
    embedder = TitanEmbedder(client, sleep=sleeps.append)
    for _ in range(5):
        stubber.add_client_error("invoke_model", "ThrottlingException", "slow down", 429, expected_params=request("a"))

    with pytest.raises(EmbeddingError, match="after 5 attempts") as raised:
        embedder.embed(["a"])

    assert raised.value.status == 503
    # Each wait lies in [c/2, c] for a ceiling c that doubles from 0.5 s up to the 2 s cap.
    windows = [(0.25, 0.5), (0.5, 1.0), (1.0, 2.0), (1.0, 2.0)]
    assert len(sleeps) == len(windows)
    assert all(low <= wait <= high for wait, (low, high) in zip(sleeps, windows, strict=True))
    assert pytest.approx(2.0) == bedrock_embedder.MAX_DELAY


@pytest.mark.parametrize(
    ("code", "status"),
    [("AccessDeniedException", 403), ("ValidationException", 400), ("ResourceNotFoundException", 404)],
)
def test_given_a_permanent_error_when_embedding_then_it_is_raised_at_once(client, stubber, sleeps, code, status):
    embedder = TitanEmbedder(client, sleep=sleeps.append)
    stubber.add_client_error("invoke_model", code, "no", status, expected_params=request("a"))

    with pytest.raises(EmbeddingError, match=code) as raised:
        embedder.embed(["a"])

    assert sleeps == []
    assert isinstance(raised.value.__cause__, ClientError)
    assert raised.value.__cause__.response["Error"]["Code"] == code


@pytest.mark.parametrize(
    "payload",
    [
        json.dumps({"embedding": unit(0, 512), "inputTextTokenCount": 1}).encode(),
        json.dumps({"inputTextTokenCount": 1}).encode(),
        b"<html>not json</html>",
    ],
    ids=["wrong-length", "no-embedding", "not-json"],
)
def test_given_a_bad_response_when_embedding_then_it_is_an_embedding_error_and_nothing_is_cached(
    client, stubber, payload
):
    embedder = TitanEmbedder(client)
    stubber.add_response("invoke_model", raw_response(payload), request("a"))

    with pytest.raises(EmbeddingError):
        embedder.embed_query("a", tenant="acme")

    stubber.add_response("invoke_model", response(unit(0)), request("a"))
    assert embedder.embed_query("a", tenant="acme").tolist() == unit(0)


def test_given_an_unsupported_dimension_when_constructing_then_it_is_refused(client):
    with pytest.raises(ValueError, match="256, 512, 1024"):
        TitanEmbedder(client, dimensions=300)


def test_given_no_texts_when_embedding_then_nothing_is_sent(client, stubber):
    embedder = TitanEmbedder(client)

    assert embedder.embed([]) == []


def test_given_a_text_over_the_limit_when_embedding_then_its_first_50000_characters_are_sent(client, stubber):
    embedder = TitanEmbedder(client)
    text = "a" * 49_999 + "b" + "c" * 10_000
    stubber.add_response("invoke_model", response(unit(0)), request(text[:50_000]))

    vectors = embedder.embed([text])

    assert vectors[0].tolist() == unit(0)


def test_given_four_workers_when_embedding_eight_texts_then_calls_run_concurrently_and_all_results_arrive(
    client, stubber
):
    # The Stubber answers in queue order, so every response is the same and the requests are
    # checked as a set. The barrier only opens when four calls are in flight at once.
    embedder = TitanEmbedder(client, max_workers=4)
    texts = [f"text {i}" for i in range(8)]
    for _ in texts:
        stubber.add_response("invoke_model", response(unit(3)))
    barrier = threading.Barrier(4, timeout=5)
    sent: list[dict[str, Any]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        sent.append({**params, "body": json.loads(params["body"])})
        barrier.wait()

    client.meta.events.register("before-parameter-build.bedrock-runtime.InvokeModel", record)

    vectors = embedder.embed(texts)

    assert [vector.tolist() for vector in vectors] == [unit(3)] * 8
    expected = [{**request(text), "body": request(text)["body"].expected} for text in texts]
    assert sorted(sent, key=lambda call: call["body"]["inputText"]) == expected


def test_given_no_connection_when_embedding_then_it_is_an_embedding_error(aws_env):
    # No Stubber: the failure has to come from the transport, after botocore's own (here: no) retries.
    client = boto3.client(
        "bedrock-runtime", region_name="us-east-1", config=Config(retries={"mode": "standard", "max_attempts": 1})
    )

    def refuse(**_: Any) -> None:
        raise EndpointConnectionError(endpoint_url="https://bedrock-runtime.us-east-1.amazonaws.com")

    client.meta.events.register("before-send.bedrock-runtime.InvokeModel", refuse)

    with pytest.raises(EmbeddingError, match="connection failed"):
        TitanEmbedder(client).embed(["a"])
