"""Settings: one pydantic model, read from the environment only when asked.

Nothing reads the environment at import time; entry points call
:meth:`Settings.from_env` in their composition root, and tests build ``Settings``
directly. Every ``EPISODIC_*`` variable the service reads is a field here (the name
upper-cased: ``EPISODIC_DATA_DIR`` is ``data_dir``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field, SecretStr, field_validator, model_validator

from episodic.domain.recall.ranking import RankingWeights


class Settings(BaseModel):
    backend: str = Field(default="local", pattern="^(local|aws)$", description="Which composition to build")
    data_dir: Path = Path(".episodic")
    host: str = Field(default="127.0.0.1", description="Where `episodic serve` listens")
    port: int = Field(default=8765, ge=0, le=65535)
    writes_disabled: bool = Field(
        default=False, description="Deployment-wide kill-switch; operators also have a per-tenant one."
    )
    sensitive_disclosures: Literal["private", "suggest"] = Field(
        default="suggest",
        description="A sensitive personal disclosure marked public/internal is named (`sensitive:<kind>`), "
        "`sensitive` is suggested and no digest repeats it (suggest), or it is also stored private, shown "
        "only to recall scoped to its actor (private)",
    )
    review_timeout_days: float = Field(default=7.0, gt=0)
    recall_pool_size: int = Field(default=200, ge=10, le=5000)
    names_ahead: bool = Field(
        default=True,
        description="Embed the names that written texts mention while the model is idle, so that a recall "
        "widened toward them finds them kept (local store; each process keeps its own)",
    )
    half_life_days: float = Field(default=30.0, gt=0)
    min_relevance: float = Field(default=0.2, ge=0, le=1)
    min_semantic: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Cosine below which a candidate is not evidence; unset, the embedder's own calibrated "
        "floor (0.25 for all-MiniLM-L6-v2, none for an embedder that declares none)",
    )
    sweep_interval_seconds: float = Field(default=60.0, gt=0)
    tag_weights: dict[str, Annotated[float, Field(allow_inf_nan=False)]] = Field(
        default_factory=dict, description="Retention weight in [0, 1] per tag (a tag's weight replaces importance)"
    )
    decay_threshold: float = Field(default=3.0, ge=0, le=10, description="Archive below this retention score")
    decay_idle_days: float = Field(default=30.0, gt=0, description="...and when not recalled for this long")
    summary_min_events: int = Field(default=5, ge=1, description="Summarise actors with more events than this")
    summary_interval_seconds: float = Field(
        default=86400.0,
        gt=0,
        description="Run the 24-hour summarisation this often (each run digests the trailing 24 hours)",
    )
    forget_interval_seconds: float = Field(default=86400.0, gt=0)
    embedder: str = Field(
        default="minilm",
        pattern="^(minilm|e5|titan)$",
        description="The embedding model: minilm (all-MiniLM-L6-v2, English), e5 (multilingual-e5-small, 4-bit; "
        "Linux x86_64), titan (Amazon Titan on Bedrock, AWS)",
    )
    embedder_runtime: Literal["onnx", "torch"] = Field(
        default="onnx",
        description="How MiniLM runs: ONNX Runtime (its graph exported once from the installed weights, "
        "checked against PyTorch; PyTorch if that fails) or PyTorch",
    )
    model_cache: Path | None = Field(
        default=None, description="Where MiniLM's exported ONNX graph is kept (unset: ~/.cache/episodic)"
    )
    titan_model_id: str = "amazon.titan-embed-text-v2:0"
    titan_dimensions: int = Field(default=1024, description="256, 512 or 1024")
    # The AWS backend (EPISODIC_BACKEND=aws): resource names come from the deployment.
    timeline_table: str = "episodic-timeline"
    audit_table: str = "episodic-audit"
    archive_bucket: str = "episodic-archive"
    archive_kms_key_id: str | None = None
    max_scope: int = Field(default=20_000, ge=100, description="Largest scope the DynamoDB-only recall ranks")
    opensearch_endpoint: str | None = Field(default=None, description="Recall through OpenSearch when set")
    opensearch_index: str = "episodic-recall"
    opensearch_service: str = Field(default="es", pattern="^(es|aoss)$")
    aws_region: str | None = None
    review_state_machine_arn: str | None = Field(default=None, description="Step Functions review workflow")
    summary_model_id: str | None = Field(
        default=None, description="Bedrock model for digests (grounding-checked, extractive fallback)"
    )
    ingest_mapping: Path | None = Field(default=None, description="The EventBridge ingestion mapping file")
    event_webhook: str | None = Field(
        default=None, pattern=r"^https?://\S+$", description="Where memory events are POSTed, signed (local server)"
    )
    event_webhook_secret: SecretStr | None = Field(
        default=None, description="The shared secret memory events are signed with (HMAC-SHA256); needed with a webhook"
    )
    event_actor: Literal["pseudonym", "id", "none"] = Field(
        default="pseudonym", description="How a memory event names the episode's actor"
    )
    event_bus: str | None = Field(default=None, description="The EventBridge bus memory events go to (AWS)")
    audit_heads_bucket: str | None = Field(
        default=None, description="The S3 bucket (Object Lock) audit chain heads are checkpointed to (AWS)"
    )

    @field_validator("tag_weights")
    @classmethod
    def _lower_case_tags(cls, weights: dict[str, float]) -> dict[str, float]:
        """Tags are stored lower-case, so weights are looked up lower-case whoever set them."""
        return {tag.strip().lower(): weight for tag, weight in weights.items()}

    @model_validator(mode="after")
    def _webhook_is_signed(self) -> Settings:
        """A webhook without a secret would let anyone post events as the service: refused."""
        if self.event_webhook and not (self.event_webhook_secret and self.event_webhook_secret.get_secret_value()):
            raise ValueError("EPISODIC_EVENT_WEBHOOK needs EPISODIC_EVENT_WEBHOOK_SECRET to sign the events")
        return self

    def ranking_weights(self, embedder: object = None) -> RankingWeights:
        """The ranking these settings ask for; the semantic floor is ``embedder``'s own
        (``evidence_floor``: cosines are on each model's own scale) unless one is set, and so are
        the languages its cosines are trusted in (``languages``)."""
        floor = self.min_semantic if self.min_semantic is not None else getattr(embedder, "evidence_floor", 0.0)
        return RankingWeights(
            half_life_days=self.half_life_days,
            min_relevance=self.min_relevance,
            min_semantic=floor,
            unrelated_cosine=getattr(embedder, "similarity_floor", 0.0),
            embedder_languages=getattr(embedder, "languages", None),
        )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Build from ``EPISODIC_*`` variables (e.g. ``EPISODIC_DATA_DIR``)."""
        env = os.environ if environ is None else environ
        values: dict[str, object] = {}
        for name in cls.model_fields:
            raw = env.get(f"EPISODIC_{name.upper()}")
            if raw is not None:
                values[name] = raw
        if "tag_weights" in values:
            pairs = (item.split("=", 1) for item in str(values["tag_weights"]).split(",") if "=" in item)
            values["tag_weights"] = {k.strip().lower(): float(v) for k, v in pairs}
        return cls.model_validate(values)
