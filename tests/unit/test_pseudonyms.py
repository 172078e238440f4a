"""Actor pseudonyms: keyed, stable under one key, and not the plain hash anyone could compute."""

from __future__ import annotations

import pytest

from episodic.domain.forgetting.pseudonyms import Pseudonyms, unkeyed_actor_pseudonym


def test_given_one_key_when_an_actor_is_pseudonymised_twice_then_both_agree_and_differ_per_tenant_and_actor():
    pseudonyms = Pseudonyms(bytes(range(32)))
    gail = pseudonyms.actor("acme", "gail")
    assert gail == Pseudonyms(bytes(range(32))).actor("acme", "gail") and len(gail) == 32
    assert int(gail, 16) >= 0  # hex
    assert len({gail, pseudonyms.actor("acme", "hal"), pseudonyms.actor("globex", "gail")}) == 3


def test_given_an_actor_id_when_guessed_without_the_key_then_its_pseudonym_cannot_be_confirmed():
    keyed = Pseudonyms(bytes(range(32))).actor("acme", "gail@example.com")
    assert keyed != unkeyed_actor_pseudonym("acme", "gail@example.com")
    assert keyed != Pseudonyms(bytes(range(1, 33))).actor("acme", "gail@example.com")


def test_given_a_short_key_when_pseudonyms_are_made_then_it_is_refused_and_the_key_is_never_shown():
    with pytest.raises(ValueError, match="at least 32 bytes"):
        Pseudonyms(b"too short")
    assert "\\x00" not in repr(Pseudonyms(bytes(32))) and "0" * 8 not in repr(Pseudonyms(bytes(32)))


def test_given_a_stores_key_reader_when_pseudonyms_are_made_then_it_is_read_once_on_first_use():
    reads = []

    def read_key() -> bytes:
        reads.append(1)
        return bytes(range(32))

    pseudonyms = Pseudonyms(read_key)
    assert reads == []  # building a service calls no store
    assert pseudonyms.actor("acme", "gail") == Pseudonyms(bytes(range(32))).actor("acme", "gail")
    pseudonyms.actor("acme", "hal")
    assert reads == [1]
