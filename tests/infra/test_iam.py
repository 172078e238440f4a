"""Least privilege, checked on the synthesised policies rather than on the code that makes them."""

from __future__ import annotations

import json

# The only actions allowed on Resource "*": they support no resource-level permissions.
UNSCOPABLE = {
    "xray:PutTraceSegments",
    "xray:PutTelemetryRecords",
    "xray:GetSamplingRules",
    "xray:GetSamplingTargets",
    "dynamodb:ListStreams",
    "logs:CreateLogDelivery",
    "logs:GetLogDelivery",
    "logs:UpdateLogDelivery",
    "logs:DeleteLogDelivery",
    "logs:ListLogDeliveries",
    "logs:PutResourcePolicy",
    "logs:DescribeResourcePolicies",
    "logs:DescribeLogGroups",
}


def _list(value):
    return value if isinstance(value, list) else [value]


def _actions(statements):
    return {a for s in statements if s["Effect"] == "Allow" for a in _list(s["Action"])}


def _allowed_on(statements, resource):
    return {
        a for s in statements if s["Effect"] == "Allow" and resource in _list(s["Resource"]) for a in _list(s["Action"])
    }


def test_no_policy_allows_a_wildcard_action(dev):
    for name, statement in dev.policy_statements():
        for action in _list(statement["Action"]):
            assert "*" not in action, f"{name} allows {action}"


def test_resource_star_is_allowed_only_for_actions_that_cannot_be_scoped(dev):
    for name, statement in dev.policy_statements():
        if statement["Effect"] == "Allow" and "*" in _list(statement["Resource"]):
            assert set(_list(statement["Action"])) <= UNSCOPABLE, name


def test_only_the_decay_sweep_and_the_audit_checkpoint_may_scan_the_timeline(dev):
    """The checkpoint scans for every tenant's audit chain heads; nothing else but the sweep scans."""
    scanners = {
        name
        for name, function in dev.stack.functions.items()
        if "dynamodb:Scan" in _actions(dev.statements_of(function.role))
    }
    assert scanners == {"Forget", "AuditCheckpoint"}


def test_only_the_api_reads_the_audit_trail_and_the_authorizer_touches_no_data(dev):
    audit = dev.arn(dev.stack.data.audit)
    for name, function in dev.stack.functions.items():
        allowed = _allowed_on(dev.statements_of(function.role), audit)
        assert not allowed - {"dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:Query"}, name
        assert ("dynamodb:Query" in allowed) == (name == "Api"), name
    authorizer = _actions(dev.statements_of(dev.stack.functions["Authorizer"].role))
    assert not {a for a in authorizer if a.startswith(("dynamodb:", "s3:", "bedrock:", "es:"))}


def test_each_function_reaches_only_the_indexes_it_queries(dev):
    timeline = dev.stack.resolve(dev.stack.data.timeline.table_arn)
    expected = {
        "Api": {"by_actor", "by_type", "by_project", "by_tenant", "by_review_status"},
        "FindBusyActors": {"by_day"},
        "SummariseActor": {"by_actor"},
    }
    for name, function in dev.stack.functions.items():
        indexes = {
            json.dumps(resource).rsplit("/index/", 1)[1].split('"')[0]
            for statement in dev.statements_of(function.role)
            for resource in _list(statement["Resource"])
            if json.dumps(timeline) in json.dumps(resource) and "/index/" in json.dumps(resource)
        }
        assert indexes == expected.get(name, set()), name


def test_bedrock_is_allowed_only_for_the_configured_models(dev):
    config = dev.stack.config
    for name, function in dev.stack.functions.items():
        for statement in dev.statements_of(function.role):
            if "bedrock:InvokeModel" in _list(statement["Action"]):
                assert _list(statement["Action"]) == ["bedrock:InvokeModel"]
                text = json.dumps(statement["Resource"])
                models = {config.titan_model_id} | ({config.summary_model_id} if name == "SummariseActor" else set())
                assert text.count("foundation-model/") == len(models), name
                assert all(m in text for m in models), name


def test_the_search_domain_admits_only_the_api_and_stream_roles_over_https_with_encryption(dev):
    domain = dev.template["Resources"][dev.logical_id(dev.stack.search.cfn)]["Properties"]
    [statement] = domain["AccessPolicies"]["Statement"]
    assert statement["Principal"]["AWS"] == [
        dev.arn(dev.stack.functions["Api"].role),
        dev.arn(dev.stack.functions["Stream"].role),
    ]
    assert all(a.startswith("es:ESHttp") for a in statement["Action"])
    assert domain["EncryptionAtRestOptions"] == {"Enabled": True, "KmsKeyId": dev.ref(dev.stack.data.key)}
    assert domain["NodeToNodeEncryptionOptions"] == {"Enabled": True}
    assert domain["DomainEndpointOptions"]["EnforceHTTPS"] is True
    assert domain["DomainEndpointOptions"]["TLSSecurityPolicy"].startswith("Policy-Min-TLS-1-2")


def test_the_tenant_policy_confines_every_key_to_the_principals_tenant_and_cannot_scan(dev):
    policy = dev.template["Resources"][dev.logical_id(dev.stack.tenancy.policy)]["Properties"]
    statements = {s["Sid"]: s for s in policy["PolicyDocument"]["Statement"]}
    for sid, patterns in (
        ("TimelineOwnTenantOnly", ["${aws:PrincipalTag/tenantId}#*"]),
        ("AuditOwnTenantOnly", ["${aws:PrincipalTag/tenantId}", "${aws:PrincipalTag/tenantId}#*"]),
    ):
        statement = statements[sid]
        assert statement["Condition"]["ForAllValues:StringLike"] == {"dynamodb:LeadingKeys": patterns}
        # Without the Null guard a request with no leading keys at all -- a Scan -- would match.
        assert statement["Condition"]["Null"] == {"dynamodb:LeadingKeys": "false", "aws:PrincipalTag/tenantId": "false"}
        assert not {"dynamodb:Scan", "dynamodb:PartiQLSelect"} & set(statement["Action"])
    indexes = json.dumps(statements["TimelineOwnTenantOnly"]["Resource"])
    assert all(f"/index/{name}" in indexes for name in ("by_actor", "by_tenant", "by_review_status"))
    for sweep in ("pending_reviews", "by_expiry", "by_day"):  # the cross-tenant sweep indexes
        assert f"/index/{sweep}" not in indexes


def test_the_tenant_role_needs_a_tenant_session_tag_and_carries_the_audit_deny(dev):
    role = dev.template["Resources"][dev.logical_id(dev.stack.tenancy.role)]["Properties"]
    statements = role["AssumeRolePolicyDocument"]["Statement"]
    tagging = [s for s in statements if s["Action"] == "sts:TagSession"]
    assert tagging and tagging[0]["Condition"]["ForAllValues:StringEquals"] == {"aws:TagKeys": ["tenantId"]}
    for statement in statements:
        assert statement["Condition"]["StringLike"] == {"aws:RequestTag/tenantId": "?*"}
    assert dev.ref(dev.stack.data.audit_append_only) in role["ManagedPolicyArns"]


def test_only_the_functions_that_close_reviews_may_answer_their_task_tokens(dev):
    answer = {"states:SendTaskSuccess", "states:SendTaskFailure"}
    answering = {
        name for name, function in dev.stack.functions.items() if answer & _actions(dev.statements_of(function.role))
    }
    starting = {
        name
        for name, function in dev.stack.functions.items()
        if "states:StartExecution" in _actions(dev.statements_of(function.role))
    }
    assert answering == {"Api", "ReviewRequests", "ExpireReview"}  # operators decide; the workflow expires
    assert {"Api", "Ingest", "SummariseActor"} <= starting  # every writer may have to ask for a review


def test_every_service_function_reads_the_pseudonym_key_item_and_nothing_else_of_the_table_through_it(dev):
    policy = dev.template["Resources"][dev.logical_id(dev.stack.data.pseudonym_key_access)]["Properties"]
    statements = {s["Sid"]: s for s in policy["PolicyDocument"]["Statement"]}
    item = statements["PseudonymKeyItem"]
    assert sorted(item["Action"]) == ["dynamodb:GetItem", "dynamodb:PutItem"]
    assert item["Condition"]["ForAllValues:StringEquals"] == {"dynamodb:LeadingKeys": ["#SERVICE"]}
    assert item["Condition"]["Null"] == {"dynamodb:LeadingKeys": "false"}  # no key-less request (a scan)
    for name, function in dev.stack.functions.items():
        role = dev.template["Resources"][dev.logical_id(function.role)]["Properties"]
        holds = dev.ref(dev.stack.data.pseudonym_key_access) in role.get("ManagedPolicyArns", [])
        assert holds == (name != "Authorizer"), name  # every function that builds the service loads the key
