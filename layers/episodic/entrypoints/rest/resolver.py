"""The API's resolver: Powertools' REST resolver, able to serve many requests at once.

Why: Powertools keeps the request being resolved where every request sees it --
``BaseRouter.current_event`` and ``lambda_context`` are class attributes, ``context`` (the route,
its arguments, the parsed request) one dict on the resolver -- and builds each route's
middleware stack on the route's first request. Lambda resolves one request per process, so that
is harmless there; ``episodic serve`` answers on many threads, and two requests resolved at once
could swap callers or bodies.

Here each request's state lives in a :class:`~contextvars.ContextVar` (every server thread has
its own context), read and written through properties that shadow the class attributes, as
Powertools' own ASGI resolver (``HttpResolverLocal``) keeps its per-request state. Every route's
middleware stack is built once, under a lock, before the first request is resolved: Powertools
has no public way to do that, so this is the one place that reaches into its routes
(``Route._build_middleware_stack``) and, below, its response validation; ``pyproject.toml`` pins
Powertools' major version.

The resolver also records the methods of every rule it registers (:meth:`methods_for`): which
methods a path has is what a 405's ``Allow`` and an ``OPTIONS`` answer say, and Powertools' route
table is private.

Routes that are costly to set up and rarely asked for can be registered on their first request
(:meth:`ConcurrentRestResolver.defer`): the Swagger UI's OpenAPI models take a noticeable part of a
cold start to import, which every Lambda start would otherwise pay for a page no agent reads.

A route that returns an instance of the model it declares has it written as JSON in one step
(:class:`_WrittenOnce`): Powertools' response validation would turn it into a dict of JSON values
and the serialiser would then write that dict, two walks over a recall's hundreds of fields for the
same text. The instance was validated when it was built, and Powertools' validation of an instance
returns it as it is, so what is sent does not change; any other body takes Powertools' own way.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.event_handler.middlewares.openapi_validation import OpenAPIResponseValidationMiddleware
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent
from aws_lambda_powertools.utilities.data_classes.common import BaseProxyEvent
from pydantic import BaseModel


@dataclass
class _RequestState:
    event: BaseProxyEvent | None = None
    lambda_context: Any = None
    context: dict[str, Any] = field(default_factory=dict)
    processed_stack_frames: list[str] = field(default_factory=list)


class ConcurrentRestResolver(APIGatewayRestResolver):
    """``APIGatewayRestResolver`` whose request state is per thread (see the module docstring)."""

    def __init__(self, **options: Any) -> None:
        self._outside_requests = _RequestState()  # what registration and start-up see
        self._request: ContextVar[_RequestState | None] = ContextVar("episodic_request", default=None)
        self._stacks_built = False
        self._stacks_lock = threading.Lock()
        self._deferred: dict[str, Callable[[], None]] = {}
        self._rules: dict[str, set[str]] = {}
        self._read_body: Callable[[str], Any] = options.get("json_body_deserializer") or json.loads
        super().__init__(**options)
        if options.get("enable_validation"):
            self._response_validation_middleware = _WrittenOnce(
                validation_serializer=options.get("serializer"),
                has_response_validation_error=self._has_response_validation_error,
            )

    def route(self, rule: str, method: str | list[str] | tuple[str], *args: Any, **kwargs: Any) -> Any:
        """Powertools' registration of ``rule``, which also records its methods (:meth:`methods_for`)."""
        methods = (method,) if isinstance(method, str) else tuple(method)
        self._rules.setdefault(rule, set()).update(m.upper() for m in methods)
        return super().route(rule, method, *args, **kwargs)

    def methods_for(self, path: str) -> list[str]:
        """The methods ``path`` is served with (``[]``: no route). A path some rule names as it is
        (``/v1/episodes/batch``) has that rule's methods, not those of a pattern it also fits
        (``/v1/episodes/<eventId>``), as Powertools matches static routes first; a deferred path
        has ``GET`` before its routes exist."""
        exact = self._rules.get(path)
        if exact is not None and "<" not in path:
            methods = set(exact)
        else:
            methods = {m for rule, ms in self._rules.items() if "<" in rule and _fits(rule, path) for m in ms}
        if self.is_deferred(path):
            methods.add("GET")
        return sorted(methods)

    def defer(self, path: str, register: Callable[[], None]) -> None:
        """Call ``register`` (which registers the routes of ``path``) on the first request for
        ``path``, whatever its method, instead of now; once, however many requests come at once."""
        self._deferred[path] = register

    def is_deferred(self, path: str) -> bool:
        """Whether ``path``'s routes are still waiting for its first request."""
        return path.rstrip("/") in self._deferred

    @property
    def _state(self) -> _RequestState:
        return self._request.get() or self._outside_requests

    @property  # type: ignore[override]
    def current_event(self) -> BaseProxyEvent:
        event = self._state.event
        if event is None:
            raise RuntimeError("no request is being resolved on this thread")
        return event

    @current_event.setter
    def current_event(self, value: BaseProxyEvent) -> None:
        self._state.event = value

    @property  # type: ignore[override]
    def lambda_context(self) -> Any:
        return self._state.lambda_context

    @lambda_context.setter
    def lambda_context(self, value: Any) -> None:
        self._state.lambda_context = value

    @property  # type: ignore[override]
    def context(self) -> dict[str, Any]:
        return self._state.context

    @context.setter
    def context(self, value: dict[str, Any]) -> None:
        self._state.context = value

    @property  # type: ignore[override]
    def processed_stack_frames(self) -> list[str]:
        return self._state.processed_stack_frames

    @processed_stack_frames.setter
    def processed_stack_frames(self, value: list[str]) -> None:
        self._state.processed_stack_frames = value

    def resolve(self, event: Any, context: Any) -> dict[str, Any]:
        """Resolve ``event`` with state of its own; Powertools still sets its class attributes,
        which nothing of this resolver reads."""
        if self._deferred:
            self._register_deferred(event)
        self._build_stacks()
        state = _RequestState(event=APIGatewayProxyEvent(event, self._read_body), lambda_context=context)
        token = self._request.set(state)
        try:
            return super().resolve(event, context)
        finally:
            self._request.reset(token)

    def _register_deferred(self, event: Any) -> None:
        """Register the deferred routes ``event`` asks for, if any (before its stacks are built)."""
        asked = {str(event.get(key) or "").rstrip("/") for key in ("path", "resource", "rawPath")}
        if not asked & self._deferred.keys():
            return
        # The stacks' lock: no stack is being built from a route list this changes, and a request
        # for the same path waits here until the routes exist (the path leaves the dict last).
        with self._stacks_lock:
            for path in asked & self._deferred.keys():
                self._deferred[path]()
                self._stacks_built = False  # the new routes' stacks are built next
                del self._deferred[path]

    def _build_stacks(self) -> None:
        """Every route's middleware stack, built once before any request can race to build it."""
        if self._stacks_built:
            return
        with self._stacks_lock:
            if self._stacks_built:
                return
            for route in [*self._static_routes, *self._dynamic_routes]:
                if not route._middleware_stack_built:
                    route._build_middleware_stack(router_middlewares=self._router_middlewares, app=self)
            self._stacks_built = True


class _WrittenOnce(OpenAPIResponseValidationMiddleware):
    """Powertools' response validation, which writes a route's instance of its declared model as
    JSON in one step (see the module docstring)."""

    def _serialize_response_with_validation(self, *, field: Any, response_content: Any, **options: Any) -> Any:
        declared = getattr(field, "type_", None)
        if (
            type(response_content) is declared
            and isinstance(response_content, BaseModel)
            and not any(
                options.get(k) for k in ("include", "exclude", "exclude_unset", "exclude_defaults", "exclude_none")
            )
        ):
            try:
                return response_content.model_dump_json(by_alias=True)
            except ValueError:  # a string no UTF-8 can hold: the serialiser's own way escapes it
                pass
        return super()._serialize_response_with_validation(field=field, response_content=response_content, **options)


def _fits(rule: str, path: str) -> bool:
    """Whether ``path`` fits ``rule``, segment by segment: ``<name>`` stands for any one non-empty segment."""
    wanted, given = rule.split("/"), path.split("/")
    return len(wanted) == len(given) and all(
        w == g or (w.startswith("<") and w.endswith(">") and g != "") for w, g in zip(wanted, given, strict=True)
    )
