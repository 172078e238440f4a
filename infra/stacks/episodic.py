"""The whole service in one stack, composed of one construct per concern.

Each construct owns its resources and its Lambda functions, with their environment and their
grants; its module docstring lists them function by function, so a reviewer can check least
privilege without reading the wiring:

* ``DataStores`` (``data.py``): the data key, the tables, the archive -- and the narrow grant
  methods every construct below uses;
* ``SearchDomain`` (``search.py``): the OpenSearch domain; admits the roles it is given;
* ``Ingestion`` (``ingestion.py``): ``Ingest``; the bus, a rule per mapped source, the queue;
* ``Workflows`` (``workflows.py``): ``ReviewRequests``, ``ExpireReview``, ``FindBusyActors``,
  ``SummariseActor``, ``Forget``; the state machines, the review queue, the schedules;
* ``Authorizer`` (``authorizer.py``): ``Authorizer``; the HS256 secret;
* ``ApiService`` (``api.py``): ``Api``; the REST API (``gateway.py``);
* ``StreamProcessing`` (``stream.py``): ``Stream``; the stream mapping and its on-failure queue;
* ``TenantIsolation`` (``tenancy.py``), ``Monitoring`` (``monitoring.py``): the tenant policy
  and role; the alarms and the dashboard.

The stack itself holds only what several constructs share -- the code, the service
environment every service function reads, the queue where EventBridge and Scheduler park
undeliverable events -- and passes references between the constructs. The order of
construction follows the references (the API needs the authorizer function) and keeps the
statements of shared policies in their deployed order: the data key's policy gains
EventBridge's statement (ingestion) before Secrets Manager's (authorizer) and CloudWatch's
(monitoring); the domain admits the ``Api`` role, then the ``Stream`` role.

Logical IDs are the flat stack's too (``components/ids.py``): grouping constructs must not
replace a table, a key or a log group. ``tests/infra/test_logical_ids.py`` pins them.

The stack is environment-agnostic (no account or region lookups), so it synthesises without
credentials; account and region come from the deploying credentials.
"""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
from constructs import Construct

from infra.components.api import ApiService
from infra.components.authorizer import Authorizer
from infra.components.code import LambdaCode
from infra.components.data import DataStores
from infra.components.functions import FunctionFactory, ServiceFunction, retention
from infra.components.ids import stack_level_logical_id
from infra.components.ingestion import Ingestion
from infra.components.monitoring import Monitoring
from infra.components.proof import AuditProof
from infra.components.queues import failure_queue
from infra.components.search import SearchDomain
from infra.components.statemachines import review_state_machine_arn
from infra.components.stream import StreamProcessing
from infra.components.tenancy import TenantIsolation
from infra.components.workflows import Workflows
from infra.config import StageConfig


class EpisodicStack(cdk.Stack):
    def __init__(
        self, scope: Construct, id: str, *, config: StageConfig, layer_dependencies: Path | None, **kwargs: object
    ) -> None:
        super().__init__(scope, id, description=f"Episodic memory service ({config.stage})", **kwargs)  # type: ignore[arg-type]
        self.config = config
        log_retention = retention(config.log_retention_days)
        self.data = data = DataStores(self, "Data", config=config)
        self.code = LambdaCode(self, "Code", mapping_file=config.ingest_mapping_path, dependencies=layer_dependencies)
        self.search = (
            SearchDomain(
                self,
                "Search",
                config=config.opensearch,
                domain_name=config.name("search"),
                key=data.key,
                log_retention=log_retention,
            )
            if config.opensearch.enabled
            else None
        )
        factory = FunctionFactory(
            code=self.code, key=data.key, log_retention=log_retention, audit_append_only=data.audit_append_only,
            pseudonym_key_access=data.pseudonym_key_access, service_environment=self._service_environment(),
        )  # fmt: skip
        # Where EventBridge rule targets and Scheduler schedules park what they could not deliver.
        self.delivery_failures = failure_queue(self, "DeliveryFailures")
        self.ingestion = Ingestion(
            self, "Ingestion", config=config, data=data, functions=factory, delivery_failures=self.delivery_failures
        )
        self.workflows = Workflows(
            self, "Workflows", config=config, data=data, functions=factory, delivery_failures=self.delivery_failures
        )
        self.authorizer = Authorizer(self, "Auth", config=config.auth, data=data, functions=factory)
        self.api = ApiService(
            self,
            "Rest",
            config=config,
            data=data,
            functions=factory,
            search=self.search,
            authorizer=self.authorizer.function.function,
        )
        # After the API: the domain's policy admits the Api role, then the Stream role.
        self.stream = StreamProcessing(
            self, "StreamProcessing", data=data, functions=factory, search=self.search, bus=self.ingestion.bus
        )
        self.proof = AuditProof(
            self, "Proof", config=config, data=data, functions=factory, delivery_failures=self.delivery_failures
        )
        self.functions: dict[str, ServiceFunction] = {
            name: function
            for part in (self.api, self.stream, self.ingestion, self.workflows, self.authorizer, self.proof)
            for name, function in part.functions.items()
        }
        self.tenancy = TenantIsolation(self, "Tenancy", data=data)
        self.monitoring = self._monitoring()
        self._outputs()

    def _allocate_logical_id(self, cfn_element: cdk.CfnElement) -> str:
        """CDK's path-based IDs, except below a ``StackLevelScope`` (``components/ids.py``)."""
        return stack_level_logical_id(cfn_element) or super()._allocate_logical_id(cfn_element)

    def _service_environment(self) -> dict[str, str]:
        """What every service function reads (``Settings.from_env`` and the handlers): where the
        data is, which models embed, which machine reviews, where recall searches."""
        config, data = self.config, self.data
        environment = {
            "EPISODIC_BACKEND": "aws",
            "EPISODIC_TIMELINE_TABLE": data.timeline.table_name,
            "EPISODIC_AUDIT_TABLE": data.audit.table_name,
            "EPISODIC_ARCHIVE_BUCKET": data.archive.bucket_name,
            "EPISODIC_ARCHIVE_KMS_KEY_ID": data.key.key_arn,
            "EPISODIC_EMBEDDER": "titan",
            "EPISODIC_TITAN_MODEL_ID": config.titan_model_id,
            "EPISODIC_TITAN_DIMENSIONS": str(config.titan_dimensions),
            "EPISODIC_REVIEW_STATE_MACHINE_ARN": review_state_machine_arn(self, config),
            "EPISODIC_REVIEW_TIMEOUT_DAYS": str(config.review_timeout_days),
            "POWERTOOLS_LOG_LEVEL": "INFO",
        }
        if self.search is not None:
            environment |= {
                "EPISODIC_OPENSEARCH_ENDPOINT": self.search.endpoint,
                "EPISODIC_OPENSEARCH_SERVICE": "es",
                "EPISODIC_OPENSEARCH_INDEX": config.opensearch.index,
            }
        return environment

    def _monitoring(self) -> Monitoring:
        """Alarms on every function but the authorizer (``monitoring.py`` says why), every
        dead-letter queue, every workflow, the review backlog and the recall index."""
        return Monitoring(
            self,
            "Monitoring",
            stage=self.config.stage,
            key=self.data.key,
            alarm_email=self.config.alarm_email,
            api=self.api.gateway.api,
            functions={name: f.function for name, f in self.functions.items() if name != "Authorizer"},
            stream_function=self.stream.function.function,
            dead_letter_queues={
                "Ingest": self.ingestion.dead_letters,
                "ReviewRequests": self.workflows.review_dead_letters,
                "StreamFailures": self.stream.failures,
                "DeliveryFailures": self.delivery_failures,
            },
            machines=self.workflows.machines,
            review_queue=self.workflows.review_queue,
            expire_review=self.workflows.expire_review.function,
            search=self.search,
        )

    def _outputs(self) -> None:
        cdk.CfnOutput(self, "ApiUrl", value=self.api.gateway.api.url)
        cdk.CfnOutput(self, "IngestBusName", value=self.ingestion.bus.event_bus_name)
        cdk.CfnOutput(self, "AuditHeadsBucketName", value=self.proof.bucket.bucket_name)
        cdk.CfnOutput(self, "TenantDataAccessRoleArn", value=self.tenancy.role.role_arn)
        cdk.CfnOutput(self, "AlarmTopicArn", value=self.monitoring.topic.topic_arn)
        if self.authorizer.secret is not None:
            cdk.CfnOutput(self, "JwtSecretArn", value=self.authorizer.secret.secret_arn)
        if self.search is not None:
            cdk.CfnOutput(self, "SearchEndpoint", value=self.search.endpoint)
