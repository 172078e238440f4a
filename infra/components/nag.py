"""cdk-nag acknowledgements (v3: CDK's own ``Validations`` API), each with its reason.

A finding is acknowledged on the construct it concerns and covers that construct's children;
``AwsSolutionsChecks`` fails the synth on any error left unacknowledged. The reasons are
also written into the template's ``Metadata.cdk_nag`` so tests and auditors can read them.
"""

from __future__ import annotations

import aws_cdk as cdk
from constructs import IConstruct


def acknowledge(scope: IConstruct, *findings: tuple[str, str]) -> None:
    """``findings`` are ``(rule id, reason)``; an id may name one finding, e.g. ``AwsSolutions-IAM5[Resource::*]``."""
    cdk.Validations.of(scope).acknowledge(*(cdk.Acknowledgment(id=rule, reason=reason) for rule, reason in findings))
