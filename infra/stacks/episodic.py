"""The whole service in one stack: the wiring diagram of who may do what.

Every function is listed here with its handler, its environment (the names
``Settings.from_env`` and the handlers read) and its grants, so a reviewer can check least
privilege function by function without opening the components.

The stack is environment-agnostic (no account or region lookups), so it synthesises without
credentials; account and region come from the deploying credentials.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra.components import bedrock
from infra.components.api import RestApi
from infra.components.code import MAPPING_IN_ASSET, LambdaCode
from infra.components.data import TENANT_INDEXES, DataStores
from infra.components.functions import ServiceFunction, retention
from infra.components.ingestion import Ingestion
from infra.components.monitoring import Monitoring
from infra.components.nag import acknowledge
from infra.components.queues import failure_queue
from infra.components.search import SearchDomain
from infra.components.tenancy import TenantIsolation
from infra.components.workflows import Workflows, review_state_machine_arn
from infra.config import StageConfig

LAMBDA_TASK_ROOT = "/var/task"


class EpisodicStack(cdk.Stack):
    def __init__(
        self, scope: Construct, id: str, *, config: StageConfig, layer_dependencies: Path | None, **kwargs: object
    ) -> None:
        super().__init__(scope, id, description=f"Episodic memory service ({config.stage})", **kwargs)  # type: ignore[arg-type]
        self.config = config
        log_retention = retention(config.log_retention_days)
        self.data = data = DataStores(self, "Data", config=config)
        self.code = code = LambdaCode(
            self, "Code", mapping_file=config.ingest_mapping_path, dependencies=layer_dependencies
        )
        self.search = search = (
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
        review_machine_arn = review_state_machine_arn(self, config)

        service_env = {
            "EPISODIC_BACKEND": "aws",
            "EPISODIC_TIMELINE_TABLE": data.timeline.table_name,
            "EPISODIC_AUDIT_TABLE": data.audit.table_name,
            "EPISODIC_ARCHIVE_BUCKET": data.archive.bucket_name,
            "EPISODIC_ARCHIVE_KMS_KEY_ID": data.key.key_arn,
            "EPISODIC_EMBEDDER": "titan",
            "EPISODIC_TITAN_MODEL_ID": config.titan_model_id,
            "EPISODIC_TITAN_DIMENSIONS": str(config.titan_dimensions),
            "EPISODIC_REVIEW_STATE_MACHINE_ARN": review_machine_arn,
            "EPISODIC_REVIEW_TIMEOUT_DAYS": str(config.review_timeout_days),
            "POWERTOOLS_LOG_LEVEL": "INFO",
        }
        if search is not None:
            service_env |= {
                "EPISODIC_OPENSEARCH_ENDPOINT": search.endpoint,
                "EPISODIC_OPENSEARCH_SERVICE": "es",
                "EPISODIC_OPENSEARCH_INDEX": config.opensearch.index,
            }
        self.functions: dict[str, ServiceFunction] = {}

        def function(
            id: str, handler: str, description: str, *, environment: dict[str, str] | None = None, **props: Any
        ) -> ServiceFunction:
            made = ServiceFunction(
                self,
                id,
                code=code,
                handler=handler,
                description=description,
                environment={**service_env, **(environment or {})},
                key=data.key,
                log_retention=log_retention,
                **props,
            )
            made.role.add_managed_policy(data.audit_append_only)
            self.functions[id] = made
            return made

        def reviews(role: iam.IRole, *, start: bool = False) -> None:
            """Answering review task tokens (any function that may close a review) and starting
            review executions (any function that may write)."""
            actions = ["states:SendTaskSuccess", "states:SendTaskFailure"]
            if start:
                actions.append("states:StartExecution")
            role.add_to_principal_policy(iam.PolicyStatement(actions=actions, resources=[review_machine_arn]))

        # ---- the REST API: every use case, for every tenant (scoped in code by the caller's tenant)
        api = function(
            "Api", "functions.api.handler", "REST API", memory_mb=config.api.memory_mb, timeout=cdk.Duration.seconds(29)
        )
        data.grant_timeline(api.role, write=True, indexes=TENANT_INDEXES)
        data.grant_audit(api.role, read=True)
        data.grant_archive(api.role, read=True, delete=True)
        bedrock.grant_invoke(api.role, config.titan_model_id)
        reviews(api.role, start=True)

        # ---- the timeline's stream: TTL removals to the archive (+ audit), the recall projection
        stream = function(
            "Stream", "functions.stream.handler", "DynamoDB stream processor", timeout=cdk.Duration.minutes(1)
        )
        data.grant_audit(stream.role)
        data.grant_archive(stream.role)
        self.stream_failures = failure_queue(self, "StreamFailures")
        stream.function.add_event_source(
            sources.DynamoEventSource(
                data.timeline,
                starting_position=cdk.aws_lambda.StartingPosition.TRIM_HORIZON,
                batch_size=100,
                bisect_batch_on_error=True,
                report_batch_item_failures=True,
                retry_attempts=5,
                on_failure=sources.SqsDlq(self.stream_failures),
            )
        )

        # ---- EventBridge ingestion
        ingest_timeout = cdk.Duration.minutes(1)
        events_fn = function(
            "Ingest",
            "functions.events.handler",
            "EventBridge ingestion (SQS consumer)",
            memory_mb=config.worker_memory_mb,
            timeout=ingest_timeout,
            environment={"EPISODIC_INGEST_MAPPING": f"{LAMBDA_TASK_ROOT}/{MAPPING_IN_ASSET}"},
        )
        data.grant_timeline(events_fn.role, write=True)
        data.grant_audit(events_fn.role)
        bedrock.grant_invoke(events_fn.role, config.titan_model_id)
        reviews(events_fn.role, start=True)
        self.delivery_failures = failure_queue(self, "DeliveryFailures")
        self.ingestion = Ingestion(
            self,
            "Ingestion",
            config=config,
            key=data.key,
            handler_timeout=ingest_timeout,
            delivery_failures=self.delivery_failures,
        )
        events_fn.function.add_event_source(
            sources.SqsEventSource(
                self.ingestion.queue,
                batch_size=10,
                report_batch_item_failures=True,
                max_concurrency=config.ingest_concurrency,
            )
        )

        # ---- workflows: review, summarisation, relevance decay
        review_requests = function(
            "ReviewRequests",
            "functions.workflows.review_requests_handler",
            "Review queue consumer: keeps task tokens on reviews",
        )
        data.grant_review_token(review_requests.role)
        reviews(review_requests.role)
        expire = function(
            "ExpireReview", "functions.workflows.expire_review_handler", "Review timeout: deny by default"
        )
        data.grant_timeline(expire.role, write=True)
        data.grant_audit(expire.role)
        reviews(expire.role)
        busy = function(
            "FindBusyActors",
            "functions.workflows.find_busy_actors_handler",
            "Summarisation: actors with enough new events",
            timeout=cdk.Duration.minutes(1),
        )
        data.grant_timeline(busy.role, indexes=["gsi6"])
        summarise = function(
            "SummariseActor",
            "functions.workflows.summarise_actor_handler",
            "Summarisation: one actor's digest",
            memory_mb=config.worker_memory_mb,
            timeout=cdk.Duration.minutes(2),
            reserved_concurrency=config.summarise_concurrency,
            environment={"EPISODIC_SUMMARY_MODEL_ID": config.summary_model_id},
        )
        data.grant_timeline(summarise.role, write=True, indexes=["gsi1"])
        data.grant_audit(summarise.role)
        bedrock.grant_invoke(summarise.role, config.titan_model_id, config.summary_model_id)
        reviews(summarise.role, start=True)
        forget = function(
            "Forget",
            "functions.workflows.forget_handler",
            "Relevance-decay sweep, one page",
            memory_mb=config.worker_memory_mb,
            timeout=cdk.Duration.minutes(5),
            reserved_concurrency=config.forget_concurrency,
        )
        data.grant_timeline(forget.role, write=True, scan=True)
        data.grant_audit(forget.role)
        data.grant_archive(forget.role, read=True, delete=True)

        self.workflows = Workflows(
            self,
            "Workflows",
            config=config,
            key=data.key,
            log_retention=log_retention,
            expire_review=expire.function,
            find_busy_actors=busy.function,
            summarise_actor=summarise.function,
            forget=forget.function,
            delivery_failures=self.delivery_failures,
        )
        review_requests.function.add_event_source(
            sources.SqsEventSource(
                self.workflows.review_queue, batch_size=10, report_batch_item_failures=True, max_concurrency=2
            )
        )

        if search is not None:
            # Recall reads the index; the stream keeps it in step. Nothing else touches it.
            search.grant(api.role)
            search.grant(stream.role)

        # ---- the authorizer
        self.jwt_secret: secretsmanager.ISecret | None = None
        auth = config.auth
        auth_env = {
            "EPISODIC_JWT_ALGORITHM": auth.algorithm,
            "EPISODIC_JWT_ISSUER": auth.issuer,
            "EPISODIC_JWT_AUDIENCE": auth.audience,
            "EPISODIC_JWT_TENANT_CLAIM": auth.tenant_claim,
            "EPISODIC_JWT_ROLE_CLAIM": auth.role_claim,
            "POWERTOOLS_LOG_LEVEL": "INFO",
        }
        if auth.algorithm == "RS256":
            auth_env["EPISODIC_JWT_JWKS_URL"] = auth.jwks_url or ""
        else:
            self.jwt_secret = self._jwt_secret(auth.secret_name, data)
            auth_env["EPISODIC_JWT_SECRET_ARN"] = self.jwt_secret.secret_arn
        authorizer = ServiceFunction(
            self,
            "Authorizer",
            code=code,
            handler="functions.authorizer.handler",
            description="API Gateway authorizer: bearer JWT -> tenant, role, principal",
            environment=auth_env,
            key=data.key,
            log_retention=log_retention,
            memory_mb=256,
            timeout=cdk.Duration.seconds(10),
        )
        authorizer.role.add_managed_policy(data.audit_append_only)
        self.functions["Authorizer"] = authorizer
        if self.jwt_secret is not None:
            # Not Secret.grant_read: with the data key that would also add the role to the key's
            # policy, and the key would then depend on a role that depends on the key's tables.
            authorizer.role.add_to_principal_policy(
                iam.PolicyStatement(actions=["secretsmanager:GetSecretValue"], resources=[self.jwt_secret.secret_arn])
            )
            data.grant_key(authorizer.role, encrypt=False)

        self.api = RestApi(
            self,
            "Rest",
            config=config.api,
            stage=config.stage,
            handler=api.function,
            authorizer_function=authorizer.function,
            key=data.key,
            log_retention=log_retention,
        )

        self.tenancy = TenantIsolation(self, "Tenancy", data=data)

        self.monitoring = Monitoring(
            self,
            "Monitoring",
            stage=config.stage,
            key=data.key,
            alarm_email=config.alarm_email,
            api=self.api.api,
            functions={name: f.function for name, f in self.functions.items() if name != "Authorizer"},
            stream_function=stream.function,
            dead_letter_queues={
                "Ingest": self.ingestion.dead_letters,
                "ReviewRequests": self.workflows.review_dead_letters,
                "StreamFailures": self.stream_failures,
                "DeliveryFailures": self.delivery_failures,
            },
            machines=self.workflows.machines,
            review_queue=self.workflows.review_queue,
            expire_review=expire.function,
            search=search,
        )

        cdk.CfnOutput(self, "ApiUrl", value=self.api.api.url)
        cdk.CfnOutput(self, "IngestBusName", value=self.ingestion.bus.event_bus_name)
        cdk.CfnOutput(self, "TenantDataAccessRoleArn", value=self.tenancy.role.role_arn)
        cdk.CfnOutput(self, "AlarmTopicArn", value=self.monitoring.topic.topic_arn)
        if self.jwt_secret is not None:
            cdk.CfnOutput(self, "JwtSecretArn", value=self.jwt_secret.secret_arn)
        if search is not None:
            cdk.CfnOutput(self, "SearchEndpoint", value=search.endpoint)

    def _jwt_secret(self, name: str | None, data: DataStores) -> secretsmanager.ISecret:
        """An existing secret by name, or a new random 64-character one under the data key."""
        if name:
            return secretsmanager.Secret.from_secret_name_v2(self, "JwtSecret", name)
        secret = secretsmanager.Secret(
            self,
            "JwtSecret",
            description="HS256 signing secret shared with the token issuer",
            encryption_key=data.key,
            generate_secret_string=secretsmanager.SecretStringGenerator(password_length=64, exclude_punctuation=True),
            removal_policy=cdk.RemovalPolicy.RETAIN,
        )
        acknowledge(
            secret,
            (
                "AwsSolutions-SMG4",
                "Rotating an HS256 signing secret invalidates every issued token, so it is rotated "
                "together with the token issuer (infra/README.md); RS256 with a JWKS needs no secret.",
            ),
        )
        return secret
