"""EventBridge ingestion: a bus of the service's own, one rule per registered source, a queue.

The rules are generated from the deployed mapping file (``ingestMapping`` in the context; the
same file ships with the function as ``EPISODIC_INGEST_MAPPING``), each matching exactly the
``detail-type`` values its source has a rule for. Events nobody mapped never reach the queue;
the handler still rejects anything malformed that does. The queue sits between the bus and the
function so a failing write retries per event and ends in the dead-letter queue, not lost.
"""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as events_targets
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.components.queues import work_queue
from infra.config import StageConfig


def mapped_sources(mapping_file: Path) -> dict[str, list[str]]:
    """``{source: [detail-type, ...]}`` of the mapping file (the format ``episodic.ingest`` reads)."""
    mapping = json.loads(mapping_file.read_text())
    return {entry["source"]: sorted({rule["detailType"] for rule in entry["rules"]}) for entry in mapping["sources"]}


class Ingestion(Construct):
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
