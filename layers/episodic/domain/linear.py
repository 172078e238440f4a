"""Regular expressions that run in time linear in their input, for every text a caller sends.

A backtracking engine (Python's ``re``) can take time quadratic or worse in its input: one
write of a few kilobytes made to match a pattern's prefix over and over would hold a CPU (and
the interpreter's lock) for seconds. Every pattern the service applies to untrusted text is
therefore compiled here, by RE2 (``google-re2``), whose automata guarantee time linear in the
text for any pattern; a pattern RE2 cannot run that way (backreferences, look-around) does not
compile at all. The detectors are written so: an exception a look-around would have expressed
is a *veto* group whose match discards the match it belongs to (:func:`search_unvetoed`), and
a replacement that must not consume its surroundings replaces one named group
(:func:`replace_group`).

Patterns are written in Python's syntax for character classes and :func:`compile` keeps their
Python meaning: ``\\w``, ``\\d``, ``\\s`` (and their negations) are Unicode-aware, as in
``re``, not RE2's ASCII classes. One difference stays, and patterns are written with it in
mind: ``\\b`` is RE2's *ASCII* word boundary. Patterns of English words read text through
:func:`ascii_words`, where it then falls exactly where Python's Unicode ``\\b`` does; the
patterns of other scripts mark word edges with :data:`START` and :data:`END` instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cache
from typing import Any, Protocol

import re2

WORD_CHARS = r"\pL\pN_"
"""What Python's ``\\w`` matches in a str pattern: letters, numbers and the underscore."""
SPACE_CHARS = r"\t-\r\x1c-\x1f \x{85}\pZ"
"""What Python's ``\\s`` (and ``str.isspace``) matches: ASCII layout, the separators, NEL."""
DIGIT_CHARS = r"\p{Nd}"
"""What Python's ``\\d`` matches: every decimal digit, in any script."""

START = rf"(?:^|[^{WORD_CHARS}])"
"""Where a word starts, in any script: the start of the text or a character that is not a word
character (consumed: use it where a match is only tested, or wrap the word in a group)."""
END = rf"(?:[^{WORD_CHARS}]|$)"
"""Where a word ends, in any script (consumed, like :data:`START`)."""

MAX_MEMORY = 64 << 20
"""RE2's memory budget per pattern: the large alternations of the instruction detector need more
than the 8 MiB default to keep their automaton in memory (past the budget RE2 still answers in
linear time, more slowly)."""

_CLASSES = {
    "w": f"[{WORD_CHARS}]",
    "W": f"[^{WORD_CHARS}]",
    "s": f"[{SPACE_CHARS}]",
    "S": f"[^{SPACE_CHARS}]",
    "d": f"[{DIGIT_CHARS}]",
    "D": f"[^{DIGIT_CHARS}]",
}
_IN_CLASS = {"w": WORD_CHARS, "s": SPACE_CHARS, "d": DIGIT_CHARS}


class _AsciiWords(dict[int, int]):
    """``str.translate`` table: a letter or digit outside ASCII becomes ``_``, anything else stays;
    each character is classified once, then looked up."""

    def __missing__(self, code: int) -> int:
        value = _UNDERSCORE if code > 127 and chr(code).isalnum() else code
        self[code] = value
        return value


_UNDERSCORE = ord("_")
_ASCII_WORDS = _AsciiWords()


def ascii_words(text: str) -> str:
    """``text`` with every letter and digit outside ASCII read as ``_``, one character for one (so
    a match's spans are the text's). RE2's ``\\b`` and ``\\w`` know only ASCII word characters, and
    ``_`` is one of them: a pattern of English words bounded by ``\\b`` then finds its words
    exactly where Python's Unicode ``\\b`` would -- not inside "IČO" or "už", whose ``I`` and ``u``
    are no English words."""
    return text if text.isascii() else text.translate(_ASCII_WORDS)


def one_line(text: str) -> str:
    """Every run of whitespace as one space (the ends too, as ``\\s+`` -> ``" "`` would): no
    pattern needed, ``str.split`` reads the whitespace ``\\s`` means."""
    words = text.split()
    if not words:
        return " " if text else ""
    return (" " if text[0].isspace() else "") + " ".join(words) + (" " if text[-1].isspace() else "")


class _WordsOnly(dict[int, int]):
    """``str.translate`` table: word characters (``\\w``) stay, anything else becomes a space."""

    def __missing__(self, code: int) -> int:
        char = chr(code)
        value = code if char.isalnum() or char == "_" else _SPACE
        self[code] = value
        return value


_SPACE = ord(" ")
_WORDS_ONLY = _WordsOnly()


def words(text: str) -> list[str]:
    """The runs of word characters of ``text`` -- what ``\\w+`` finds -- in one pass and no pattern:
    a text of many short words costs no per-match work."""
    return text.translate(_WORDS_ONLY).split()


class Match(Protocol):
    """What a match of a :class:`Pattern` offers (the subset of ``re.Match`` RE2's wrapper has;
    its ``start``, ``end`` and ``span`` take a group's number, not its name)."""

    def __getitem__(self, group: int | str) -> Any: ...
    def group(self, *groups: int | str) -> Any: ...
    def groups(self, default: Any = None) -> tuple[Any, ...]: ...
    def groupdict(self, default: Any = None) -> dict[str, Any]: ...
    def start(self, group: int = 0) -> int: ...
    def end(self, group: int = 0) -> int: ...
    def span(self, group: int = 0) -> tuple[int, int]: ...
    @property
    def string(self) -> str: ...


class Pattern(Protocol):
    """A compiled linear-time pattern, with the ``re.Pattern`` methods the service uses."""

    def __hash__(self) -> int: ...
    @property
    def pattern(self) -> str: ...
    @property
    def groupindex(self) -> dict[str, int]: ...
    def search(self, text: str, pos: int | None = None, endpos: int | None = None) -> Match | None: ...
    def match(self, text: str, pos: int | None = None, endpos: int | None = None) -> Match | None: ...
    def fullmatch(self, text: str, pos: int | None = None, endpos: int | None = None) -> Match | None: ...
    def finditer(self, text: str, pos: int | None = None, endpos: int | None = None) -> Iterator[Match]: ...
    def findall(self, text: str, pos: int | None = None, endpos: int | None = None) -> list[Any]: ...
    def split(self, text: str, maxsplit: int = 0) -> list[str]: ...
    def sub(self, repl: str | Callable[[Match], str], text: str, count: int = 0) -> str: ...


def compile(pattern: str, *, ignore_case: bool = False, dot_all: bool = False) -> Pattern:
    """``pattern`` (Python's class syntax, see the module docstring) compiled by RE2; raises
    ``ValueError`` naming the problem when RE2 cannot run it in linear time."""
    return _compiled(pattern, ignore_case, dot_all)


def escape(text: str) -> str:
    """``text`` as a pattern that matches it as it is."""
    return str(re2.escape(text))


def sources() -> list[str]:
    """The source of every pattern compiled so far, in order: where the tests read the shapes of
    text that each pattern's prefix matches over and over."""
    return list(dict.fromkeys(_SOURCES))


_SOURCES: list[str] = []


@cache
def _compiled(pattern: str, ignore_case: bool, dot_all: bool) -> Pattern:
    compiled = _re2(pattern, ignore_case, dot_all)
    _SOURCES.append(pattern)
    return compiled


def _re2(pattern: str, ignore_case: bool, dot_all: bool) -> Pattern:
    options = re2.Options()
    options.max_mem = MAX_MEMORY
    options.log_errors = False  # the ValueError below says why
    options.case_sensitive = not ignore_case
    options.dot_nl = dot_all
    try:
        compiled: Pattern = re2.compile(unicode_classes(pattern), options)
    except re2.error as error:
        raise ValueError(f"not a linear-time pattern ({error}): {pattern[:120]!r}") from None
    return compiled


def unicode_classes(pattern: str) -> str:
    """``pattern`` with Python's Unicode meaning of ``\\w \\W \\s \\S \\d \\D`` spelled out for RE2,
    inside character classes too (where the negated ones cannot be spelled: ``ValueError``), and
    Python's ``\\uXXXX`` escapes as RE2's ``\\x{XXXX}``."""
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            letter = pattern[i + 1]
            width = {"u": 4, "U": 8}.get(letter, 0)
            if width and len(pattern) >= i + 2 + width:  # Python's \uXXXX is RE2's \x{XXXX}
                out.append("\\x{" + pattern[i + 2 : i + 2 + width] + "}")
                i += 2 + width
                continue
            if in_class and letter in _IN_CLASS:
                out.append(_IN_CLASS[letter])
            elif in_class and letter in _CLASSES:
                raise ValueError(f"\\{letter} inside a character class has no RE2 spelling: {pattern[:120]!r}")
            elif letter in _CLASSES:
                out.append(_CLASSES[letter])
            else:
                out.append(pattern[i : i + 2])
            i += 2
            continue
        if char == "[" and not in_class:
            in_class = True
            out.append(char)
            # a ']' right after '[' or '[^' is a literal member, not the end of the class
            for opening in ("^]", "]", "^"):
                if pattern.startswith(opening, i + 1):
                    out.append(opening)
                    i += len(opening)
                    break
        elif char == "]" and in_class:
            in_class = False
            out.append(char)
        else:
            out.append(char)
        i += 1
    return "".join(out)


LARGE_SCREEN_MEMORY = 256 << 20
"""RE2's memory budget for a screen (:func:`any_of`) as large as the alternation of every instruction
pattern: it needs about 50 MiB of automaton states over varied text, and under a smaller budget RE2
keeps rebuilding them (a search then costs ten times more, still linear). Smaller screens keep
:data:`MAX_MEMORY`, where they search as fast."""

_NAMED_GROUP = compile(r"\(\?P<[A-Za-z_][A-Za-z0-9_]*>")


def any_of(patterns: list[Pattern], max_memory: int = MAX_MEMORY) -> Pattern:
    """One pattern that finds a match in ``"\\n".join(readings)`` whenever any of ``patterns`` would
    find one in any of the readings: a screen that clears, in one search, the texts that none of
    them can match (most texts), so that only the rest pay for the patterns one by one.

    Each pattern keeps its own case and dot flags; named groups become plain groups (several
    patterns name theirs alike, and a name plays no part in whether a match exists); the whole is
    searched in multi-line mode, where ``^`` and ``$`` also hold at each reading's edges and a line
    break is what the start or end of a text is to ``\\b``. The screen may also match where no
    pattern would (across two readings, or where a veto group would have discarded the match):
    it only decides whether the exact search is needed."""
    parts = []
    for pattern in patterns:
        flags = ("" if pattern.options.case_sensitive else "i") + ("s" if pattern.options.dot_nl else "")  # type: ignore[attr-defined]
        parts.append(f"(?{flags}:{_NAMED_GROUP.sub('(?:', pattern.pattern)})")
    options = re2.Options()
    options.max_mem = max_memory
    options.log_errors = False
    return re2.compile("(?m)(?:" + "|".join(parts) + ")", options)


@cache
def group_numbers(pattern: Pattern) -> dict[str, int]:
    """``pattern.groupindex``, read once a pattern: RE2's wrapper builds that dict on every read
    (and ``Match.groupdict`` reads it on every call), which the write policy did hundreds of times
    a proposal."""
    return dict(pattern.groupindex)


def search_unvetoed(pattern: Pattern, text: str, veto: str = "veto") -> Match | None:
    """The first match of ``pattern`` in ``text`` whose group ``veto`` did not take part.

    How a detector says "this, but not when followed (or preceded) by that" without look-around:
    the exception is an optional group of the pattern, and a match that took it does not count.
    The search goes on after a vetoed match, so the whole text is still read once."""
    number = group_numbers(pattern)[veto]
    for found in pattern.finditer(text):
        if found.start(number) < 0:
            return found
    return None


def replace_group(
    pattern: Pattern,
    text: str,
    replace: Callable[[Match], str | None],
    group: int | str,
    read: str | None = None,
) -> str:
    """``text`` with the span of group ``group`` of every match of ``pattern`` replaced by
    ``replace(match)`` (``None`` keeps it): what a substitution does when the pattern must also
    read a character on either side of the part it replaces. ``read``, when given, is what is
    matched instead of ``text``: a copy of the same length (characters mapped one for one)."""
    if read is not None and len(read) != len(text):
        raise ValueError("the text read must map the text character for character")
    number = group if isinstance(group, int) else group_numbers(pattern)[group]
    pieces: list[str] = []
    kept = 0
    for found in pattern.finditer(text if read is None else read):
        start, end = found.span(number)
        if start < 0:
            continue
        replacement = replace(found)
        if replacement is None:
            continue
        pieces += [text[kept:start], replacement]
        kept = end
    if not pieces:
        return text
    pieces.append(text[kept:])
    return "".join(pieces)
