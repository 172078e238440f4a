"""What varies between deployments: stage, models and sizes, read from CDK context.

One validated model instead of ``try_get_context`` calls scattered through the stacks, so a
typo in a context file fails the synth with a clear message rather than deploying a default.

Where the values come from, later wins:

1. ``cdk.json``'s ``context`` (``stage`` and the ``episodic`` defaults for every stage);
2. ``infra/stages/<stage>.json`` when it exists (e.g. ``infra/stages/prod.json``), or the file
   named by ``-c config=path.json``; either is deep-merged over the defaults;
3. nothing else: individual values are changed in a context file, which is reviewed like code.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

ROOT = Path(__file__).resolve().parent.parent
STAGES_DIR = ROOT / "infra" / "stages"
LAYER_BUILD = ROOT / "build" / "layer"  # `make layer` (infra/layer.py) installs the layer's dependencies here
LAYER_READY = LAYER_BUILD / ".complete"  # written last, so a half-built layer is never deployed


class _Context(BaseModel):
    """camelCase in JSON (as CDK context usually is), snake_case in Python; unknown keys are errors."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


class OpenSearchConfig(_Context):
    """A managed domain (the adapter targets ``es``). Disabled, recall runs on DynamoDB alone."""

    enabled: bool = True
    engine_version: str = "OpenSearch_2.19"
    instance_type: str = "t3.medium.search"
    instance_count: int = Field(default=1, ge=1)
    volume_size_gib: int = Field(default=10, ge=10)
    zone_awareness: bool = False
    dedicated_master_type: str | None = None
    dedicated_master_count: int = Field(default=3, ge=3)
    index: str = "episodic-recall"

    @model_validator(mode="after")
    def _zones_need_nodes(self) -> OpenSearchConfig:
        if self.zone_awareness and self.instance_count < 2:
            raise ValueError("zoneAwareness needs instanceCount >= 2")
        return self


class AuthConfig(_Context):
    """The JWT the API Gateway authorizer accepts. HS256 signs with a Secrets Manager secret (the
    stack creates one unless ``secretName`` names an existing one); RS256 verifies against the
    identity provider's JWKS. Tenant, role and (for an agent bound to actors) the actors come from
    the named claims and nowhere else."""

    algorithm: Literal["HS256", "RS256"] = "HS256"
    issuer: str = Field(min_length=1)
    audience: str = Field(min_length=1)
    jwks_url: str | None = None
    secret_name: str | None = None
    tenant_claim: str = "tenantId"
    role_claim: str = "role"
    actors_claim: str = "actors"

    @model_validator(mode="after")
    def _keys_for_algorithm(self) -> AuthConfig:
        if self.algorithm == "RS256" and not (self.jwks_url or "").startswith("https://"):
            raise ValueError("RS256 needs jwksUrl, an https:// URL of the identity provider's JWKS")
        if self.algorithm == "HS256" and self.jwks_url:
            raise ValueError("jwksUrl is for RS256; HS256 verifies with the secret")
        return self


class ApiConfig(_Context):
    """Stage-wide throttling protects the backend; the usage plan meters API keys when required."""

    throttle_rate: float = Field(default=50, gt=0)
    throttle_burst: int = Field(default=100, gt=0)
    quota_per_day: int = Field(default=100_000, gt=0)
    require_api_keys: bool = False
    waf: bool = False
    waf_rate_limit: int = Field(default=2000, ge=10, description="Requests per IP per 5 minutes")
    memory_mb: int = Field(default=1024, ge=128, le=10240)


class StageConfig(_Context):
    # At most 12 characters, so that "episodic-<stage>-search" fits OpenSearch's 28-character domain names.
    stage: str = Field(pattern=r"^[a-z][a-z0-9-]{1,11}$")
    summary_model_id: str = Field(min_length=1)
    titan_model_id: str = "amazon.titan-embed-text-v2:0"
    titan_dimensions: Literal[256, 512, 1024] = 1024
    review_timeout_days: float = Field(default=7, gt=0, le=365)
    log_retention_days: int = 30
    pitr_recovery_days: int = Field(default=35, ge=1, le=35, description="Erased items live this long in backups")
    ingest_mapping: str = "events/ingest/mapping.json"
    alarm_email: str | None = None
    summarise_schedule: str = "rate(24 hours)"
    forget_schedule: str = "cron(30 3 * * ? *)"
    audit_checkpoint_schedule: str = "rate(1 hour)"
    audit_heads_retention_days: int = Field(
        default=400,
        ge=1,
        le=3650,
        description="How long each audit chain checkpoint is kept unchangeable (Object Lock)",
    )
    summarise_concurrency: int = Field(
        default=10, ge=1, description="Reserved: caps Bedrock use; at least the summarise Map's MaxConcurrency"
    )
    forget_concurrency: int = Field(default=1, ge=1, description="Reserved: one decay sweep at a time")
    ingest_concurrency: int = Field(default=5, ge=2, le=1000, description="SQS event source maximum")
    worker_memory_mb: int = Field(default=1024, ge=128, le=10240)
    opensearch: OpenSearchConfig = OpenSearchConfig()
    auth: AuthConfig
    api: ApiConfig = ApiConfig()

    @property
    def ingest_mapping_path(self) -> Path:
        return (ROOT / self.ingest_mapping).resolve()

    def name(self, suffix: str) -> str:
        """A physical name for resources that need one (state machines, the domain, the bus)."""
        return f"episodic-{self.stage}-{suffix}"


def _deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def cdk_json_context() -> dict[str, Any]:
    """``cdk.json``'s context: the CDK CLI passes it to the app; ``make synth`` runs the app
    without the CLI, so the app reads it itself (the CLI's values, if any, still win)."""
    return dict(json.loads((ROOT / "cdk.json").read_text())["context"])


def stage_config(context: dict[str, Any]) -> StageConfig:
    """The validated configuration for the context's ``stage``."""
    stage = str(context.get("stage") or "dev")
    values = dict(context.get("episodic") or {})
    explicit = context.get("config")
    stage_file = Path(explicit) if explicit else STAGES_DIR / f"{stage}.json"
    if explicit and not stage_file.is_absolute():
        stage_file = ROOT / stage_file
    if stage_file.exists():
        values = _deep_merge(values, json.loads(stage_file.read_text()))
    elif explicit:
        raise FileNotFoundError(f"context file {stage_file} does not exist")
    return StageConfig.model_validate({**values, "stage": stage})
