"""The AWS composition root: the service wired to DynamoDB, S3, OpenSearch and Bedrock.

Clients are passed in (tests give clients inside ``moto.mock_aws``; Lambda builds them once
per container in :func:`service_from_settings`). Recall goes through OpenSearch when an
endpoint is configured, and falls back to the DynamoDB-only scoped index when OpenSearch
cannot answer (:class:`~episodic.adapters.opensearch.fallback.FallbackRecallIndex`); without
an endpoint it uses the scoped index alone. Reviews run as Step Functions executions when a
review state machine is configured.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from episodic.adapters.dynamodb.store import DynamoTimelineStore
from episodic.adapters.inprocess.notifier import LogReviewNotifier
from episodic.adapters.opensearch.fallback import FallbackRecallIndex
from episodic.adapters.opensearch.scoped import DynamoScopedIndex
from episodic.adapters.s3.archive import S3ColdArchive
from episodic.adapters.s3.checkpoints import S3Checkpoints
from episodic.adapters.stepfunctions.review_workflow import StepFunctionsReviewWorkflow
from episodic.application.ports import (
    Clock,
    ColdArchive,
    Embedder,
    EpisodeStore,
    EventSender,
    RecallIndex,
    RecallProjection,
    ReviewNotifier,
    ReviewTokens,
    Summariser,
)
from episodic.application.service import MemoryService
from episodic.application.settings import Settings
from episodic.application.usecases.expiry import Expiry
from episodic.bootstrap import embedders
from episodic.domain.forgetting.pseudonyms import Pseudonyms
from episodic.domain.model.events import ActorShown

if TYPE_CHECKING:
    from episodic.entrypoints.dynamodb_stream.processor import TimelineStreamProcessor

RECALL_TIMEOUT_SECONDS = 2.0
"""How long recall waits for OpenSearch (one attempt, no retry on timeout) before answering
from the timeline instead: well inside the API's 29 s, and far above a healthy cluster's
tens of milliseconds."""


def build_aws_service(
    settings: Settings,
    *,
    dynamodb: Any,
    s3: Any,
    embedder: Embedder,
    index: RecallIndex | None = None,
    stepfunctions: Any = None,
    summariser: Summariser | None = None,
    clock: Clock | None = None,
) -> MemoryService:
    """With an ``index`` (OpenSearch), recall falls back to the DynamoDB scoped index when it
    fails. With a ``stepfunctions`` client and ``review_state_machine_arn``, reviews run as Step
    Functions executions; otherwise they are announced on the log (and time out by the sweep).
    Without a ``summariser``, digests are extractive."""
    store = DynamoTimelineStore(dynamodb, settings.timeline_table, settings.audit_table)
    scoped = DynamoScopedIndex(store.episodes, max_scope=settings.max_scope, embedder=embedder.name)
    notifier: ReviewNotifier = LogReviewNotifier()
    if stepfunctions is not None and settings.review_state_machine_arn:
        notifier = StepFunctionsReviewWorkflow(stepfunctions, settings.review_state_machine_arn, store.review_tokens)
    from episodic.adapters.summarisers.extractive import ExtractiveSummariser

    pseudonyms = Pseudonyms(store.pseudonym_key)
    return MemoryService.build(
        store=store,
        pseudonyms=pseudonyms,
        index=scoped if index is None else FallbackRecallIndex(index, scoped),
        archive=S3ColdArchive(s3, settings.archive_bucket, pseudonyms, kms_key_id=settings.archive_kms_key_id),
        embedder=embedder,
        notifier=notifier,
        summariser=summariser or ExtractiveSummariser(embedder),
        settings=settings,
        clock=clock,
        backend="aws-dynamodb" + ("+opensearch" if index is not None else ""),
        checkpoints=S3Checkpoints(s3, settings.audit_heads_bucket) if settings.audit_heads_bucket else None,
    )


def titan_embedder(settings: Settings) -> Embedder:
    """Bedrock Titan V2. botocore makes at most two attempts per call (adaptive mode paces the
    client under throttling) and times out a silent connection, while the adapter's own bounded
    backoff retries throttling: together they stay well inside API Gateway's 29 s, so a request
    fails cleanly with 503 instead of being cut off mid-write by a 504."""
    import boto3
    from botocore.config import Config

    from episodic.adapters.bedrock.embedder import TitanEmbedder

    client = boto3.client(
        "bedrock-runtime",
        region_name=settings.aws_region,
        config=Config(retries={"mode": "adaptive", "max_attempts": 2}, connect_timeout=2, read_timeout=5),
    )
    return TitanEmbedder(client, model_id=settings.titan_model_id, dimensions=settings.titan_dimensions)


def opensearch_index(
    settings: Settings, ensure: bool = False, *, timeout: float = 10.0, retry_on_timeout: bool = True
) -> Any:
    """The OpenSearch recall index (also the stream's projection), or None without an endpoint.

    ``ensure`` checks the cluster's version and creates the index with its k-NN mapping if it
    is missing: the stream processor, the first writer, asks for it on start. (Writes could
    not create it without the mapping anyway: they go through an alias that must exist.)
    ``timeout`` and ``retry_on_timeout`` are the client's (see ``client_for``).
    """
    if not settings.opensearch_endpoint:
        return None
    import boto3

    from episodic.adapters.opensearch.client import client_for
    from episodic.adapters.opensearch.index import OpenSearchRecallIndex

    region = settings.aws_region or boto3.session.Session().region_name or "us-east-1"
    client = client_for(
        settings.opensearch_endpoint,
        region,
        settings.opensearch_service,
        timeout=timeout,
        retry_on_timeout=retry_on_timeout,
    )
    name, dimension = embedders.identity(settings)
    index = OpenSearchRecallIndex(client, settings.opensearch_index, dimension, name)
    if ensure:
        index.ensure_index()
    return index


def service_from_settings(settings: Settings) -> MemoryService:
    """What a Lambda function builds once per container when ``EPISODIC_BACKEND=aws``."""
    import boto3

    embedder = titan_embedder(settings) if embedders.chosen(settings) == "titan" else embedders.local_embedder(settings)
    return build_aws_service(
        settings,
        dynamodb=boto3.client("dynamodb", region_name=settings.aws_region),
        s3=boto3.client("s3", region_name=settings.aws_region),
        embedder=embedder,
        index=opensearch_index(settings, timeout=RECALL_TIMEOUT_SECONDS, retry_on_timeout=False),
        stepfunctions=boto3.client("stepfunctions", region_name=settings.aws_region),
        summariser=summariser_from_settings(settings, embedder),
    )


def summariser_from_settings(settings: Settings, embedder: Embedder) -> Summariser:
    """Bedrock Converse when ``summary_model_id`` is set (any digest that fails its grounding
    check falls back to the extractive one), else extractive only."""
    from episodic.adapters.summarisers.extractive import ExtractiveSummariser

    extractive = ExtractiveSummariser(embedder)
    if not settings.summary_model_id:
        return extractive
    import boto3

    from episodic.adapters.bedrock.summariser import ConverseSummariser
    from episodic.adapters.summarisers.grounded import GroundedFallbackSummariser

    bedrock = boto3.client("bedrock-runtime", region_name=settings.aws_region)
    return GroundedFallbackSummariser(ConverseSummariser(bedrock, model_id=settings.summary_model_id), extractive)


def review_tokens_from_settings(settings: Settings) -> ReviewTokens:
    """Where the review workflow's task tokens are kept: on the reviews in the timeline table."""
    import boto3

    dynamodb = boto3.client("dynamodb", region_name=settings.aws_region)
    return DynamoTimelineStore(dynamodb, settings.timeline_table, settings.audit_table).review_tokens


def stream_processor_from_settings(settings: Settings) -> TimelineStreamProcessor:
    """What the stream function builds once per container: the expiry rule over the timeline
    store (for audit records) and the S3 archive, the stream image reader, and the OpenSearch
    projection when an endpoint is configured."""
    import boto3

    store = DynamoTimelineStore(
        boto3.client("dynamodb", region_name=settings.aws_region), settings.timeline_table, settings.audit_table
    )
    pseudonyms = Pseudonyms(store.pseudonym_key)
    archive = S3ColdArchive(
        boto3.client("s3", region_name=settings.aws_region),
        settings.archive_bucket,
        pseudonyms,
        kms_key_id=settings.archive_kms_key_id,
    )
    events = None
    if settings.event_bus:
        from episodic.adapters.eventbridge.sender import EventBridgeSender

        events = EventBridgeSender(boto3.client("events", region_name=settings.aws_region), settings.event_bus)
    return stream_processor(
        store.episodes,
        archive,
        pseudonyms,
        opensearch_index(settings, ensure=True),
        events=events,
        shown=settings.event_actor,
    )


def stream_processor(
    store: EpisodeStore,
    archive: ColdArchive,
    pseudonyms: Pseudonyms,
    projection: RecallProjection | None = None,
    events: EventSender | None = None,
    shown: ActorShown = "pseudonym",
) -> TimelineStreamProcessor:
    """The stream processor over a timeline store and an archive (tests pass moto's), telling
    the audit stream's memory events to ``events`` when given."""
    from episodic.adapters.dynamodb.images import AuditImages, StreamImages
    from episodic.entrypoints.dynamodb_stream.processor import TimelineStreamProcessor

    return TimelineStreamProcessor(
        images=StreamImages(), expiry=Expiry(store, archive, pseudonyms), projection=projection,
        audit_images=AuditImages(), events=events, shown=shown,
    )  # fmt: skip
