"""Local bearer tokens: each token maps to a tenant and a role.

Sources, first found wins: the ``EPISODIC_TOKENS`` variable (``token=tenant:role,...``),
then ``<data-dir>/tokens.json``. With neither, a tokens file is created with one agent
and one operator token for tenant ``demo`` (mode 0600) and the tokens are printed once.
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

from episodic.model import Caller, Role


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


def parse_tokens(spec: str) -> dict[str, Caller]:
    """Parse ``token=tenant:role,...``; raises ValueError with the offending entry."""
    tokens: dict[str, Caller] = {}
    for entry in (e.strip() for e in spec.split(",")):
        if not entry:
            continue
        try:
            token, rest = entry.split("=", 1)
            tenant, role = rest.split(":", 1)
            tokens[token] = _caller(token, tenant, role)
        except ValueError as exc:
            raise ValueError(f"bad EPISODIC_TOKENS entry {entry.split('=')[0]!r}: expected token=tenant:role") from exc
    if not tokens:
        raise ValueError("EPISODIC_TOKENS is set but holds no token")
    return tokens


def _caller(token: str, tenant: str, role: str) -> Caller:
    if len(token) < 16:
        raise ValueError("tokens must be at least 16 characters")
    # The audit names the principal by a hash of the token, never by the token itself.
    principal = "token:" + hashlib.sha256(token.encode()).hexdigest()[:12]
    return Caller(tenant_id=tenant, role=Role(role), principal_id=principal)


def load_tokens(data_dir: Path, environ: dict[str, str] | None = None) -> TokenBook:
    env = os.environ if environ is None else environ
    if env.get("EPISODIC_TOKENS"):
        return TokenBook(parse_tokens(env["EPISODIC_TOKENS"]), "EPISODIC_TOKENS")
    path = data_dir / "tokens.json"
    if path.exists():
        raw = json.loads(path.read_text())
        tokens = {t: _caller(t, v["tenantId"], v["role"]) for t, v in raw.items()}
        return TokenBook(tokens, str(path))
    data_dir.mkdir(parents=True, exist_ok=True)
    raw = {
        secrets.token_urlsafe(24): {"tenantId": "demo", "role": "agent"},
        secrets.token_urlsafe(24): {"tenantId": "demo", "role": "operator"},
    }
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(raw, handle, indent=2)
    tokens = {t: _caller(t, v["tenantId"], v["role"]) for t, v in raw.items()}
    return TokenBook(tokens, str(path), created=True)
