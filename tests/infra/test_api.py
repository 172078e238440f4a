"""The REST API: the authorizer on every method but health and the Swagger UI, the routes of the
handler's own OpenAPI schema, validation, throttling, a usage plan and access logs."""

from __future__ import annotations

from infra.components.gateway import PUBLIC_ROUTES, api_routes


def _path(dev, resource_id):
    """The full path of an API Gateway resource, from its PathPart and parents."""
    parts = []
    resources = dev.template["Resources"]
    while isinstance(resource_id, dict) and "Ref" in resource_id:
        props = resources[resource_id["Ref"]]["Properties"]
        parts.append(props["PathPart"])
        resource_id = props["ParentId"]
    return "/" + "/".join(reversed(parts))


def _methods(dev):
    return {
        (m["Properties"]["HttpMethod"], _path(dev, m["Properties"]["ResourceId"])): m["Properties"]
        for m in dev.resources("AWS::ApiGateway::Method").values()
    }


def test_the_gateway_serves_exactly_the_routes_of_the_api_handler(dev):
    from functions.api import app

    schema_routes = {
        (method.upper(), path)
        for path, item in app.get_openapi_schema().paths.items()
        for method in item.model_dump(exclude_none=True)
    }
    undocumented = {("GET", "/v1/swagger"), ("GET", "/console")}
    assert set(_methods(dev)) == schema_routes | undocumented == set(api_routes())


def test_every_method_but_health_swagger_and_the_console_page_requires_the_jwt_authorizer(dev):
    authorizer = dev.ref(dev.stack.api.gateway.authorizer)
    for route, method in _methods(dev).items():
        if route in PUBLIC_ROUTES:
            assert method["AuthorizationType"] == "NONE", route
            assert "AuthorizerId" not in method, route
        else:
            assert method["AuthorizationType"] == "CUSTOM", route
            assert method["AuthorizerId"] == authorizer, route
            assert method["RequestParameters"] == {"method.request.header.Authorization": True}, route
    assert {("GET", "/v1/health"), ("GET", "/v1/swagger"), ("GET", "/console")} == PUBLIC_ROUTES


def test_the_authorizer_is_a_token_authorizer_on_the_bearer_header_with_a_short_cache(dev):
    props = dev.template["Resources"][dev.logical_id(dev.stack.api.gateway.authorizer)]["Properties"]
    assert props["Type"] == "TOKEN"
    assert props["IdentitySource"] == "method.request.header.Authorization"
    assert props["IdentityValidationExpression"].startswith("^Bearer ")
    assert props["AuthorizerResultTtlInSeconds"] <= 300
    assert dev.logical_id(dev.stack.functions["Authorizer"].function) in str(props["AuthorizerUri"])


def test_every_method_is_validated_and_bodies_must_be_json_objects(dev):
    validator = dev.template["Resources"][dev.logical_id(dev.stack.api.gateway.validator)]["Properties"]
    assert validator["ValidateRequestBody"] is True
    assert validator["ValidateRequestParameters"] is True
    for route, method in _methods(dev).items():
        assert method["RequestValidatorId"] == dev.ref(dev.stack.api.gateway.validator), route
        if route[0] in ("POST", "PUT"):
            assert "application/json" in method["RequestModels"], route
        integration = method["Integration"]
        assert integration["Type"] == "AWS_PROXY", route
        assert dev.logical_id(dev.stack.functions["Api"].function) in str(integration["Uri"]), route


def test_the_stage_throttles_traces_and_writes_access_logs_but_never_bodies(dev):
    [stage] = dev.resources("AWS::ApiGateway::Stage").values()
    props = stage["Properties"]
    assert props["TracingEnabled"] is True
    assert props["AccessLogSetting"]["DestinationArn"] == dev.arn(dev.stack.api.gateway.access_logs)
    assert "$context.authorizer.tenantId" in props["AccessLogSetting"]["Format"]
    [settings] = props["MethodSettings"]
    assert settings["DataTraceEnabled"] is False
    assert settings["LoggingLevel"] in ("ERROR", "INFO")
    assert settings["ThrottlingRateLimit"] == dev.stack.config.api.throttle_rate
    assert settings["ThrottlingBurstLimit"] == dev.stack.config.api.throttle_burst


def test_a_usage_plan_meters_the_stage(dev):
    [plan] = dev.resources("AWS::ApiGateway::UsagePlan").values()
    props = plan["Properties"]
    assert props["Quota"] == {"Limit": dev.stack.config.api.quota_per_day, "Period": "DAY"}
    assert props["Throttle"]["RateLimit"] == dev.stack.config.api.throttle_rate
    assert props["ApiStages"][0]["ApiId"] == dev.ref(dev.stack.api.gateway.api)


def test_prod_puts_a_web_acl_in_front_of_the_stage(prod, dev):
    [association] = prod.resources("AWS::WAFv2::WebACLAssociation").values()
    assert association["Properties"]["WebACLArn"] == prod.arn(prod.stack.api.gateway.web_acl)
    [acl] = prod.resources("AWS::WAFv2::WebACL").values()
    rules = {r["Name"] for r in acl["Properties"]["Rules"]}
    assert {"PerIpRateLimit", "AWSManagedRulesKnownBadInputsRuleSet"} <= rules
    assert not dev.resources("AWS::WAFv2::WebACL")
