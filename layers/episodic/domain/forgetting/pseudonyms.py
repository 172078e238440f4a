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
from collections.abc import Callable

MIN_KEY_BYTES = 32


class Pseudonyms:
    """A deployment's actor pseudonyms, under its key: the key itself, or the store's way to
    read it, called on first use (building a service makes no call to its store)."""

    def __init__(self, key: bytes | Callable[[], bytes]) -> None:
        self._key: bytes | None = None
        self._load: Callable[[], bytes] | None = None
        if isinstance(key, bytes):
            self._key = _checked(key)
        else:
            self._load = key

    def actor(self, tenant_id: str, actor_id: str) -> str:
        """A stable stand-in for ``actor_id`` within ``tenant_id`` (32 hex characters) that
        nobody without the key can compute or reverse."""
        return hmac.new(self._secret(), f"{tenant_id}/{actor_id}".encode(), hashlib.sha256).hexdigest()[:32]

    def text(self, value: str) -> str:
        """A keyed hash of free text the audit keeps instead of it (a reviewer's note, a query, a
        reason given for an erasure): equal texts hash alike, and a short text cannot be confirmed
        by hashing guesses, as it could with a plain SHA-256."""
        return "hmac-sha256:" + hmac.new(self._secret(), value.encode(), hashlib.sha256).hexdigest()

    def _secret(self) -> bytes:
        if self._key is None:
            assert self._load is not None
            self._key = _checked(self._load())  # racing threads read the same stored key
        return self._key

    def __repr__(self) -> str:  # never the key
        return "Pseudonyms(<key>)"


def _checked(key: bytes) -> bytes:
    if len(key) < MIN_KEY_BYTES:
        raise ValueError(f"a pseudonym key needs at least {MIN_KEY_BYTES} bytes")
    return key


def unkeyed_actor_pseudonym(tenant_id: str, actor_id: str) -> str:
    """The unkeyed form (SHA-256 of ``tenant/actor``), which archive folders of stores made
    before pseudonyms were keyed are named by: an actor's erasure removes those folders too."""
    return hashlib.sha256(f"{tenant_id}/{actor_id}".encode()).hexdigest()[:32]
