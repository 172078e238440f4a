"""The AWS flavour on one machine (``episodic serve --backend aws-local``): moto in server mode
on loopback, so the boto3 code paths of the AWS backend run over real HTTP without an account.

What it does: starts moto's server on ``127.0.0.1``, points boto3 at it (fake credentials,
``AWS_ENDPOINT_URL``), creates the timeline and audit tables and the versioned archive bucket
from the same definitions the CDK app declares (:mod:`episodic.adapters.dynamodb.tables`), builds
the service exactly as a Lambda container does (:func:`~episodic.bootstrap.aws.
service_from_settings`, ``EPISODIC_BACKEND=aws``), and runs the stream function's body
(:func:`~episodic.entrypoints.dynamodb_stream.processor.process_batch`) on the timeline's DynamoDB
Stream, polled as Lambda's event source mapping would.

What it cannot do, because moto cannot: apply DynamoDB TTL (expiry is the in-process sweep),
serve OpenSearch (recall uses the DynamoDB scoped index, as a stack without a search domain
does), or run this project's code in Step Functions' Lambda tasks (the state machines are
created from ``statemachines/`` and a held write starts its review execution, but no task token
arrives: the operator decides through the API). With an ingestion
mapping (``EPISODIC_INGEST_MAPPING``) the EventBridge path runs too: the bus, one rule per mapped
source, the queue, and the ingestion function's body on each batch. Everything lives in moto's
memory and is gone when the process stops.
"""

from __future__ import annotations

import base64
import logging
import os
import threading
from collections.abc import Callable, Iterator, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from episodic.application.service import MemoryService
from episodic.application.settings import Settings
from episodic.application.usecases.ingestion import IngestMapping
from episodic.logs import service_logger

logger = service_logger("episodic-aws-local")

REGION = "us-east-1"
FAKE_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "aws-local", "AWS_SECRET_ACCESS_KEY": "aws-local"}
POLL_SECONDS = 0.5


@contextmanager
def moto_endpoint(port: int = 0) -> Iterator[str]:
    """moto's server on loopback (``port`` 0: any free one); yields its URL."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # not one line per AWS call
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        host, bound = server.get_host_and_port()
        yield f"http://{host}:{bound}"
    finally:
        server.stop()


def point_boto3_at(endpoint: str, environ: MutableMapping[str, str] = os.environ) -> None:
    """Every boto3 client made from now on talks to ``endpoint`` with fake credentials.
    (Current botocore resolves account-based DynamoDB endpoints, which moto's Streams need off.)"""
    environ.update(FAKE_CREDENTIALS)
    environ.update(
        {"AWS_ENDPOINT_URL": endpoint, "AWS_DEFAULT_REGION": REGION, "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled"}
    )
    environ.pop("AWS_SESSION_TOKEN", None)
    environ.pop("AWS_PROFILE", None)


def provision(settings: Settings, *, dynamodb: Any = None, s3: Any = None) -> None:
    """The tables (with TTL and Streams) and the versioned archive bucket, as the stack has them
    (with the given clients, or default ones)."""
    import boto3

    from episodic.adapters.dynamodb.tables import create_tables

    create_tables(dynamodb or boto3.client("dynamodb"), settings.timeline_table, settings.audit_table)
    s3 = s3 or boto3.client("s3")
    s3.create_bucket(Bucket=settings.archive_bucket)
    s3.put_bucket_versioning(Bucket=settings.archive_bucket, VersioningConfiguration={"Status": "Enabled"})


def lambda_record(record: dict[str, Any], stream_arn: str) -> dict[str, Any]:
    """A record as ``GetRecords`` returns it, shaped as Lambda delivers it: binary attributes
    base64-encoded, the creation time in epoch seconds, the stream's ARN attached."""
    change = dict(record["dynamodb"])
    for image in ("Keys", "NewImage", "OldImage"):
        if image in change:
            change[image] = _wire(change[image])
    created = change.get("ApproximateCreationDateTime")
    if isinstance(created, datetime):
        change["ApproximateCreationDateTime"] = int(created.timestamp())
    return {
        "eventID": record["eventID"],
        "eventName": record["eventName"],
        "eventVersion": record.get("eventVersion", "1.1"),
        "eventSource": "aws:dynamodb",
        "awsRegion": record.get("awsRegion", REGION),
        "dynamodb": change,
        "eventSourceARN": stream_arn,
        **({"userIdentity": record["userIdentity"]} if "userIdentity" in record else {}),
    }


def _wire(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: (base64.b64encode(v).decode() if k == "B" and isinstance(v, bytes) else _wire(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_wire(v) for v in value]
    return value


Handler = Callable[[dict[str, Any]], Any]


class _Poller:
    """A daemon thread that calls :meth:`poll_once` every :data:`POLL_SECONDS` and outlives a bad
    pass, as Lambda's event source mappings do; ``handled`` and ``failed`` count records."""

    name = "episodic-poller"

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.handled = 0
        self.failed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def poll_once(self) -> int:
        raise NotImplementedError

    def _hand_over(self, event: dict[str, Any]) -> set[str]:
        """The batch to the handler; the ids of the records it reports as failed."""
        failures = self.handler(event).get("batchItemFailures") or []
        self.handled += len(event["Records"])
        self.failed += len(failures)
        if failures:
            logger.warning("records failed", poller=self.name, failed=len(failures))
        return {f["itemIdentifier"] for f in failures}

    def _run(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            try:
                self.poll_once()
            except Exception:  # the poller must outlive a bad pass, as Lambda's mapping does
                logger.exception("poll failed; retrying", poller=self.name)


class StreamPoller(_Poller):
    """A table's DynamoDB Stream (the timeline's, the audit table's) fed to the stream function's
    body in batches, from the stream's beginning (a record reported as failed is logged; Lambda
    would retry it, this poller moves on)."""

    name = "episodic-stream-poller"

    def __init__(self, table: str, handler: Handler) -> None:
        import boto3

        super().__init__(handler)
        self.streams = boto3.client("dynamodbstreams")
        self.stream_arn = boto3.client("dynamodb").describe_table(TableName=table)["Table"]["LatestStreamArn"]
        self.iterators: dict[str, str | None] = {}

    def poll_once(self) -> int:
        """One pass over every shard; returns how many records were handed over."""
        shards = self.streams.describe_stream(StreamArn=self.stream_arn)["StreamDescription"]["Shards"]
        passed = 0
        for shard in shards:
            shard_id = shard["ShardId"]
            if shard_id not in self.iterators:
                self.iterators[shard_id] = self.streams.get_shard_iterator(
                    StreamArn=self.stream_arn, ShardId=shard_id, ShardIteratorType="TRIM_HORIZON"
                )["ShardIterator"]
            iterator = self.iterators[shard_id]
            if iterator is None:
                continue
            page = self.streams.get_records(ShardIterator=iterator, Limit=100)
            self.iterators[shard_id] = page.get("NextShardIterator")
            if page["Records"]:
                self._hand_over({"Records": [lambda_record(r, self.stream_arn) for r in page["Records"]]})
                passed += len(page["Records"])
        return passed


class QueuePoller(_Poller):
    """The ingestion queue fed to the ingestion function's body: a message is deleted once
    handled, and one reported as failed stays for redelivery after its visibility timeout."""

    name = "episodic-queue-poller"

    def __init__(self, queue_url: str, handler: Handler) -> None:
        import boto3

        super().__init__(handler)
        self.sqs = boto3.client("sqs")
        self.queue_url = queue_url
        self.queue_arn = self.sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]

    def poll_once(self) -> int:
        messages = self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10).get("Messages", [])
        if not messages:
            return 0
        failed = self._hand_over({"Records": [self._record(m) for m in messages]})
        done = [m for m in messages if m["MessageId"] not in failed]
        for start in range(0, len(done), 10):
            entries = [
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done[start : start + 10])
            ]
            self.sqs.delete_message_batch(QueueUrl=self.queue_url, Entries=entries)
        return len(messages)

    def _record(self, message: dict[str, Any]) -> dict[str, Any]:
        return {
            "messageId": message["MessageId"],
            "receiptHandle": message["ReceiptHandle"],
            "body": message["Body"],
            "attributes": message.get("Attributes", {}),
            "messageAttributes": message.get("MessageAttributes", {}),
            "md5OfBody": message.get("MD5OfBody", ""),
            "eventSource": "aws:sqs",
            "eventSourceARN": self.queue_arn,
            "awsRegion": REGION,
        }


INGEST_BUS = "episodic-ingest"
INGEST_QUEUE = "episodic-ingest"


def provision_ingestion(mapping: IngestMapping) -> str:
    """The ingestion bus, its queue and one rule per mapped source (its detail types), as the
    stack's ingestion construct declares them; returns the queue's URL."""
    import json

    import boto3

    bus = boto3.client("events")
    sqs = boto3.client("sqs")
    bus.create_event_bus(Name=INGEST_BUS)
    queue_url = sqs.create_queue(QueueName=INGEST_QUEUE)["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    for source in mapping.sources:
        pattern = {"source": [source.source], "detail-type": sorted({rule.detail_type for rule in source.rules})}
        rule = f"ingest-{source.source}".replace(".", "-")[:64]
        bus.put_rule(Name=rule, EventBusName=INGEST_BUS, EventPattern=json.dumps(pattern))
        bus.put_targets(Rule=rule, EventBusName=INGEST_BUS, Targets=[{"Id": "queue", "Arn": queue_arn}])
    return str(queue_url)


STATEMACHINES = Path(__file__).resolve().parents[3] / "statemachines"
"""The repository's Amazon States Language files (absent from an installed wheel)."""
ACCOUNT = "123456789012"  # moto's default account


def provision_workflows(settings: Settings) -> str | None:
    """The review, summarise and forget state machines from ``statemachines/``, with their
    definition substitutions as the stack makes them, and the review queue; returns the review
    machine's ARN (None when the definitions are not on disk). moto records executions but does
    not run this project's Lambda code in them, so no task token ever arrives: a held write
    still starts its execution, and the operator's decision through the API applies as it does
    when the decision beats the token."""
    if not STATEMACHINES.is_dir():
        return None
    import boto3

    def function(name: str) -> str:
        return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:episodic-{name}"

    queue = boto3.client("sqs").create_queue(QueueName="episodic-review-requests")["QueueUrl"]
    substitutions = {
        "review": {"ReviewQueueUrl": queue, "ReviewTimeoutSeconds": str(int(settings.review_timeout_days * 86400)),
                   "ExpireReviewFunctionArn": function("expire-review")},
        "summarise": {"FindBusyActorsFunctionArn": function("find-busy-actors"),
                      "SummariseActorFunctionArn": function("summarise-actor")},
        "forget": {"ForgetFunctionArn": function("forget")},
    }  # fmt: skip
    sfn = boto3.client("stepfunctions")
    arns = {}
    for name, values in substitutions.items():
        definition = (STATEMACHINES / f"{name}.asl.json").read_text(encoding="utf-8")
        for key, value in values.items():
            definition = definition.replace("${" + key + "}", value)
        arns[name] = sfn.create_state_machine(
            name=f"episodic-{name}", definition=definition, roleArn=f"arn:aws:iam::{ACCOUNT}:role/episodic-workflows"
        )["stateMachineArn"]
    return str(arns["review"])


@dataclass
class Laptop:
    """What ``aws_on_laptop`` runs: the service, the pollers, and where moto answers."""

    service: MemoryService
    stream: StreamPoller
    audit: StreamPoller
    """The audit table's stream, told as memory events when ``EPISODIC_EVENT_BUS`` names a bus."""
    queue: QueuePoller | None
    endpoint: str


@contextmanager
def aws_on_laptop(settings: Settings, port: int = 0) -> Iterator[Laptop]:
    """The AWS backend over moto's server, built as Lambda builds it, with the stream poller and,
    when ``settings.ingest_mapping`` names a mapping, the EventBridge ingestion path (bus, rules,
    queue and its poller); stops them all on the way out."""
    from episodic.application.usecases.ingestion import EventIngestor, load_mapping
    from episodic.bootstrap.aws import service_from_settings, stream_processor_from_settings
    from episodic.entrypoints.dynamodb_stream.processor import process_batch
    from episodic.entrypoints.eventbridge.queue import process_queue_batch

    with moto_endpoint(port) as endpoint:
        point_boto3_at(endpoint)
        aws = settings.model_copy(update={"backend": "aws", "aws_region": REGION, "opensearch_endpoint": None})
        provision(aws)
        aws = aws.model_copy(update={"review_state_machine_arn": provision_workflows(aws)})
        service = service_from_settings(aws)
        processor = stream_processor_from_settings(aws)

        def handle(event: dict[str, Any]) -> Any:
            return process_batch(event, processor)

        laptop = Laptop(service, StreamPoller(aws.timeline_table, handle), StreamPoller(aws.audit_table, handle),
                        None, endpoint)  # fmt: skip
        if aws.ingest_mapping is not None:
            mapping = load_mapping(aws.ingest_mapping)
            ingestor = EventIngestor(mapping, service)
            queue_url = provision_ingestion(mapping)
            laptop.queue = QueuePoller(queue_url, lambda e: process_queue_batch(e, lambda: ingestor))
        pollers = [p for p in (laptop.stream, laptop.audit, laptop.queue) if p is not None]
        for poller in pollers:
            poller.start()
        try:
            yield laptop
        finally:
            for poller in pollers:
                poller.stop()
            service.close()
