"""The REST API (Powertools on API Gateway; the same application behind ``episodic serve``)."""

from episodic.entrypoints.rest.app import app, current_caller, get_service, methods_for, set_service
from episodic.entrypoints.rest.handler import concurrent_handler, handler

__all__ = ["app", "concurrent_handler", "current_caller", "get_service", "handler", "methods_for", "set_service"]
