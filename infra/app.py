"""The CDK app: ``python -m infra.app`` (what ``cdk.json`` runs, and ``make synth``).

Synthesises one ``EpisodicStack`` for the context's stage into ``cdk.out``. cdk-nag's AWS
Solutions checks run as a CDK validation plugin: an unacknowledged finding fails the synth
(``ValidationFailed``, details in ``cdk.out/validation-report.json``). Needs no Docker, no
network and no AWS credentials.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from infra.components.code import layer_dependencies
from infra.config import ROOT, StageConfig, cdk_json_context, stage_config
from infra.stacks.episodic import EpisodicStack

CONTEXT_KEYS = ("stage", "config", "episodic")


def build(
    context: dict[str, Any] | None = None, *, outdir: str | None = None, dependencies: Path | None = None
) -> tuple[cdk.App, EpisodicStack]:
    """The app and its stack. ``context`` overrides ``cdk.json`` (the CLI's ``-c`` values arrive
    through ``CDK_CONTEXT_JSON`` and override both)."""
    app = cdk.App(context={**cdk_json_context(), **(context or {})}, outdir=outdir)
    config: StageConfig = stage_config({key: app.node.try_get_context(key) for key in CONTEXT_KEYS})
    stack = EpisodicStack(app, f"Episodic-{config.stage}", config=config, layer_dependencies=dependencies)
    cdk.Tags.of(stack).add("service", "episodic-memory")
    cdk.Tags.of(stack).add("stage", config.stage)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app, write_suppressions_to_cloud_formation=True))
    return app, stack


def synth_summary(stack_name: str, template: dict[str, Any]) -> str:
    """One line on what was synthesised: the resources (the most numerous kinds) and cdk-nag's
    verdict. A synth that gets here had no unacknowledged finding (those fail it); every
    acknowledged one carries its reason in the template's metadata."""
    resources = template.get("Resources", {})
    kinds = Counter(r["Type"].removeprefix("AWS::") for r in resources.values())
    acknowledged = sum(
        len(r.get("Metadata", {}).get("cdk_nag", {}).get("rules_to_suppress", [])) for r in resources.values()
    )
    top = ", ".join(f"{count} {kind}" for kind, count in kinds.most_common(4))
    return (
        f"{stack_name}: {len(resources)} resources ({top}, ...); cdk-nag AwsSolutions: no unacknowledged "
        f"finding, {acknowledged} acknowledged with a reason"
    )


def main() -> None:
    dependencies = layer_dependencies()
    if dependencies is None:
        print(
            "note: build/layer is missing, so the layer holds the episodic source only -- run `make layer` "
            "before deploying"
        )
    outdir = None if os.environ.get("CDK_OUTDIR") else str(ROOT / "cdk.out")
    app, _ = build(outdir=outdir, dependencies=dependencies)
    assembly = app.synth()
    for stack in assembly.stacks:
        print(synth_summary(stack.stack_name, stack.template))


if __name__ == "__main__":
    main()
