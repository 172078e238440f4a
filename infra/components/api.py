"""The REST API: API Gateway in front of the API function, with a JWT authorizer on every route
but ``GET /v1/health`` and the Swagger UI.

The routes are read from the API's own OpenAPI schema (``functions.api.app``), so the gateway
declares exactly the methods the handler serves: an unknown path is refused by API Gateway
before any Lambda runs, and a new route cannot be deployed without its authorizer.

Request validation at the edge is deliberately coarse -- required ``Authorization`` header,
JSON-object bodies -- because the full schema lives in the handler (Powertools + pydantic),
which answers 422 with the failing fields; two copies of the schema would drift.
"""

from __future__ import annotations

import json

import aws_cdk as cdk
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_wafv2 as wafv2
from constructs import Construct

from infra.components.nag import acknowledge
from infra.config import ApiConfig

PUBLIC_ROUTES = frozenset({("GET", "/v1/health"), ("GET", "/v1/swagger")})
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


def api_routes() -> list[tuple[str, str]]:
    """``(METHOD, path)`` for every route of ``functions.api``, plus the Swagger UI."""
    from functions.api import app

    schema = app.get_openapi_schema()
    routes = {
        (method.upper(), path)
        for path, item in (schema.paths or {}).items()
        for method in item.model_dump(exclude_none=True)
        if method in {"get", "put", "post", "delete", "patch"}
    }
    return sorted(routes | {("GET", "/v1/swagger")})


class RestApi(Construct):
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
        self.access_logs = logs.LogGroup(
            self, "AccessLogs", retention=log_retention, encryption_key=key, removal_policy=cdk.RemovalPolicy.DESTROY
        )
        access_format = {
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
        self.api = apigw.RestApi(
            self,
            "Api",
            description=f"episodic memory API ({stage})",
            endpoint_types=[apigw.EndpointType.REGIONAL],
            cloud_watch_role=True,
            cloud_watch_role_removal_policy=cdk.RemovalPolicy.RETAIN,
            deploy_options=apigw.StageOptions(
                stage_name=stage,
                access_log_destination=apigw.LogGroupLogDestination(self.access_logs),
                access_log_format=apigw.AccessLogFormat.custom(json.dumps(access_format)),
                logging_level=apigw.MethodLoggingLevel.ERROR,
                data_trace_enabled=False,  # request and response bodies hold memories: never logged
                metrics_enabled=True,
                tracing_enabled=True,
                throttling_rate_limit=config.throttle_rate,
                throttling_burst_limit=config.throttle_burst,
            ),
        )
        acknowledge(
            self.api,
            (
                "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                "AmazonAPIGatewayPushToCloudWatchLogs]",
                "API Gateway's account-level CloudWatch role uses the "
                "AWS-managed AmazonAPIGatewayPushToCloudWatchLogs policy, as AWS documents it.",
            ),
            (
                "AwsSolutions-COG4",
                "Callers authenticate with JWTs from any identity provider through the Lambda "
                "authorizer (issue 6 allows either); there is no Cognito user pool.",
            ),
        )
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
        json_object = self.api.add_model(
            "JsonObject",
            content_type="application/json",
            schema=apigw.JsonSchema(schema=apigw.JsonSchemaVersion.DRAFT4, type=apigw.JsonSchemaType.OBJECT),
        )
        integration = apigw.LambdaIntegration(handler, allow_test_invoke=False)
        self.methods: dict[tuple[str, str], apigw.Method] = {}
        for verb, path in api_routes():
            resource = self.api.root.resource_for_path(path)
            public = (verb, path) in PUBLIC_ROUTES
            method = resource.add_method(
                verb,
                integration,
                authorizer=None if public else self.authorizer,
                authorization_type=apigw.AuthorizationType.NONE if public else apigw.AuthorizationType.CUSTOM,
                api_key_required=config.require_api_keys and not public,
                request_validator=self.validator,
                request_parameters=None if public else {"method.request.header.Authorization": True},
                request_models={"application/json": json_object} if verb in BODY_METHODS else None,
            )
            self.methods[(verb, path)] = method
            if public:
                acknowledge(
                    method,
                    (
                        "AwsSolutions-APIG4",
                        f"{verb} {path} is public by design: liveness and the API description carry no tenant data.",
                    ),
                )
        for response in (apigw.ResponseType.DEFAULT_4_XX, apigw.ResponseType.DEFAULT_5_XX):
            # The API's own errors are JSON with "error" and "message"; the gateway's answer alike.
            self.api.add_gateway_response(
                f"Json{response.response_type}",
                type=response,
                templates={
                    "application/json": '{"error": "$context.error.responseType", '
                    '"message": $context.error.messageString}'
                },
            )
        if config.waf:
            self.web_acl = self._web_acl(config.waf_rate_limit)
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

    def _web_acl(self, rate_limit: int) -> wafv2.CfnWebACL:
        """A per-IP rate limit and AWS's known-bad-inputs and IP-reputation rule groups.

        AWS's common rule set is left out on purpose: its XSS, path-traversal and body-size
        rules would block legitimate memories about code (``<script>``, ``../``, a 100-episode
        batch over 8 KB)."""

        def managed(name: str, priority: int) -> wafv2.CfnWebACL.RuleProperty:
            return wafv2.CfnWebACL.RuleProperty(
                name=name,
                priority=priority,
                override_action=wafv2.CfnWebACL.OverrideActionProperty(none={}),
                statement=wafv2.CfnWebACL.StatementProperty(
                    managed_rule_group_statement=wafv2.CfnWebACL.ManagedRuleGroupStatementProperty(
                        vendor_name="AWS", name=name
                    )
                ),
                visibility_config=_visibility(name),
            )

        acl = wafv2.CfnWebACL(
            self,
            "WebAcl",
            scope="REGIONAL",
            default_action=wafv2.CfnWebACL.DefaultActionProperty(allow={}),
            visibility_config=_visibility("episodic-api"),
            rules=[
                wafv2.CfnWebACL.RuleProperty(
                    name="PerIpRateLimit",
                    priority=0,
                    action=wafv2.CfnWebACL.RuleActionProperty(block={}),
                    statement=wafv2.CfnWebACL.StatementProperty(
                        rate_based_statement=wafv2.CfnWebACL.RateBasedStatementProperty(
                            limit=rate_limit, aggregate_key_type="IP"
                        )
                    ),
                    visibility_config=_visibility("PerIpRateLimit"),
                ),
                managed("AWSManagedRulesKnownBadInputsRuleSet", 1),
                managed("AWSManagedRulesAmazonIpReputationList", 2),
            ],
        )
        wafv2.CfnWebACLAssociation(
            self, "WebAclAssociation", resource_arn=self.api.deployment_stage.stage_arn, web_acl_arn=acl.attr_arn
        )
        return acl


def _visibility(name: str) -> wafv2.CfnWebACL.VisibilityConfigProperty:
    return wafv2.CfnWebACL.VisibilityConfigProperty(
        cloud_watch_metrics_enabled=True, metric_name=name, sampled_requests_enabled=True
    )
