"""Fixtures shared by the Bedrock adapter tests: a real client, stubbed at its boundary."""

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber


@pytest.fixture
def client(aws_env: None) -> Any:
    """A real bedrock-runtime client; ``aws_env`` sets fake credentials with monkeypatch."""
    return boto3.client("bedrock-runtime", region_name="us-east-1")


@pytest.fixture
def stubber(client: Any) -> Iterator[Stubber]:
    """Active for the whole test; any call nobody queued fails, and every queued call must happen."""
    with Stubber(client) as stub:
        yield stub
        stub.assert_no_pending_responses()


@pytest.fixture
def sleeps() -> list[float]:
    return []
