"""The REST API's gateway: API Gateway in front of the API function, with a JWT authorizer on
every route but ``GET /v1/health``, the Swagger UI and the console's page.

The routes are read from the API's own OpenAPI schema (``functions.api.app``), so the gateway
declares exactly the methods the handler serves: an unknown path is refused by API Gateway
before any Lambda runs, and a new route cannot be deployed without its authorizer.

Request validation at the edge is deliberately coarse -- required ``Authorization`` header,
JSON-object bodies -- because the full schema lives in the handler (Powertools + pydantic),
which answers 422 with the failing fields; two copies of the schema would drift.

The functions behind it belong to other constructs (``ApiService`` holds this gateway as its
``Default`` child; the authorizer function is the ``Authorizer``'s): the gateway only invokes them.
"""

from __future__ import annotations

import json

import aws_cdk as cdk
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.components.nag import acknowledge
from infra.components.waf import regional_web_acl
from infra.config import ApiConfig

PUBLIC_ROUTES = frozenset({("GET", "/v1/health"), ("GET", "/v1/swagger"), ("GET", "/console")})
"""Routes without the authorizer: liveness, the API description and the operator console's page
(static; it asks for a token and calls the other routes with it)."""
UNDOCUMENTED_ROUTES = frozenset({("GET", "/v1/swagger"), ("GET", "/console")})
"""Routes the handler serves that its OpenAPI document does not list."""
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
# One JSON line per request, with the caller's tenant and principal from the authorizer.
ACCESS_LOG_FORMAT = {
    "requestId": "$context.requestId",
    "ip": "$context.identity.sourceIp",
    "tenantId": "$context.authorizer.tenantId",
    "principalId": "$context.authorizer.principalId",
    "method": "$context.httpMethod",
    "resource": "$context.resourcePath",
    "status": "$context.status",
    "latencyMs": "$context.responseLatency",
    "integrationLatencyMs": "$context.integrationLatency",
    "responseLength": "$context.responseLength",
    "error": "$context.error.message",
    "authorizerError": "$context.authorizer.error",
}


def api_routes() -> list[tuple[str, str]]:
    """``(METHOD, path)`` for every route of ``functions.api``, plus the Swagger UI and the console."""
    from functions.api import app

    schema = app.get_openapi_schema()
    routes = {
        (method.upper(), path)
        for path, item in (schema.paths or {}).items()
        for method in item.model_dump(exclude_none=True)
        if method in {"get", "put", "post", "delete", "patch"}
    }
    return sorted(routes | UNDOCUMENTED_ROUTES)


class RestApi(Construct):
    """The regional REST API, its stage (access logs, throttling, X-Ray), the TOKEN authorizer,
    one method per route of the handler, JSON error responses, a usage plan, and the web ACL
    when ``api.waf`` is set. The only grants it makes are the Lambda permissions that let API
    Gateway invoke the two functions, one per method and one for the authorizer."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: ApiConfig,
        stage: str,
        handler: lambda_.IFunction,
        authorizer_function: lambda_.IFunction,
        key: kms.IKey,
        log_retention: logs.RetentionDays,
    ) -> None:
        super().__init__(scope, id)
        # Creation order matters: the deployment's logical ID hashes the API's parts in this order.
        self.access_logs = logs.LogGroup(
            self, "AccessLogs", retention=log_retention, encryption_key=key, removal_policy=cdk.RemovalPolicy.DESTROY
        )
        self.api = self._rest_api(config, stage)
        self.authorizer = apigw.TokenAuthorizer(
            self,
            "Jwt",
            handler=authorizer_function,
            identity_source=apigw.IdentitySource.header("Authorization"),
            validation_regex=r"^Bearer [A-Za-z0-9_=-]+\.[A-Za-z0-9_=-]+\.[A-Za-z0-9_=-]*$",
            # API Gateway caches a token's policy this long, so a revoked token lives at most a minute.
            results_cache_ttl=cdk.Duration.minutes(1),
        )
        self.validator = self.api.add_request_validator(
            "Validate", validate_request_body=True, validate_request_parameters=True
        )
        self.methods = self._methods(handler, require_api_keys=config.require_api_keys)
        self._json_error_responses()
        if config.waf:
            self.web_acl = regional_web_acl(self, config.waf_rate_limit, self.api.deployment_stage.stage_arn)
        else:
            acknowledge(
                self.api,
                (
                    "AwsSolutions-APIG3",
                    "WAF is a context setting (api.waf), on in prod; dev relies on the "
                    "authorizer and stage throttling to avoid the web ACL's fixed monthly cost.",
                ),
            )
        self.usage_plan = self.api.add_usage_plan(
            "Standard",
            description="Per-API-key throttling and daily quota (keys are required when requireApiKeys is set)",
            throttle=apigw.ThrottleSettings(rate_limit=config.throttle_rate, burst_limit=config.throttle_burst),
            quota=apigw.QuotaSettings(limit=config.quota_per_day, period=apigw.Period.DAY),
            api_stages=[apigw.UsagePlanPerApiStage(api=self.api, stage=self.api.deployment_stage)],
        )

    def _rest_api(self, config: ApiConfig, stage: str) -> apigw.RestApi:
        """The API and its one stage: JSON access logs, execution logs at ERROR without bodies,
        metrics, X-Ray, stage throttling."""
        api = apigw.RestApi(
            self,
            "Api",
            description=f"episodic memory API ({stage})",
            endpoint_types=[apigw.EndpointType.REGIONAL],
            cloud_watch_role=True,
            cloud_watch_role_removal_policy=cdk.RemovalPolicy.RETAIN,
            deploy_options=apigw.StageOptions(
                stage_name=stage,
                access_log_destination=apigw.LogGroupLogDestination(self.access_logs),
                access_log_format=apigw.AccessLogFormat.custom(json.dumps(ACCESS_LOG_FORMAT)),
                logging_level=apigw.MethodLoggingLevel.ERROR,
                data_trace_enabled=False,  # request and response bodies hold memories: never logged
                metrics_enabled=True,
                tracing_enabled=True,
                throttling_rate_limit=config.throttle_rate,
                throttling_burst_limit=config.throttle_burst,
            ),
        )
        acknowledge(
            api,
            (
                "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                "AmazonAPIGatewayPushToCloudWatchLogs]",
                "API Gateway's account-level CloudWatch role uses the "
                "AWS-managed AmazonAPIGatewayPushToCloudWatchLogs policy, as AWS documents it.",
            ),
            (
                "AwsSolutions-COG4",
                "Callers authenticate with JWTs from any identity provider through the Lambda "
                "authorizer (either fits the design); there is no Cognito user pool.",
            ),
        )
        return api

    def _methods(self, handler: lambda_.IFunction, *, require_api_keys: bool) -> dict[tuple[str, str], apigw.Method]:
        """One method per route of ``api_routes()``, all proxied to ``handler``; the authorizer
        and the Authorization header on every one but ``PUBLIC_ROUTES``."""
        json_object = self.api.add_model(
            "JsonObject",
            content_type="application/json",
            schema=apigw.JsonSchema(schema=apigw.JsonSchemaVersion.DRAFT4, type=apigw.JsonSchemaType.OBJECT),
        )
        integration = apigw.LambdaIntegration(handler, allow_test_invoke=False)
        methods: dict[tuple[str, str], apigw.Method] = {}
        for verb, path in api_routes():
            public = (verb, path) in PUBLIC_ROUTES
            methods[(verb, path)] = method = self.api.root.resource_for_path(path).add_method(
                verb,
                integration,
                authorizer=None if public else self.authorizer,
                authorization_type=apigw.AuthorizationType.NONE if public else apigw.AuthorizationType.CUSTOM,
                api_key_required=require_api_keys and not public,
                request_validator=self.validator,
                request_parameters=None if public else {"method.request.header.Authorization": True},
                request_models={"application/json": json_object} if verb in BODY_METHODS else None,
            )
            if public:
                acknowledge(
                    method,
                    (
                        "AwsSolutions-APIG4",
                        f"{verb} {path} is public by design: liveness, the API description and the console's "
                        "static page carry no tenant data.",
                    ),
                )
        return methods

    def _json_error_responses(self) -> None:
        """The API's own errors are JSON with "error" and "message"; the gateway's answer alike."""
        for response in (apigw.ResponseType.DEFAULT_4_XX, apigw.ResponseType.DEFAULT_5_XX):
            self.api.add_gateway_response(
                f"Json{response.response_type}",
                type=response,
                templates={
                    "application/json": '{"error": "$context.error.responseType", '
                    '"message": $context.error.messageString}'
                },
            )
