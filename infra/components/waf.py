"""The web ACL in front of the API's stage (``api.waf``, on in prod): a per-IP rate limit and
AWS's known-bad-inputs and IP-reputation rule groups.

AWS's common rule set is left out on purpose: its XSS, path-traversal and body-size rules would
block legitimate memories about code (``<script>``, ``../``, a 100-episode batch over 8 KB).
"""

from __future__ import annotations

from aws_cdk import aws_wafv2 as wafv2
from constructs import Construct


def regional_web_acl(scope: Construct, rate_limit: int, stage_arn: str) -> wafv2.CfnWebACL:
    """The web ACL (``<scope>/WebAcl``) and its association with the stage ``stage_arn``."""
    acl = wafv2.CfnWebACL(
        scope,
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
            _managed("AWSManagedRulesKnownBadInputsRuleSet", 1),
            _managed("AWSManagedRulesAmazonIpReputationList", 2),
        ],
    )
    wafv2.CfnWebACLAssociation(scope, "WebAclAssociation", resource_arn=stage_arn, web_acl_arn=acl.attr_arn)
    return acl


def _managed(name: str, priority: int) -> wafv2.CfnWebACL.RuleProperty:
    """An AWS managed rule group, its own actions unchanged."""
    return wafv2.CfnWebACL.RuleProperty(
        name=name,
        priority=priority,
        override_action=wafv2.CfnWebACL.OverrideActionProperty(none={}),
        statement=wafv2.CfnWebACL.StatementProperty(
            managed_rule_group_statement=wafv2.CfnWebACL.ManagedRuleGroupStatementProperty(vendor_name="AWS", name=name)
        ),
        visibility_config=_visibility(name),
    )


def _visibility(name: str) -> wafv2.CfnWebACL.VisibilityConfigProperty:
    return wafv2.CfnWebACL.VisibilityConfigProperty(
        cloud_watch_metrics_enabled=True, metric_name=name, sampled_requests_enabled=True
    )
