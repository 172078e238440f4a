"""Pseudonymous keys for identifiers that erasure must be able to forget.

Storage keys outlive the data they point at: a cold-archive key copied into an audit
record stays there after the actor is erased (audit records are append-only). So a key
never carries an actor id in clear; it carries :func:`actor_pseudonym`, a hash that lets
the system find the actor's records again (the actor id is known when erasure is asked
for) but does not say whose they were.
"""

from __future__ import annotations

import hashlib


def actor_pseudonym(tenant_id: str, actor_id: str) -> str:
    """A stable, non-reversible stand-in for ``actor_id`` within ``tenant_id`` (32 hex characters)."""
    return hashlib.sha256(f"{tenant_id}/{actor_id}".encode()).hexdigest()[:32]
