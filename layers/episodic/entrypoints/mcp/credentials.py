"""Whom ``episodic mcp`` acts for: the one actor a model is bound to, and its credential.

A model behind MCP is always bound to an actor. Over stdio the server holds one credential
(``EPISODIC_TOKEN``) and acts for the actor it was started with (``--actor``): every call it
makes carries the SDK's actor header, which narrows even a tenant-wide credential to that one
actor, so the service itself refuses what the actor may not do. Nothing a model passes as a tool
argument changes whom the server acts for.

Over streamable HTTP the server holds no credential of its own: every request must carry a
bearer token (``Authorization: Bearer ...``), verified by the service itself (``GET /v1/whoami``,
exactly as the API checks any call) and then used for that request's calls. A token the service
does not know, or one that would act for the whole tenant (no ``--actor`` and no actor bound to
it), is refused with 401 and the MCP specification's ``WWW-Authenticate`` challenge. When the
service cannot be asked (unreachable, or failing), the token is neither accepted nor refused:
:class:`ServiceUnreachable` becomes a 503, so a client keeps a token that may well be good.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from dataclasses import dataclass

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver.exceptions import ToolError

from episodic.client import ApiError, AsyncClient
from episodic.client._transport import Settings

VERIFIED_SECONDS = 30.0
"""How long a verified token is trusted without asking the service again (every tool call still
sends it to the service, which checks it on every request)."""
CLIENTS_KEPT = 128
"""Connections kept open, one per recent token."""


class ServiceUnreachable(Exception):
    """The service could not say whether a token is good (no answer, or a 5xx)."""


@dataclass(frozen=True)
class Session:
    """What one tool call uses: a client acting with the caller's credential, and the actor its
    writes are for (None: the credential names several and ``--actor`` did not choose)."""

    client: AsyncClient
    actor: str | None

    def writer(self) -> str:
        if not self.actor:
            raise ToolError(
                "this memory server has no actor to write as: start it with `episodic mcp --actor <id>` "
                "(or EPISODIC_ACTOR), or use a token bound to exactly one actor"
            )
        return self.actor


class StdioSessions:
    """One credential (``token``, else ``EPISODIC_TOKEN``) and one actor for the life of the process."""

    def __init__(self, base_url: str | None, actor: str, token: str | None = None) -> None:
        self._session = Session(AsyncClient(base_url, token, actor=actor), actor)

    async def current(self) -> Session:
        return self._session


class HttpSessions:
    """Each request's own verified bearer token, narrowed to ``actor`` when one is configured.

    Also the MCP SDK's ``TokenVerifier``: :meth:`verify_token` runs for every HTTP request before
    any tool sees it."""

    def __init__(self, base_url: str | None, actor: str | None) -> None:
        self.base_url = Settings.resolve(base_url, None, 10, 0, 0).base_url
        """The service the tokens are checked by, and so the issuer the MCP metadata names."""
        self.actor = actor
        self._verified: dict[str, tuple[float, AccessToken]] = {}
        self._clients: OrderedDict[str, AsyncClient] = OrderedDict()

    async def verify_token(self, token: str) -> AccessToken | None:
        """The token's principal if the service knows it and it acts for named actors; None
        (the request gets 401) otherwise."""
        key = _digest(token)
        now = time.monotonic()
        known = self._verified.get(key)
        if known is not None and now - known[0] < VERIFIED_SECONDS:
            return known[1]
        try:
            async with AsyncClient(self.base_url, token, actor=self.actor, retries=0, timeout=10) as client:
                caller = await client.whoami()
        except ApiError as error:
            self._verified.pop(key, None)
            if error.status == 0 or error.status >= 500:
                raise ServiceUnreachable(f"the service could not check the token ({error.code})") from error
            return None
        if not caller.actors:
            return None  # a model never acts for the whole tenant
        access = AccessToken(
            token=token,
            client_id=caller.principal_id,
            scopes=[caller.role.value],
            claims={"tenantId": caller.tenant_id, "actors": list(caller.actors)},
        )
        self._verified = {k: v for k, v in self._verified.items() if now - v[0] < VERIFIED_SECONDS}
        self._verified[key] = (now, access)
        return access

    async def current(self) -> Session:
        access = get_access_token()
        if access is None:  # the SDK's bearer middleware lets no unauthenticated request through
            raise ToolError("this request carries no verified credential")
        actors = list((access.claims or {}).get("actors") or [])
        return Session(await self._client(access.token), self.actor or (actors[0] if len(actors) == 1 else None))

    async def _client(self, token: str) -> AsyncClient:
        key = _digest(token)
        client = self._clients.pop(key, None) or AsyncClient(self.base_url, token, actor=self.actor)
        self._clients[key] = client
        while len(self._clients) > CLIENTS_KEPT:
            _, oldest = self._clients.popitem(last=False)
            await oldest.close()
        return client


def _digest(token: str) -> str:
    """Tokens are kept by their hash, never as dictionary keys in the clear."""
    return hashlib.sha256(token.encode()).hexdigest()
