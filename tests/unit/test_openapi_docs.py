"""The OpenAPI document teaches the API: the allowed values of every enumeration are
listed and explained, and the fields a write needs say what they hold, with examples."""

from __future__ import annotations

import json

import pytest

from functions.api import app


@pytest.fixture(scope="module")
def schemas() -> dict:
    return json.loads(app.get_openapi_json_schema())["components"]["schemas"]


@pytest.mark.parametrize("enum", ["EventType", "SourceTrust", "PrivacyClass", "Status", "Confidence", "ProposedBy"])
def test_given_an_enumeration_when_documented_then_its_values_are_listed_and_each_is_explained(schemas, enum):
    schema = schemas[enum]
    assert schema["enum"] and schema.get("description")
    for value in schema["enum"]:
        assert f"``{value}``" in schema["description"], (enum, value)


@pytest.mark.parametrize("field", ["summary", "eventType", "actorId", "occurredAt", "sourceRefs", "sourceTrust"])
def test_given_a_field_a_write_needs_when_documented_then_it_has_an_example(schemas, field):
    prop = schemas["EpisodeProposal"]["properties"][field]
    assert prop.get("examples"), field
    assert prop.get("description") or "$ref" in prop, field


def test_given_the_recall_request_when_documented_then_its_filters_are_described(schemas):
    properties = schemas["RecallRequest"]["properties"]
    assert all(properties[name].get("description") for name in ("query", "actorId", "tags", "limit", "statuses"))
