"""A sound literal prefilter for the instruction patterns: skip regex searches that cannot match.

Why: the instruction patterns are long alternations that Python's ``re`` tries at every position
of every reading of a text; on ordinary memories they never match, yet they were most of the
write policy's time. Every match of such a pattern contains certain literal words ("ignore" and
"instructions", "pretend" and "you", ...), and looking for a few substrings is far cheaper.

The literals are *derived* from each compiled pattern's syntax tree, never written by hand, so a
pattern edited later keeps a correct filter. For each top-level alternative, the groups of
literals its matches must contain (one literal of every group): a run of literal characters is
one group; a nested alternation needs one of its branches' literals; a repeat that may match zero
times, a character class or an assertion needs nothing. The two likely rarest groups of each
alternative are kept. Text can match only if, for some alternative, each kept group has a literal
in it; all the readings of a text are checked joined (a match in one reading is a match in the
join), so one check spares every search of every reading. An alternative that needs no literal
at all switches the filter off for its pattern.

The check itself must be cheap, or it costs what it saves: one Aho-Corasick pass (pyahocorasick,
C) finds every literal present, overlapping ones included, and only the alternatives whose
rarest group has a literal present are looked at (a pattern has hundreds of alternatives; an
ordinary text brings a handful of them into play). This took the check from ~140 to ~40 µs per
text across the detector's nine patterns.

Case: for an ``IGNORECASE`` pattern both the literals and the text are case-folded
(``str.casefold`` maps every character on its own, so a literal inside the text stays inside
it), with the dotted and dotless Turkish i (U+0130, U+0131) mapped to ``i`` first: ``re`` treats
both as cases of ``i``, which case folding does not. ``tests/unit/test_prefilter.py`` checks that
filtered searches answer exactly as plain ones on every labelled text and its readings.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

import ahocorasick

_TURKISH_I = str.maketrans({"\u0130": "i", "\u0131": "i"})


def fold(text: str) -> str:
    """The case-insensitive form both the literals and the text are compared in."""
    return text.translate(_TURKISH_I).casefold()


class Prefiltered:
    """A compiled pattern and, for each of its top-level alternatives, the groups of literals a
    match of that alternative contains (one literal of every group)."""

    __slots__ = ("_by_rarest", "_scanner", "alternatives", "folds", "literals", "pattern")

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.folds = bool(pattern.flags & re.IGNORECASE)
        found = alternatives(sre_parse.parse(pattern.pattern, pattern.flags))
        shape = fold if self.folds else str
        # Two groups per branch (the likely rarest) filter nearly as well as all of them, for less work.
        self.alternatives: tuple[tuple[frozenset[str], ...], ...] | None = (
            None if found is None else tuple(tuple(frozenset(map(shape, g)) for g in groups[:2]) for groups in found)
        )
        every = {literal for groups in self.alternatives or () for group in groups for literal in group}
        self.literals = tuple(sorted(every))
        # Each alternative filed under the literals of its rarest group, with the groups left to check.
        by_rarest: defaultdict[str, list[tuple[frozenset[str], ...]]] = defaultdict(list)
        for groups in self.alternatives or ():
            for literal in groups[0]:
                by_rarest[literal].append(groups[1:])
        self._by_rarest = dict(by_rarest)
        self._scanner = scanner(self.literals)

    def may_match(self, text: str) -> bool:
        """False only when no match in ``text`` is possible. ``text`` may be several readings
        joined: a match in any one of them is a match in the whole, so one check covers all."""
        if self.alternatives is None:
            return True
        haystack = fold(text) if self.folds else text
        present = {literal for _, literal in self._scanner.iter(haystack)}
        return any(
            all(not present.isdisjoint(group) for group in rest)
            for literal in present
            for rest in self._by_rarest.get(literal, ())
        )

    def search_any(self, readings: Iterable[str], joined: str | None = None) -> bool:
        """Whether the pattern matches any of ``readings`` (searched only when they may);
        ``joined``, when given, is the readings already joined by newlines (checks that read the
        same readings share it)."""
        readings = list(readings)
        return self.may_match("\n".join(readings) if joined is None else joined) and any(
            self.pattern.search(r) for r in readings
        )


@dataclass(frozen=True, slots=True)
class Needs:
    """What every match of a pattern holds: for each of its alternatives, groups of folded literals
    (a match of the alternative holds one literal of every group)."""

    alternatives: tuple[tuple[frozenset[str], ...], ...]
    literals: frozenset[str]
    """All of them: a text holding none (the common case) is turned away by one set operation."""

    def may_hold(self, present: set[str]) -> bool:
        """False only when no match is possible in a text whose folded form holds just ``present``
        of the literals looked for."""
        return not present.isdisjoint(self.literals) and any(
            all(not present.isdisjoint(group) for group in groups) for groups in self.alternatives
        )


def needs(pattern: re.Pattern[str]) -> Needs | None:
    """What every match of ``pattern`` holds, for gates that look for the literals of many patterns
    in one pass over the folded text (see :mod:`episodic.policy.secrets`); None when some
    alternative needs no literal. Every literal is folded, whatever the pattern's flags, scoped
    ones included: as the text is folded too, a literal the pattern matches case-sensitively is
    still found, and only more texts pass the gate."""
    found = alternatives(sre_parse.parse(pattern.pattern, pattern.flags))
    # A group with a one-character literal ("g" of "gh[pousr]_|github_pat_", whose common prefix
    # the parser takes out) is in nearly every text and makes the scan report every occurrence:
    # such groups are not looked for, and a pattern left with none has no gate (it always runs).
    kept = [[g for g in groups if min(map(len, g)) > 1][:2] for groups in found or ()]
    if found is None or not all(kept):
        return None
    folded = tuple(tuple(frozenset(map(fold, g)) for g in groups) for groups in kept)
    return Needs(folded, frozenset(literal for groups in folded for group in groups for literal in group))


def scanner(literals: Iterable[str]) -> Any:
    """An Aho-Corasick automaton that reports every occurrence of ``literals`` in a text."""
    automaton = ahocorasick.Automaton()
    for literal in literals:
        automaton.add_word(literal, literal)
    if len(automaton):
        automaton.make_automaton()
    return automaton


Need = frozenset[str] | None
"""Literals one of which every match contains; ``None``: nothing can be said."""


def alternatives(items: Any) -> list[list[frozenset[str]]] | None:
    """For a pattern that is one alternation (between zero-width assertions), each branch's groups
    of literals (a match of the branch contains one literal of every group); otherwise the whole
    pattern as one branch. ``None`` when some branch requires no literal at all."""
    solid = [(op, arg) for op, arg in items if op is not sre.AT]
    branches = solid[0][1][1] if len(solid) == 1 and solid[0][0] is sre.BRANCH else [items]
    found = [_groups(branch) for branch in branches]
    return None if any(not groups for groups in found) else found


def _groups(items: Any) -> list[frozenset[str]]:
    """Every element's requirement of a sequence (all of them hold), the likely rarest first."""
    groups = [need for need in _needs(items) if need is not None]
    return sorted(groups, key=_commonness)


def _needs(items: Any) -> list[Need]:
    """Each element's requirement; a run of literal characters is one literal."""
    needs: list[Need] = []
    run: list[str] = []
    for op, arg in [*items, (None, None)]:  # a sentinel ends the last literal run
        if op is sre.LITERAL:
            run.append(chr(arg))
            continue
        if run:
            needs.append(frozenset(["".join(run)]))
            run = []
        if op is not None:
            needs.append(_element(op, arg))
    return needs


def required(items: Any) -> Need:
    """What a sequence of syntax-tree items requires: the best of its elements' requirements."""
    needs = [need for need in _needs(items) if need is not None]
    return min(needs, key=_commonness) if needs else None


def _element(op: Any, arg: Any) -> Need:
    if op is sre.BRANCH:
        needs = [required(branch) for branch in arg[1]]
        if any(n is None for n in needs):
            return None
        return frozenset().union(*needs)  # type: ignore[arg-type]
    if op is sre.SUBPATTERN:
        return required(arg[3])
    if op is sre.ATOMIC_GROUP:
        return required(arg)
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
        low, _, inner = arg
        return required(inner) if low >= 1 else None
    return None  # classes, wildcards, assertions, references: no literal is certain


def _commonness(group: frozenset[str]) -> tuple[int, int]:
    """Likely frequency in ordinary text, lower is rarer: longer shortest literal, then fewer.
    Only the filter's speed depends on this choice, never whether it is sound."""
    return (-min(map(len, group)), len(group))
