"""The REST API's Lambda entry point (``functions.api.handler``) behind API Gateway.

The application lives in :mod:`episodic.entrypoints.rest` so that ``episodic serve`` runs the
very same handler locally without the core importing this package. Tests and tools use
:func:`set_service` to hand the API a composed service.
"""

from episodic.entrypoints.rest import app, current_caller, get_service, handler, set_service

__all__ = ["app", "current_caller", "get_service", "handler", "set_service"]
