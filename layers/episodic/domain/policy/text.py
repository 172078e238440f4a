# ruff: noqa: RUF001, RUF002 -- look-alike letters and other scripts are what this module is about
"""Text as the detectors must see it, whatever disguise it arrives in.

An attacker who knows the policy looks for "ignore previous instructions" writes it with a
Cyrillic ``о``, a zero-width space inside a word, full-width letters, a soft hyphen, a line
break in the middle of a word, base64 or HTML entities. Two steps undo that:

* :func:`normalise` is what gets *stored*: Unicode NFKC (full-width and other compatibility
  forms become their plain letters) with invisible formatting characters removed. What the
  detectors judge is then exactly what is kept and later shown to a model.
* :func:`views` is what the *detectors* read: the stored text, its "skeleton" (letters that
  look like Latin ones mapped to Latin, leetspeak digits to letters), the skeleton squashed
  to letters only (so a word split by dots, spaces or newlines joins up again), and the
  same for every payload hidden in an encoding (base64, percent-, HTML- or backslash-escapes).

The skeleton is for detection only: a Russian customer's name stays in Cyrillic in storage.
"""

from __future__ import annotations

import base64
import binascii
import html
import unicodedata
from dataclasses import dataclass
from urllib.parse import unquote

from episodic.domain import linear
from episodic.domain.linear import one_line

_KEEP = frozenset("\u200c\u200d\t\n\r")
"""Zero-width (non-)joiners are part of how Persian, Indic scripts and emoji are written; tabs and
line breaks are layout: kept."""

_CONFUSABLES = str.maketrans(
    {
        # Cyrillic letters that render like Latin ones
        "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p",
        "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ї": "i", "ј": "j", "ԁ": "d",
        "ԛ": "q", "ԝ": "w", "һ": "h", "ӏ": "l", "ɡ": "g", "ү": "y", "ց": "g", "ո": "n", "ս": "u",
        "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C",
        "Т": "T", "Х": "X", "У": "Y", "Ѕ": "S", "І": "I", "Ј": "J", "Ԁ": "D", "Ԛ": "Q", "Ԝ": "W",
        # Greek
        "α": "a", "β": "b", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t",
        "υ": "u", "χ": "x", "γ": "y", "η": "n", "ω": "w",
        "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N",
        "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
        # Latin letters that pass for others
        "ı": "i", "ɩ": "i", "ɑ": "a", "ℓ": "l", "ſ": "s",
    }
)  # fmt: skip

_LEET = str.maketrans(
    {
        "0": "o",
        "1": "i",
        "3": "e",
        "4": "a",
        "5": "s",
        "6": "g",
        "7": "t",
        "8": "b",
        "9": "g",
        "@": "a",
        "$": "s",
        "!": "i",
    }
)
_LEET_L = str.maketrans(
    {
        "0": "o",
        "1": "l",
        "|": "l",
        "3": "e",
        "4": "a",
        "5": "s",
        "7": "t",
        "8": "b",
        "9": "g",
        "@": "a",
        "$": "s",
        "+": "t",
    }
)
"""The other common reading of leetspeak: ``1`` and ``|`` for ``l`` (``ru1es``)."""

_BASE64_MIN = 16
_BASE64_RUN = linear.compile(rf"[A-Za-z0-9+/_-]{{{_BASE64_MIN},}}={{0,2}}")
_PERCENT = linear.compile(r"%[0-9A-Fa-f]{2}")
_ENTITY = linear.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z]{2,10});")
_BACKSLASH = linear.compile(r"\\(?:u[0-9A-Fa-f]{4}|x[0-9A-Fa-f]{2}|U[0-9A-Fa-f]{8})")
_LETTERS = linear.compile(r"\pL{3,}")


_ASCII_CONTROLS = dict.fromkeys(c for c in range(128) if unicodedata.category(chr(c)) == "Cc" and chr(c) not in _KEEP)
"""What :func:`normalise` removes from ASCII text (there NFKC changes nothing and no character
is ``Cf``): the ASCII fast path of the two functions below, which is most text and the per-character
category look-up was a tenth of the write policy's time."""


def well_formed(text: str) -> str:
    """``text`` as Unicode text: a surrogate pair (``"\\ud83d\\udc4d"`` decoded by JSON, or an escape
    the policy undid) becomes the character it encodes, a lone surrogate U+FFFD. Nothing can
    store, encode or match a lone surrogate."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


class _Dropping(dict[int, int | None]):
    """``str.translate`` table that removes the characters of some Unicode categories (but those
    of ``_KEEP``): each character is classified once, then looked up in C."""

    def __init__(self, categories: frozenset[str]) -> None:
        super().__init__()
        self.categories = categories

    def __missing__(self, code: int) -> int | None:
        char = chr(code)
        value = None if char not in _KEEP and unicodedata.category(char) in self.categories else code
        self[code] = value
        return value


_INVISIBLE = _Dropping(frozenset({"Cf", "Cc"}))
_FORMATTING = _Dropping(frozenset({"Cf"}))


def normalise(text: str) -> str:
    """NFKC, with invisible formatting characters (zero-width spaces, soft hyphens, bidi
    controls, BOMs, ...) and control characters other than tab and line breaks removed, and
    surrogates made well-formed (:func:`well_formed`). Idempotent."""
    if text.isascii():
        return text.translate(_ASCII_CONTROLS)
    return unicodedata.normalize("NFKC", well_formed(text)).translate(_INVISIBLE)


def skeleton(text: str, leet: dict[int, str] = _LEET) -> str:
    """Lower-cased, every look-alike letter and leetspeak digit mapped to plain Latin."""
    if text.isascii():  # no look-alikes (they are all outside ASCII), nothing invisible
        return text.lower().translate(leet)
    visible = unicodedata.normalize("NFKC", text).translate(_FORMATTING)
    return visible.translate(_CONFUSABLES).lower().translate(leet)


def squashed(text: str) -> str:
    """Letters only, lower-cased: ``ig.nore prev-ious\\ninstruc tions`` -> ``ignorepreviousinstructions``."""
    return "".join(filter(str.isalpha, text.lower()))


_SEPARATORS = "_-./:"


def separated(text: str) -> str:
    """``text`` with every run of ``_-./:`` between two word characters read as a space.

    Only the separators are visited (found with ``str.find``), not every character: most texts
    hold a few."""
    at = sorted(i for mark in _SEPARATORS for i in _positions(text, mark))
    if not at:
        return text
    out: list[str] = []
    done, k = 0, 0
    while k < len(at):
        start = end = at[k]
        while k + 1 < len(at) and at[k + 1] == end + 1:
            k, end = k + 1, end + 1
        k += 1
        end += 1  # the run is text[start:end]
        if start > 0 and end < len(text) and _word(text[start - 1]) and _word(text[end]):
            out.append(text[done:start])
            out.append(" ")
            done = end
    out.append(text[done:])
    return "".join(out)


def _positions(text: str, mark: str) -> list[int]:
    found, i = [], text.find(mark)
    while i >= 0:
        found.append(i)
        i = text.find(mark, i + 1)
    return found


def _word(char: str) -> bool:
    return char.isalnum() or char == "_"


def decoded_payloads(text: str) -> list[str]:
    """Texts hidden in ``text`` by an encoding: base64 runs that decode to readable text, and
    the whole text with percent-, HTML- and backslash-escapes undone (when it has any)."""
    found: list[str] = []
    # Each pattern is searched only where the text holds what it must begin with: a base64 run
    # is 16 characters without whitespace, so some whitespace-free stretch is as long.
    if any(len(stretch) >= _BASE64_MIN for stretch in text.split()):
        for run in _BASE64_RUN.findall(text):
            decoded = _readable_base64(run)
            if decoded:
                found.append(decoded)
    if "%" in text and _PERCENT.search(text):
        found.append(unquote(text))
    if "&" in text and _ENTITY.search(text):
        found.append(html.unescape(text))
    if "\\" in text and _BACKSLASH.search(text):
        found.append(well_formed(_BACKSLASH.sub(lambda m: _unescape(m.group(0)), text)))
    return found


@dataclass(frozen=True)
class Views:
    """The readings of one text, grouped by what reads them (see the module docstring).

    ``words`` keep their spaces and script (the patterns of every language read them);
    ``latin`` are the skeletons (look-alikes and leetspeak mapped to Latin, for English);
    ``squashed`` are letters only (for the patterns written without spaces). Readings of
    payloads decoded from the text are included in each group."""

    words: tuple[str, ...]
    latin: tuple[str, ...]
    squashed: tuple[str, ...]


def views(text: str, depth: int = 2) -> Views:
    plain = normalise(text)
    shape = skeleton(plain)
    joined = one_line(plain)  # one word per line
    spaced = separated(joined)  # labels and refs: "ignore-previous_instructions"
    spelled, latin, flat = (
        [plain, joined, spaced],
        [shape, skeleton(plain, _LEET_L)],
        [squashed(plain), squashed(shape)],
    )
    if depth > 0:
        for payload in decoded_payloads(plain):
            inner = views(payload, depth - 1)
            spelled += inner.words
            latin += inner.latin
            flat += inner.squashed
    return Views(*(tuple(dict.fromkeys(r for r in group if r)) for group in (spelled, latin, flat)))


def _readable_base64(run: str) -> str | None:
    """The decoded text when ``run`` is base64 of mostly printable UTF-8 with a few words."""
    padded = run + "=" * (-len(run) % 4)
    try:
        raw = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    printable = sum(c.isprintable() or c.isspace() for c in text)
    if len(text) < 8 or printable < 0.95 * len(text) or not _LETTERS.search(text):
        return None
    return text


def _unescape(escape: str) -> str:
    try:
        return chr(int(escape[2:], 16))
    except (ValueError, OverflowError):
        return escape
