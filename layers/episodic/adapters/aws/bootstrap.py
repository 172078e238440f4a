"""The AWS composition root: the service wired to DynamoDB, S3 and the given embedder.

Clients are passed in (tests give clients inside ``moto.mock_aws``; Lambda gives clients
built once per container). Reviews are announced on the log until the Step Functions
review workflow replaces the notifier (workflows issue).
"""

from __future__ import annotations

from typing import Any

from episodic.adapters.aws.dynamodb_store import DynamoTimelineStore
from episodic.adapters.aws.s3_archive import S3ColdArchive
from episodic.adapters.aws.scoped_index import DynamoScopedIndex
from episodic.adapters.local.notifier import LogReviewNotifier
from episodic.ports import Clock, Embedder
from episodic.service import MemoryService
from episodic.settings import Settings


def build_aws_service(
    settings: Settings,
    *,
    dynamodb: Any,
    s3: Any,
    embedder: Embedder,
    clock: Clock | None = None,
) -> MemoryService:
    store = DynamoTimelineStore(dynamodb, settings.timeline_table, settings.audit_table)
    return MemoryService(
        store=store,
        index=DynamoScopedIndex(store, max_scope=settings.max_scope, embedder=embedder.name),
        archive=S3ColdArchive(s3, settings.archive_bucket, kms_key_id=settings.archive_kms_key_id),
        embedder=embedder,
        notifier=LogReviewNotifier(),
        settings=settings,
        clock=clock,
        backend="aws-dynamodb",
    )
