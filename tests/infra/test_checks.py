"""The offline checks: cdk-nag (AWS Solutions) with zero unacknowledged findings and a written
reason for every acknowledgement, cfn-lint on the synthesised templates, and a context that
refuses what it does not understand."""

from __future__ import annotations

import json

import pytest
from cfnlint.api import ManualArgs, lint_file
from pydantic import ValidationError

from infra.config import stage_config

# Every rule acknowledged anywhere, so a new acknowledgement is a deliberate, reviewed change.
ACKNOWLEDGED = {
    "AwsSolutions-APIG3",  # WAF off in dev (a context setting)
    "AwsSolutions-APIG4",  # GET /v1/health, GET /v1/swagger and GET /console are public
    "AwsSolutions-COG4",  # a Lambda JWT authorizer, not Cognito
    "AwsSolutions-IAM4",  # API Gateway's account CloudWatch role
    "AwsSolutions-IAM5",  # X-Ray/ListStreams/log delivery '*', archive prefix, domain paths, inference profile regions
    "AwsSolutions-L1",  # Python 3.13 by decision
    "AwsSolutions-OS1",  # no VPC
    "AwsSolutions-OS3",  # IAM principals, not IP allow-lists
    "AwsSolutions-OS4",  # dedicated masters in prod only
    "AwsSolutions-OS7",  # zone awareness in prod only
    "AwsSolutions-S1",  # the access-log bucket itself
    "AwsSolutions-SMG4",  # the HS256 secret rotates with its issuer
    "AwsSolutions-SQS3",  # dead-letter queues need no dead-letter queue
}


def _acknowledgements(synth):
    """``{(rule id, reason)}`` from the template metadata cdk-nag writes for each resource."""
    found = set()
    for resource in synth.template["Resources"].values():
        for rule in resource.get("Metadata", {}).get("cdk_nag", {}).get("rules_to_suppress", []):
            found.add((rule["id"], rule["reason"]))
    return found


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_cdk_nag_leaves_no_finding_unacknowledged(stage, request):
    synth = request.getfixturevalue(stage)  # synthesising at all means no error was left
    report = json.loads((synth.outdir / "validation-report.json").read_text())
    violations = [v for plugin in report["pluginReports"] for v in plugin.get("violations", [])]
    assert violations == []


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_every_acknowledgement_names_a_known_rule_and_says_why(stage, request):
    acknowledgements = _acknowledgements(request.getfixturevalue(stage))
    assert acknowledgements
    for rule, reason in acknowledgements:
        assert rule.split("[", 1)[0] in ACKNOWLEDGED, rule
        assert len(reason) >= 40, (rule, reason)


def test_prod_needs_fewer_acknowledgements_than_dev(dev, prod):
    rules = {rule.split("[", 1)[0] for rule, _ in _acknowledgements(prod)}
    assert not {"AwsSolutions-APIG3", "AwsSolutions-OS4", "AwsSolutions-OS7", "AwsSolutions-SMG4"} & rules


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_cfn_lint_passes_on_the_synthesised_template(stage, request):
    synth = request.getfixturevalue(stage)
    template = synth.outdir / f"{synth.stack.stack_name}.template.json"
    # W3005: CDK adds a DependsOn on each function's role beside the GetAtt that implies it.
    matches = lint_file(template, config=ManualArgs(ignore_checks=["W3005"]))
    assert [str(m) for m in matches] == []


def test_the_context_refuses_unknown_keys_and_inconsistent_values():
    base = {"stage": "dev", "episodic": {"summaryModelId": "m", "auth": {"issuer": "i", "audience": "a"}}}
    assert stage_config(base).auth.algorithm == "HS256"
    with pytest.raises(ValidationError, match="instanceTyp"):
        stage_config({**base, "episodic": {**base["episodic"], "opensearch": {"instanceTyp": "x"}}})
    with pytest.raises(ValidationError, match="jwksUrl"):
        stage_config(
            {**base, "episodic": {**base["episodic"], "auth": {"issuer": "i", "audience": "a", "algorithm": "RS256"}}}
        )
    with pytest.raises(ValidationError, match="zoneAwareness"):
        stage_config({**base, "episodic": {**base["episodic"], "opensearch": {"zoneAwareness": True}}})
    with pytest.raises(ValidationError):
        stage_config({**base, "stage": "Prod_1"})
    with pytest.raises(FileNotFoundError):
        stage_config({**base, "config": "infra/stages/missing.json"})
