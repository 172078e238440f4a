"""A route's instance of the model it declares is written as JSON in one step, and the body sent is
the one Powertools' own response validation and the API's serialiser write: the same text for the
same model, other bodies validated as before, and text UTF-8 cannot hold still escaped."""

import json
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

import pytest
from aws_lambda_powertools.event_handler import APIGatewayRestResolver

from episodic.domain.model import CamelModel
from episodic.entrypoints.rest.app import _write_json
from episodic.entrypoints.rest.resolver import ConcurrentRestResolver


class Colour(StrEnum):
    TEAL = "teal"


class Inner(CamelModel):
    seen_at: datetime
    colour: Colour


class Answer(CamelModel):
    answer_id: str
    score: float
    items: list[Inner]
    note: str | None = None


class Wider(Answer):
    extra_field: str = "not declared"


ANSWER = Answer(
    answer_id="a-1",
    score=0.123456789,
    items=[Inner(seen_at=datetime(2026, 12, 7, 9, 30, tzinfo=UTC), colour=Colour.TEAL)],
    note="Café, naïve — 東京",
)


def event(path: str) -> dict[str, Any]:
    return {
        "resource": path,
        "path": path,
        "httpMethod": "GET",
        "headers": {},
        "multiValueHeaders": {},
        "queryStringParameters": None,
        "requestContext": {"requestId": "r", "stage": "$default", "path": path},
        "body": None,
        "isBase64Encoded": False,
    }


def apps() -> tuple[APIGatewayRestResolver, ConcurrentRestResolver]:
    """Powertools' own resolver and the API's, with the API's serialiser, serving the same routes."""
    pair = (
        APIGatewayRestResolver(enable_validation=True, serializer=_write_json),
        ConcurrentRestResolver(enable_validation=True, serializer=_write_json),
    )
    for app in pair:

        @app.get("/answer")
        def answer() -> Answer:
            return ANSWER

        @app.get("/wider")
        def wider() -> Answer:
            return Wider(**ANSWER.model_dump())

        @app.get("/as-dict")
        def as_dict() -> Answer:
            return ANSWER.model_dump(by_alias=True)  # type: ignore[return-value]

        @app.get("/invalid")
        def invalid() -> Answer:
            return {"answerId": "a-2"}  # type: ignore[return-value]

        @app.get("/surrogate")
        def surrogate() -> Answer:
            return ANSWER.model_copy(update={"note": "half a pair: \ud800"})

        @app.get("/many")
        def many() -> list[Answer]:
            return [ANSWER, ANSWER]

    return pair


@pytest.mark.parametrize("path", ["/answer", "/wider", "/as-dict", "/surrogate", "/many"])
def test_given_a_route_s_body_when_the_api_writes_it_then_it_is_the_text_powertools_own_way_writes(path: str):
    powertools, ours = apps()

    theirs, mine = powertools.resolve(event(path), None), ours.resolve(event(path), None)

    assert mine["statusCode"] == theirs["statusCode"] == 200
    assert mine["body"] == theirs["body"]
    json.loads(mine["body"])  # one JSON document, not a JSON string of one


def test_given_the_declared_model_when_it_is_written_then_it_is_compact_camel_case_utf8_json():
    _, ours = apps()

    body = ours.resolve(event("/answer"), None)["body"]

    assert body.startswith('{"answerId":"a-1","score":0.123456789,"items":[{"seenAt":"2026-12-07T09:30:00Z"')
    assert "東京" in body  # written as UTF-8 text, not escaped


def test_given_a_string_utf8_cannot_hold_when_it_is_written_then_it_is_escaped_not_a_failure():
    _, ours = apps()

    response = ours.resolve(event("/surrogate"), None)

    assert response["statusCode"] == 200
    assert "\\ud800" in response["body"]


def test_given_a_body_that_is_not_the_declared_model_when_it_is_returned_then_it_is_still_validated():
    _, ours = apps()

    response = ours.resolve(event("/invalid"), None)

    assert response["statusCode"] == 422  # Powertools' response validation, as without the shortcut


def test_given_a_subclass_of_the_declared_model_when_it_is_written_then_only_the_declared_fields_are_sent():
    _, ours = apps()

    sent = json.loads(ours.resolve(event("/wider"), None)["body"])

    assert "extraField" not in sent


def test_given_the_declared_model_when_it_is_written_then_no_dict_of_it_is_made_for_the_serialiser():
    dicts_written: list[Any] = []

    def counting(document: Any) -> str:
        dicts_written.append(document)
        return _write_json(document)

    app = ConcurrentRestResolver(enable_validation=True, serializer=counting)

    @app.get("/answer")
    def answer() -> Answer:
        return ANSWER

    @app.get("/as-dict")
    def as_dict() -> Answer:
        return ANSWER.model_dump(by_alias=True)  # type: ignore[return-value]

    app.resolve(event("/answer"), None)
    assert dicts_written == []
    app.resolve(event("/as-dict"), None)
    assert len(dicts_written) == 1
