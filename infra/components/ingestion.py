"""The ingestion concern: an EventBridge bus of the service's own, one rule per registered
source, a queue, and the ``Ingest`` function that consumes it.

The rules are generated from the deployed mapping file (``ingestMapping`` in the context; the
same file ships with the function as ``EPISODIC_INGEST_MAPPING``), each matching exactly the
``detail-type`` values its source has a rule for. Events nobody mapped never reach the queue;
the handler still rejects anything malformed that does. The queue sits between the bus and the
function so a failing write retries per event and ends in the dead-letter queue, not lost.

``Ingest`` -- ``functions.events.handler``, ``workerMemoryMb``, 1 min, at most
``ingestConcurrency`` concurrent batches:

* environment: the service environment plus ``EPISODIC_INGEST_MAPPING`` (the mapping in the
  code asset) -- the only function that reads it;
* timeline: item reads and writes, no index; audit: append;
* Bedrock: the Titan embedding model; Step Functions: start reviews, answer task tokens.
"""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as events_targets
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.components import bedrock
from infra.components.code import MAPPING_IN_ASSET
from infra.components.data import DataStores
from infra.components.functions import FunctionFactory, ServiceFunction
from infra.components.ids import StackLevelScope
from infra.components.queues import work_queue
from infra.components.statemachines import grant_review_access
from infra.config import StageConfig

LAMBDA_TASK_ROOT = "/var/task"
INGEST_TIMEOUT = cdk.Duration.minutes(1)


def mapped_sources(mapping_file: Path) -> dict[str, list[str]]:
    """``{source: [detail-type, ...]}`` of the mapping file (the format that
    ``episodic.application.usecases.ingestion`` reads)."""
    mapping = json.loads(mapping_file.read_text())
    return {entry["source"]: sorted({rule["detailType"] for rule in entry["rules"]}) for entry in mapping["sources"]}


class Ingestion(Construct):
    """The ``Ingest`` function and the bus, rules and queue (``EventRouting``) that feed it.

    Give it the id ``Ingestion`` (the bus's parent in the flat stack): the routing is its
    ``Default`` child and the function sits in a ``StackLevelScope``, so neither is renamed --
    nor the queue's event source mapping, whose id CDK derives from the queue's path."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: StageConfig,
        data: DataStores,
        functions: FunctionFactory,
        delivery_failures: sqs.IQueue,
    ) -> None:
        super().__init__(scope, id)
        self.function = self._ingest_function(StackLevelScope(self, "Functions"), config, data, functions)
        self.functions = {"Ingest": self.function}
        self.routing = EventRouting(
            self,
            "Default",
            config=config,
            key=data.key,
            handler_timeout=INGEST_TIMEOUT,
            delivery_failures=delivery_failures,
        )
        self.bus, self.queue, self.dead_letters = self.routing.bus, self.routing.queue, self.routing.dead_letters
        self.function.function.add_event_source(
            sources.SqsEventSource(
                self.queue, batch_size=10, report_batch_item_failures=True, max_concurrency=config.ingest_concurrency
            )
        )

    @staticmethod
    def _ingest_function(
        scope: Construct, config: StageConfig, data: DataStores, functions: FunctionFactory
    ) -> ServiceFunction:
        ingest = functions.service_function(
            scope,
            "Ingest",
            "functions.events.handler",
            "EventBridge ingestion (SQS consumer)",
            memory_mb=config.worker_memory_mb,
            timeout=INGEST_TIMEOUT,
            environment={"EPISODIC_INGEST_MAPPING": f"{LAMBDA_TASK_ROOT}/{MAPPING_IN_ASSET}"},
        )
        data.grant_timeline(ingest.role, write=True)
        data.grant_audit(ingest.role)
        bedrock.grant_invoke(ingest.role, config.titan_model_id)
        grant_review_access(ingest.role, config, start=True, answer=False)
        return ingest


class EventRouting(Construct):
    """The bus (``episodic-<stage>-ingest``), one rule per mapped source, and the encrypted work
    queue (+ dead letters) the rules deliver to; undeliverable events go to ``delivery_failures``."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: StageConfig,
        key: kms.IKey,
        handler_timeout: cdk.Duration,
        delivery_failures: sqs.IQueue,
    ) -> None:
        super().__init__(scope, id)
        self.bus = events.EventBus(self, "Bus", event_bus_name=config.name("ingest"))
        # AWS's guidance: visibility at least six times the function timeout, so retries of a
        # batch never overlap the batch still running.
        self.queue, self.dead_letters = work_queue(
            self, "Events", key=key, visibility_timeout=cdk.Duration.seconds(handler_timeout.to_seconds() * 6)
        )
        target = events_targets.SqsQueue(
            self.queue, dead_letter_queue=delivery_failures, retry_attempts=8, max_event_age=cdk.Duration.hours(24)
        )
        self.rules: dict[str, events.Rule] = {}
        for source, detail_types in sorted(mapped_sources(config.ingest_mapping_path).items()):
            self.rules[source] = events.Rule(
                self,
                source,
                event_bus=self.bus,
                description=f"{source}: {', '.join(detail_types)}",
                event_pattern=events.EventPattern(source=[source], detail_type=detail_types),
                targets=[target],
            )
