"""The principal a narrowed credential acts as (``episodic.domain.access.narrowed``): within a
principal's 256 characters, never shared by two credentials, never one of the service's own."""

from __future__ import annotations

from episodic.domain.access import narrowed
from episodic.domain.model import reserved_principal


def test_given_a_short_principal_when_narrowed_then_it_names_the_actors_after_it():
    assert narrowed("token:ab12", "d1g3st") == "token:ab12/for:d1g3st"


def test_given_two_long_principals_alike_but_for_their_start_when_narrowed_then_they_stay_apart():
    tail = "x" * 250
    first, second = narrowed("a" + tail, "d1g3st"), narrowed("b" + tail, "d1g3st")
    assert first != second and len(first) <= 256 and len(second) <= 256


def test_given_a_long_principal_with_a_reserved_name_inside_when_narrowed_then_it_keeps_its_own_start():
    """Cut from its end, ``"x" * 17 + "system:session-handoff..."`` would begin ``system:``."""
    principal = "x" * 17 + "system:session-handoff" + "y" * 217
    result = narrowed(principal, "d1g3st")
    assert result.startswith("x" * 17) and not reserved_principal(result) and len(result) <= 256
