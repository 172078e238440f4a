"""The workflows concern: review, summarisation and relevance decay -- the state machines
(``statemachines.py``) and the five functions they and the review queue run.

Every function gets the service environment (``FunctionFactory``); only ``SummariseActor``
adds to it (``EPISODIC_SUMMARY_MODEL_ID``). Grants, function by function:

* ``ReviewRequests`` (review queue consumer, at most 2 concurrent batches): read a review and
  keep its task token on it (timeline ``GetItem``/``UpdateItem`` only); answer task tokens.
* ``ExpireReview`` (the review machine's timeout: deny by default): timeline item reads and
  writes; audit append; answer task tokens.
* ``FindBusyActors`` (summarise machine): timeline reads, Query on ``by_day`` only.
* ``SummariseActor`` (the summarise Map, reserved ``summariseConcurrency``): timeline reads and
  writes, Query on ``by_actor``; audit append; Titan and the summary model; start reviews, answer
  task tokens.
* ``Forget`` (forget machine, one page of the decay sweep, reserved ``forgetConcurrency``):
  timeline reads, writes and **Scan** (the only function that scans); audit append; archive
  read, write and delete.

Each machine may invoke exactly the functions its definition names (``StateMachines``).
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from episodic.adapters.dynamodb import tables
from infra.components import bedrock
from infra.components.data import DataStores
from infra.components.functions import FunctionFactory, ServiceFunction
from infra.components.ids import StackLevelScope
from infra.components.statemachines import StateMachines, grant_review_access
from infra.config import StageConfig


class Workflows(Construct):
    """The five workflow functions and the machines, review queue and schedules around them.

    Give it the id ``Workflows`` (the machines' parent in the flat stack): the machines are its
    ``Default`` child and the functions sit in a ``StackLevelScope``, so nothing is renamed --
    nor the review queue's event source mapping, whose id CDK derives from the queue's path."""

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
        self._config, self._data, self._factory = config, data, functions
        group = StackLevelScope(self, "Functions")
        self.functions: dict[str, ServiceFunction] = {
            "ReviewRequests": self._review_requests(group),
            "ExpireReview": self._expire_review(group),
            "FindBusyActors": self._find_busy_actors(group),
            "SummariseActor": self._summarise_actor(group),
            "Forget": self._forget(group),
        }
        self.expire_review = self.functions["ExpireReview"]
        self.state_machines = StateMachines(
            self,
            "Default",
            config=config,
            key=data.key,
            log_retention=functions.log_retention,
            expire_review=self.expire_review.function,
            find_busy_actors=self.functions["FindBusyActors"].function,
            summarise_actor=self.functions["SummariseActor"].function,
            forget=self.functions["Forget"].function,
            delivery_failures=delivery_failures,
        )
        self.machines = self.state_machines.machines
        self.review_queue = self.state_machines.review_queue
        self.review_dead_letters = self.state_machines.review_dead_letters
        self.functions["ReviewRequests"].function.add_event_source(
            sources.SqsEventSource(self.review_queue, batch_size=10, report_batch_item_failures=True, max_concurrency=2)
        )

    def _review_requests(self, scope: Construct) -> ServiceFunction:
        made = self._factory.service_function(
            scope,
            "ReviewRequests",
            "functions.workflows.review_requests_handler",
            "Review queue consumer: keeps task tokens on reviews",
        )
        self._data.grant_review_token(made.role)
        grant_review_access(made.role, self._config)
        return made

    def _expire_review(self, scope: Construct) -> ServiceFunction:
        made = self._factory.service_function(
            scope, "ExpireReview", "functions.workflows.expire_review_handler", "Review timeout: deny by default"
        )
        self._data.grant_timeline(made.role, write=True)
        self._data.grant_audit(made.role)
        grant_review_access(made.role, self._config)
        return made

    def _find_busy_actors(self, scope: Construct) -> ServiceFunction:
        made = self._factory.service_function(
            scope,
            "FindBusyActors",
            "functions.workflows.find_busy_actors_handler",
            "Summarisation: actors with enough new events",
            timeout=cdk.Duration.minutes(1),
        )
        self._data.grant_timeline(made.role, indexes=[tables.BY_DAY.name])
        return made

    def _summarise_actor(self, scope: Construct) -> ServiceFunction:
        config = self._config
        made = self._factory.service_function(
            scope,
            "SummariseActor",
            "functions.workflows.summarise_actor_handler",
            "Summarisation: one actor's digest",
            memory_mb=config.worker_memory_mb,
            timeout=cdk.Duration.minutes(2),
            reserved_concurrency=config.summarise_concurrency,
            environment={"EPISODIC_SUMMARY_MODEL_ID": config.summary_model_id},
        )
        self._data.grant_timeline(made.role, write=True, indexes=[tables.BY_ACTOR.name])
        self._data.grant_audit(made.role)
        bedrock.grant_invoke(made.role, config.titan_model_id, config.summary_model_id)
        grant_review_access(made.role, config, start=True, answer=False)
        return made

    def _forget(self, scope: Construct) -> ServiceFunction:
        made = self._factory.service_function(
            scope,
            "Forget",
            "functions.workflows.forget_handler",
            "Relevance-decay sweep, one page",
            memory_mb=self._config.worker_memory_mb,
            timeout=cdk.Duration.minutes(5),
            reserved_concurrency=self._config.forget_concurrency,
        )
        self._data.grant_timeline(made.role, write=True, scan=True)
        self._data.grant_audit(made.role)
        self._data.grant_archive(made.role, read=True, delete=True)
        return made
