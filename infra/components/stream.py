"""The stream-processing concern: the timeline's and the audit table's DynamoDB streams, read by
the ``Stream`` function.

``Stream`` -- ``functions.stream.handler``, 512 MB, 1 min:

* environment: the service environment (``FunctionFactory``), nothing of its own;
* timeline: no item access but the key of actor pseudonyms (every service function's); the event
  source mapping reads the stream (and grants that);
* audit: append (a TTL expiry is recorded); archive: write (TTL removals go to cold storage);
* OpenSearch: HTTP access, to keep the recall projection in step, when there is an index;
* the audit table's stream: each new record that is a memory event goes to the stack's bus
  (``events:PutEvents`` on it; ``EPISODIC_EVENT_BUS``), source ``episodic.memory``.

The mapping bisects a failing batch, reports item failures, retries five times and parks
what still fails in the ``StreamFailures`` queue, so one bad record never stalls the shard.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_lambda_event_sources as sources
from constructs import Construct

from infra.components.data import DataStores
from infra.components.functions import FunctionFactory
from infra.components.ids import StackLevelScope
from infra.components.queues import failure_queue
from infra.components.search import SearchDomain


class StreamProcessing(StackLevelScope):
    """The ``Stream`` function, its stream mapping and its on-failure queue. A
    ``StackLevelScope``: both were top-level constructs of the flat stack and keep their IDs."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        data: DataStores,
        functions: FunctionFactory,
        search: SearchDomain | None,
        bus: events.IEventBus,
    ) -> None:
        super().__init__(scope, id)
        self.function = stream = functions.service_function(
            self, "Stream", "functions.stream.handler", "DynamoDB stream processor", timeout=cdk.Duration.minutes(1),
            environment={"EPISODIC_EVENT_BUS": bus.event_bus_name},
        )  # fmt: skip
        bus.grant_put_events_to(stream.role)
        data.grant_audit(stream.role)
        data.grant_archive(stream.role)
        self.failures = failure_queue(self, "StreamFailures")
        for table in (data.timeline, data.audit):
            stream.function.add_event_source(self._source(table))
        if search is not None:
            search.grant(stream.role)  # the recall projection: the only writer of the index
        self.functions = {"Stream": stream}

    def _source(self, table: dynamodb.ITable) -> sources.DynamoEventSource:
        return sources.DynamoEventSource(
            table,
            starting_position=cdk.aws_lambda.StartingPosition.TRIM_HORIZON,
            batch_size=100,
            bisect_batch_on_error=True,
            report_batch_item_failures=True,
            retry_attempts=5,
            on_failure=sources.SqsDlq(self.failures),
        )
