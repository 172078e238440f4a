"""Which composition to build: the one switch every entry point shares.

Each entry point (the REST API, the ingestion, stream and workflow handlers, the CLI) keeps
its own composition root and builds it from :class:`~episodic.application.settings.Settings`; this
function picks the backend those settings name, importing only that backend's adapters."""

from __future__ import annotations

from episodic.application.service import MemoryService
from episodic.application.settings import Settings


def build_service(settings: Settings) -> MemoryService:
    """The service over the backend ``settings.backend`` names (``local`` or ``aws``)."""
    if settings.backend == "aws":
        from episodic.bootstrap.aws import service_from_settings

        return service_from_settings(settings)
    from episodic.bootstrap.local import build_local_service

    return build_local_service(settings)
