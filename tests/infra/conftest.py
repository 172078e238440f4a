"""The CDK app synthesised once per test session and stage, with cdk-nag applied.

``app.synth()`` runs the AWS Solutions checks as a CDK validation plugin and raises on any
unacknowledged error, so a fixture that returns at all has already proved "zero cdk-nag
errors"; the tests then read the template and the cloud assembly as written to disk.
The layer is staged from source only (no ``make layer`` needed), as in CI.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# jsii warns on every start that this machine's Node 20 is past its end of life.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")


@dataclass
class Synthesised:
    stack: Any  # infra.stacks.episodic.EpisodicStack
    template: dict[str, Any]
    outdir: Path

    def resources(self, kind: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.template["Resources"].items() if v["Type"] == kind}

    def logical_id(self, construct: Any) -> str:
        """The CloudFormation id of an L2 construct (its default child) or of an L1 resource."""
        element = construct.node.default_child or construct
        return self.stack.resolve(self.stack.get_logical_id(element))

    def ref(self, construct: Any) -> dict[str, Any]:
        return {"Ref": self.logical_id(construct)}

    def arn(self, construct: Any, attribute: str = "Arn") -> dict[str, Any]:
        return {"Fn::GetAtt": [self.logical_id(construct), attribute]}

    def policy_statements(self) -> list[tuple[str, dict[str, Any]]]:
        """Every statement of every identity policy (inline and managed), with its resource id."""
        found = []
        for kind in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            for name, resource in self.resources(kind).items():
                found += [(name, s) for s in resource["Properties"]["PolicyDocument"]["Statement"]]
        return found

    def statements_of(self, role: Any) -> list[dict[str, Any]]:
        """The statements of the policies attached to ``role`` (its default policy)."""
        role_id = self.logical_id(role)
        return [
            statement
            for resource in self.resources("AWS::IAM::Policy").values()
            if {"Ref": role_id} in resource["Properties"].get("Roles", [])
            for statement in resource["Properties"]["PolicyDocument"]["Statement"]
        ]


def _synthesise(outdir: Path, stage: str) -> Synthesised:
    from infra.app import build

    app, stack = build({"stage": stage}, outdir=str(outdir))
    app.synth()
    template = json.loads((outdir / f"{stack.stack_name}.template.json").read_text())
    return Synthesised(stack=stack, template=template, outdir=outdir)


@pytest.fixture(scope="session")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Synthesised:
    """The default stage from cdk.json: HS256, OpenSearch on one node, no WAF."""
    return _synthesise(tmp_path_factory.mktemp("cdk-dev"), "dev")


@pytest.fixture(scope="session")
def prod(tmp_path_factory: pytest.TempPathFactory) -> Synthesised:
    """infra/stages/prod.json: RS256, a three-zone domain with dedicated masters, WAF, an inference profile."""
    return _synthesise(tmp_path_factory.mktemp("cdk-prod"), "prod")
