"""The OpenSearch recall index: a managed domain (the adapter's upserts are keyed by id, which
Serverless vector collections do not allow), reached over HTTPS with SigV4.

Written with the L1 ``CfnDomain``: the L2 construct adds Lambda-backed custom resources for its
access and log policies, which a plain resource policy and an ``AWS::Logs::ResourcePolicy`` do
without. Access is IAM-only: the domain's resource policy names the service roles that need
it and nobody else, and each of those roles also carries the matching identity policy.

No VPC: the functions run outside one (a VPC would need NAT or endpoints for DynamoDB, S3,
Bedrock, Step Functions and Secrets Manager, at a fixed hourly cost); every request is signed
and the policy admits only named roles, which is what keeps the public endpoint closed.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_opensearchservice as opensearch
from constructs import Construct

from infra.components.nag import acknowledge
from infra.config import OpenSearchConfig

HTTP_ACTIONS = ("es:ESHttpGet", "es:ESHttpHead", "es:ESHttpPost", "es:ESHttpPut", "es:ESHttpDelete")


LOG_KINDS = {"ES_APPLICATION_LOGS": "Application", "SEARCH_SLOW_LOGS": "SearchSlow", "INDEX_SLOW_LOGS": "IndexSlow"}


class SearchDomain(Construct):
    """The domain, its three log groups and the log-delivery policy for them. It admits the roles
    it is given through ``grant`` -- the ``Api`` and ``Stream`` roles -- and nobody else."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: OpenSearchConfig,
        domain_name: str,
        key: kms.IKey,
        log_retention: logs.RetentionDays,
    ) -> None:
        super().__init__(scope, id)
        stack = cdk.Stack.of(self)
        self.domain_name = domain_name
        self.volume_mib = config.volume_size_gib * 1024
        self.domain_arn = stack.format_arn(service="es", resource="domain", resource_name=domain_name)
        self._admitted: list[iam.IRole] = []
        groups = {
            kind: logs.LogGroup(
                self,
                f"{name}Logs",
                retention=log_retention,
                encryption_key=key,
                removal_policy=cdk.RemovalPolicy.DESTROY,
            )
            for kind, name in LOG_KINDS.items()
        }
        delivery = self._log_delivery(list(groups.values()))
        self.cfn = self._domain(config, key, groups)
        self.cfn.add_resource_dependency(delivery)
        self.cfn.apply_removal_policy(cdk.RemovalPolicy.RETAIN)  # the index is rebuildable, but slow to rebuild
        self.endpoint = f"https://{self.cfn.attr_domain_endpoint}"
        self._acknowledge_findings(config)

    def _log_delivery(self, groups: list[logs.LogGroup]) -> logs.CfnResourcePolicy:
        """OpenSearch may write to the domain's log groups, on behalf of this account only."""
        stack = cdk.Stack.of(self)
        return logs.CfnResourcePolicy(
            self,
            "LogDelivery",
            policy_name=f"{self.domain_name}-logs",
            policy_document=stack.to_json_string(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Principal": {"Service": "es.amazonaws.com"},
                            "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
                            "Resource": [g.log_group_arn for g in groups],
                            "Condition": {"StringEquals": {"aws:SourceAccount": stack.account}},
                        }
                    ],
                }
            ),
        )

    def _domain(
        self, config: OpenSearchConfig, key: kms.IKey, groups: dict[str, logs.LogGroup]
    ) -> opensearch.CfnDomain:
        """Sized from the context; encrypted at rest (data key) and between nodes; HTTPS only."""
        dedicated = config.dedicated_master_type is not None
        return opensearch.CfnDomain(
            self,
            "Domain",
            domain_name=self.domain_name,
            engine_version=config.engine_version,
            cluster_config=opensearch.CfnDomain.ClusterConfigProperty(
                instance_type=config.instance_type,
                instance_count=config.instance_count,
                zone_awareness_enabled=config.zone_awareness,
                zone_awareness_config=opensearch.CfnDomain.ZoneAwarenessConfigProperty(
                    availability_zone_count=min(3, config.instance_count)
                )
                if config.zone_awareness
                else None,
                dedicated_master_enabled=dedicated,
                dedicated_master_type=config.dedicated_master_type,
                dedicated_master_count=config.dedicated_master_count if dedicated else None,
            ),
            ebs_options=opensearch.CfnDomain.EBSOptionsProperty(
                ebs_enabled=True, volume_type="gp3", volume_size=config.volume_size_gib
            ),
            encryption_at_rest_options=opensearch.CfnDomain.EncryptionAtRestOptionsProperty(
                enabled=True, kms_key_id=key.key_id
            ),
            node_to_node_encryption_options=opensearch.CfnDomain.NodeToNodeEncryptionOptionsProperty(enabled=True),
            domain_endpoint_options=opensearch.CfnDomain.DomainEndpointOptionsProperty(
                enforce_https=True, tls_security_policy="Policy-Min-TLS-1-2-PFS-2023-10"
            ),
            log_publishing_options={
                kind: opensearch.CfnDomain.LogPublishingOptionProperty(
                    enabled=True, cloud_watch_logs_log_group_arn=group.log_group_arn
                )
                for kind, group in groups.items()
            },
            # _msearch names the index in each header line.
            advanced_options={"rest.action.multi.allow_explicit_index": "true"},
        )

    def _acknowledge_findings(self, config: OpenSearchConfig) -> None:
        findings = [
            (
                "AwsSolutions-OS1",
                "No VPC by design (module docstring): IAM-only access with SigV4; the resource "
                "policy names the service roles.",
            ),
            (
                "AwsSolutions-OS3",
                "Access is granted to named IAM roles, not IP addresses: Lambda has no fixed source IP outside a VPC.",
            ),
        ]
        if config.dedicated_master_type is None:
            findings.append(
                (
                    "AwsSolutions-OS4",
                    "Dedicated master nodes are a context setting (dedicatedMasterType): "
                    "on in prod, off to keep dev's idle cost low.",
                )
            )
        if not config.zone_awareness:
            findings.append(
                (
                    "AwsSolutions-OS7",
                    "Zone awareness is a context setting (zoneAwareness): on in prod; "
                    "dev runs one node, and the index can be rebuilt from the timeline.",
                )
            )
        acknowledge(self.cfn, *findings)

    def grant(self, role: iam.IRole) -> None:
        """HTTP access to the domain's indices, in the role's policy and the domain's."""
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=list(HTTP_ACTIONS), resources=[f"{self.domain_arn}/*"])
        )
        acknowledge(
            role,
            (
                "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:es:<AWS::Region>:<AWS::AccountId>:domain/"
                f"{self.domain_name}/*]",
                "OpenSearch authorises HTTP paths under the domain (index names, _msearch, "
                "_bulk); the wildcard is the path within this one domain.",
            ),
        )
        self._admitted.append(role)
        self.cfn.access_policies = {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"AWS": [r.role_arn for r in self._admitted]},
                    "Action": list(HTTP_ACTIONS),
                    "Resource": f"{self.domain_arn}/*",
                }
            ],
        }
