"""Which composition to build: the one switch every entry point shares.

Each entry point (the REST API, the ingestion, stream and workflow handlers, the CLI) keeps
its own composition root and builds it from :class:`~episodic.settings.Settings`; this
function picks the backend those settings name, importing only that backend's adapters."""

from __future__ import annotations

from episodic.service import MemoryService
from episodic.settings import Settings


def build_service(settings: Settings) -> MemoryService:
    """The service over the backend ``settings.backend`` names (``local`` or ``aws``)."""
    if settings.backend == "aws":
        from episodic.adapters.aws.bootstrap import service_from_settings

        return service_from_settings(settings)
    from episodic.adapters.local.bootstrap import build_local_service

    return build_local_service(settings)
