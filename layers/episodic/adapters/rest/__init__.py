"""The REST API (Powertools on API Gateway; the same handler behind ``episodic serve``)."""

from episodic.adapters.rest.app import app, current_caller, get_service, set_service
from episodic.adapters.rest.handler import handler

__all__ = ["app", "current_caller", "get_service", "handler", "set_service"]
