"""Bedrock permissions scoped to the configured models, nothing else.

``Converse`` is authorised by ``bedrock:InvokeModel`` (there is no separate IAM action), so
one action covers embeddings and summaries. A cross-region inference profile id
(``us.anthropic...``) needs the profile in this region *and* the foundation model in every
region the profile may route to, hence the ``*`` region on those ARNs only.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam

from infra.components.nag import acknowledge

INFERENCE_PROFILE_PREFIXES = frozenset({"us", "eu", "apac", "us-gov", "jp", "au", "ca", "global"})


def is_inference_profile(model_id: str) -> bool:
    return model_id.split(".", 1)[0] in INFERENCE_PROFILE_PREFIXES


def model_arns(model_id: str) -> list[str]:
    partition, region, account = cdk.Aws.PARTITION, cdk.Aws.REGION, cdk.Aws.ACCOUNT_ID
    if not is_inference_profile(model_id):
        return [f"arn:{partition}:bedrock:{region}::foundation-model/{model_id}"]
    base = model_id.split(".", 1)[1]
    return [
        f"arn:{partition}:bedrock:{region}:{account}:inference-profile/{model_id}",
        f"arn:{partition}:bedrock:*::foundation-model/{base}",
    ]


def grant_invoke(role: iam.IRole, *model_ids: str) -> None:
    resources = [arn for model_id in model_ids for arn in model_arns(model_id)]
    role.add_to_principal_policy(iam.PolicyStatement(actions=["bedrock:InvokeModel"], resources=resources))
    for model_id in model_ids:
        if is_inference_profile(model_id):
            base = model_id.split(".", 1)[1]
            acknowledge(
                role,
                (
                    f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/{base}]",
                    "A cross-region inference profile routes to this foundation model in several regions; only the "
                    "region is a wildcard.",
                ),
            )
