"""The contract suite on a third backend: the AWS flavour over moto's *server* (real HTTP on
loopback, as ``episodic serve --backend aws-local`` runs it), besides ``local`` and in-process
``aws`` (``tests/conftest.py``)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from episodic.application.service import MemoryService
from episodic.application.settings import Settings
from episodic.bootstrap.aws_on_moto import moto_endpoint, provision
from tests.conftest import service_on


@pytest.fixture(scope="session")
def moto_server_url() -> Iterator[str]:
    with moto_endpoint() as url:
        yield url


@pytest.fixture(params=["local", "aws", "aws-http"])
def service(request, tmp_path, minilm, clock) -> Iterator[MemoryService]:
    if request.param != "aws-http":
        yield from service_on(request.param, request, tmp_path, minilm, clock)
        return
    import boto3

    from episodic.bootstrap.aws import build_aws_service

    request.getfixturevalue("aws_env")
    url = request.getfixturevalue("moto_server_url")
    suffix = uuid.uuid4().hex[:10]  # one moto server per session; fresh tables per test
    settings = Settings(
        backend="aws", timeline_table=f"t-{suffix}", audit_table=f"a-{suffix}", archive_bucket=f"b-{suffix}"
    )
    dynamodb, s3 = boto3.client("dynamodb", endpoint_url=url), boto3.client("s3", endpoint_url=url)
    provision(settings, dynamodb=dynamodb, s3=s3)
    yield build_aws_service(settings, dynamodb=dynamodb, s3=s3, embedder=minilm, clock=clock)
