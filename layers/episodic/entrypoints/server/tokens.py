"""Local bearer tokens: each token maps to a tenant, a role and, for a bound agent, its actors.

Sources, first found wins: the ``EPISODIC_TOKENS`` variable (``token=tenant:role[:actor+actor],...``),
then ``<data-dir>/tokens.json`` (``{token: {"tenantId", "role", "actors"?}}``). With neither, a
tokens file is created with one agent and one operator token for tenant ``demo`` (mode 0600) and
the tokens are printed once. An agent token without actors is tenant-wide (a trusted backend);
with actors it acts for them only (:mod:`episodic.domain.access`). Operators act tenant-wide.
In AWS, the API Gateway authorizer does this job instead.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from episodic.domain.model import Caller, Role
from episodic.domain.model.messages import MAX_BOUND_ACTORS


@dataclass(frozen=True)
class TokenBook:
    tokens: dict[str, Caller]
    source: str
    created: bool = False

    def authenticate(self, token: str) -> Caller | None:
        """Constant-time comparison against every known token."""
        found = None
        for known, caller in self.tokens.items():
            if hmac.compare_digest(known.encode(), token.encode()):
                found = caller
        return found


MIN_TOKEN_LENGTH = 16
TOKEN_RULES = (
    f"token=tenant:role[:actor+actor], comma-separated; a token is at least {MIN_TOKEN_LENGTH} characters "
    "without ',' or '='; a tenant or actor is letters, digits and _ . : @ - (starting with a letter or digit); "
    "a role is agent or operator; only agents are bound to actors"
)


def parse_tokens(spec: str) -> dict[str, Caller]:
    """Parse ``token=tenant:role[:actor+actor],...``. A bad entry raises ValueError naming the
    entry by its position and the real reason, never the token itself (error output ends up in
    logs)."""
    tokens: dict[str, Caller] = {}
    for position, entry in enumerate((e.strip() for e in spec.split(",")), start=1):
        if not entry:
            continue
        token, has_equals, rest = entry.partition("=")
        if not has_equals:
            raise ValueError(f"EPISODIC_TOKENS entry {position}: no '=' (expected {TOKEN_RULES})")
        tenant, has_colon, role = rest.partition(":")
        if not has_colon:
            raise ValueError(f"EPISODIC_TOKENS entry {position}: no ':' between tenant and role ({TOKEN_RULES})")
        role, _, actors = role.partition(":")
        bound = [a for a in actors.split("+") if a] if actors else None
        tokens[token] = _caller(token, tenant, role, bound, where=f"EPISODIC_TOKENS entry {position}")
    if not tokens:
        raise ValueError(f"EPISODIC_TOKENS is set but holds no token (expected {TOKEN_RULES})")
    return tokens


def _caller(token: str, tenant: str, role: str, actors: list[str] | None = None, where: str = "token") -> Caller:
    if len(token) < MIN_TOKEN_LENGTH:
        raise ValueError(f"{where}: the token has {len(token)} characters; tokens need at least {MIN_TOKEN_LENGTH}")
    if role not in {r.value for r in Role}:
        raise ValueError(f"{where}: role {role!r} is not one of {', '.join(r.value for r in Role)}")
    if actors is not None and role != Role.AGENT.value:
        raise ValueError(f"{where}: only agent tokens are bound to actors; operators act for the whole tenant")
    # The audit names the principal by a hash of the token, never by the token itself.
    principal = "token:" + hashlib.sha256(token.encode()).hexdigest()[:12]
    try:
        Caller(tenant_id=tenant, role=Role(role), principal_id=principal)
    except ValidationError:
        raise ValueError(f"{where}: tenant {tenant!r} is not a valid id ({TOKEN_RULES})") from None
    try:
        return Caller(tenant_id=tenant, role=Role(role), principal_id=principal, actors=actors)
    except ValidationError:
        raise ValueError(f"{where}: the actors must be 1 to {MAX_BOUND_ACTORS} valid ids ({TOKEN_RULES})") from None


def _from_file(token: str, entry: dict[str, Any]) -> Caller:
    return _caller(token, entry["tenantId"], entry["role"], entry.get("actors"))


def load_tokens(data_dir: Path, environ: dict[str, str] | None = None) -> TokenBook:
    env = os.environ if environ is None else environ
    if env.get("EPISODIC_TOKENS"):
        return TokenBook(parse_tokens(env["EPISODIC_TOKENS"]), "EPISODIC_TOKENS")
    path = data_dir / "tokens.json"
    if path.exists():
        raw = json.loads(path.read_text())
        tokens = {t: _from_file(t, v) for t, v in raw.items()}
        return TokenBook(tokens, str(path))
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)  # the data dir may be made here first: owner-only
    raw = {
        new_token(): {"tenantId": "demo", "role": "agent"},
        new_token(): {"tenantId": "demo", "role": "operator"},
    }
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(raw, handle, indent=2)
    tokens = {t: _from_file(t, v) for t, v in raw.items()}
    return TokenBook(tokens, str(path), created=True)


def new_token() -> str:
    """A random bearer token (24 bytes, URL-safe) that never starts with ``-``: the CLI takes it
    as an argument (``episodic tokens rotate TOKEN``), where a leading dash reads as an option."""
    while (token := secrets.token_urlsafe(24)).startswith("-"):
        pass
    return token


def token_file(data_dir: Path) -> Path:
    return data_dir / "tokens.json"


def listed_tokens(data_dir: Path) -> list[tuple[str, str, str, list[str] | None]]:
    """``(token, tenant, role, actors)`` of the tokens file, or ``[]`` when there is none yet."""
    return [(token, v["tenantId"], v["role"], v.get("actors")) for token, v in _read(data_dir).items()]


def create_token(data_dir: Path, tenant: str, role: str, actors: list[str] | None = None) -> str:
    """A new token for ``tenant`` and ``role`` in the tokens file (created, mode 0600, if missing),
    bound to ``actors`` when given (an agent that acts for them only)."""
    token = new_token()
    _caller(token, tenant, role, actors, where="new token")  # the tenant, role and actors must be valid
    raw = _read(data_dir)
    raw[token] = {"tenantId": tenant, "role": role} | ({"actors": list(dict.fromkeys(actors))} if actors else {})
    _write(data_dir, raw)
    return token


def rotate_token(data_dir: Path, old: str) -> str:
    """Replace ``old`` by a new token with the same tenant and role; ``old`` stops working when
    the server next starts."""
    raw = _read(data_dir)
    if old not in raw:
        raise ValueError(f"that token is not in {token_file(data_dir)}")
    entry = raw.pop(old)
    new = new_token()
    raw[new] = entry
    _write(data_dir, raw)
    return new


def _read(data_dir: Path) -> dict[str, dict[str, Any]]:
    path = token_file(data_dir)
    return dict(json.loads(path.read_text())) if path.exists() else {}


def _write(data_dir: Path, raw: dict[str, dict[str, Any]]) -> None:
    """Replace the tokens file atomically, readable by its owner only (and a data dir made here, too)."""
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    staging = token_file(data_dir).with_suffix(".json.new")
    fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(raw, handle, indent=2)
    os.replace(staging, token_file(data_dir))
