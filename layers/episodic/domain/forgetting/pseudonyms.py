"""Pseudonymous keys for identifiers that erasure must be able to forget.

Storage keys and records outlive the data they point at: a cold-archive key copied into an
audit record stays there after the actor is erased (audit records are append-only), and a
memory event carries its actor to systems outside the service. So none of them carries an
actor id in clear; they carry :meth:`Pseudonyms.actor`, which lets the service find the
actor's records again (the actor id is known when erasure is asked for) but does not say
whose they were.

The pseudonym is keyed (HMAC-SHA256 under a key the store makes once and keeps with the data):
a plain hash of ``tenant/actor`` would let anyone who reads the audit or receives the events
confirm a guessed actor id, and actor ids (user names, e-mail addresses) are easy to guess.
"""

from __future__ import annotations

import hashlib
import hmac

MIN_KEY_BYTES = 32


class Pseudonyms:
    """A deployment's actor pseudonyms, under its key."""

    def __init__(self, key: bytes) -> None:
        if len(key) < MIN_KEY_BYTES:
            raise ValueError(f"a pseudonym key needs at least {MIN_KEY_BYTES} bytes")
        self._key = key

    def actor(self, tenant_id: str, actor_id: str) -> str:
        """A stable stand-in for ``actor_id`` within ``tenant_id`` (32 hex characters) that
        nobody without the key can compute or reverse."""
        return hmac.new(self._key, f"{tenant_id}/{actor_id}".encode(), hashlib.sha256).hexdigest()[:32]

    def __repr__(self) -> str:  # never the key
        return "Pseudonyms(<key>)"


def unkeyed_actor_pseudonym(tenant_id: str, actor_id: str) -> str:
    """The unkeyed form (SHA-256 of ``tenant/actor``), which archive folders of stores made
    before pseudonyms were keyed are named by: an actor's erasure removes those folders too."""
    return hashlib.sha256(f"{tenant_id}/{actor_id}".encode()).hexdigest()[:32]
