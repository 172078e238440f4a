"""Shared fixtures.

The real all-MiniLM-L6-v2 model is loaded once per test process (``minilm``) and used by
every service, contract, API and evaluation test. Unit tests use the test doubles in
``tests/support/doubles.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from episodic.adapters.minilm.embedder import MiniLMEmbedder
from episodic.application.service import MemoryService
from episodic.application.settings import Settings
from episodic.bootstrap.local import build_local_service
from tests.support.doubles import FixedClock


@pytest.fixture(scope="session")
def minilm() -> MiniLMEmbedder:
    embedder = MiniLMEmbedder()
    embedder.embed(["warm up"])
    return embedder


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock()


@pytest.fixture
def local_service(tmp_path, minilm, clock) -> Iterator[MemoryService]:
    """The real local backend (SQLite + folder archive + MiniLM) on a fresh data dir."""
    service = build_local_service(Settings(data_dir=tmp_path / "data"), embedder=minilm, clock=clock)
    yield service
    service.close()


@pytest.fixture
def aws_env(monkeypatch):
    """Fake credentials and region for moto. Current botocore resolves account-based DynamoDB
    endpoints, which moto's Streams support needs switched off."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
    }.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def aws_resources(aws_env):
    """DynamoDB tables, a versioned KMS-encrypted archive bucket -- all under moto."""
    import boto3
    from moto import mock_aws

    from episodic.adapters.dynamodb.tables import create_tables

    with mock_aws():
        dynamodb = boto3.client("dynamodb")
        s3 = boto3.client("s3")
        kms_key = boto3.client("kms").create_key(Description="episodic archive")["KeyMetadata"]["KeyId"]
        settings = Settings(
            timeline_table="test-timeline",
            audit_table="test-audit",
            archive_bucket="test-archive",
            archive_kms_key_id=kms_key,
        )
        create_tables(dynamodb, settings.timeline_table, settings.audit_table)
        s3.create_bucket(Bucket=settings.archive_bucket)
        s3.put_bucket_versioning(Bucket=settings.archive_bucket, VersioningConfiguration={"Status": "Enabled"})
        yield {"dynamodb": dynamodb, "s3": s3, "settings": settings}


@pytest.fixture(params=["local", "aws"])
def service(request, tmp_path, minilm, clock) -> Iterator[MemoryService]:
    """The service on each backend; every contract and evaluation test runs on both, unchanged.

    ``local``: SQLite + folder archive, for real. ``aws``: DynamoDB + S3 under moto (moto never
    applies TTL and has no OpenSearch: TTL removals are tested with recorded stream events,
    and recall here uses the DynamoDB-only scoped index).
    """
    yield from service_on(request.param, request, tmp_path, minilm, clock)


def service_on(backend: str, request, tmp_path, minilm, clock) -> Iterator[MemoryService]:
    """The body of :func:`service` for one backend (``tests/contract`` adds a third)."""
    if backend == "local":
        svc = build_local_service(Settings(data_dir=tmp_path / "data"), embedder=minilm, clock=clock)
        yield svc
        svc.close()
    else:
        from episodic.bootstrap.aws import build_aws_service

        resources = request.getfixturevalue("aws_resources")
        yield build_aws_service(
            resources["settings"],
            dynamodb=resources["dynamodb"],
            s3=resources["s3"],
            embedder=minilm,
            clock=clock,
        )
