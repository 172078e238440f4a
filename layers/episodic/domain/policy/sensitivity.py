"""Personal disclosures that deserve more privacy than a caller asked for.

"I've got about £6,000 on credit cards", "they referred Mum to the memory clinic", "I've
started seeing a therapist": people tell agents these things in passing, wrapped in small
talk. They are not chatter -- they are exactly what a good memory keeps -- but they are the
kinds of personal data that data-protection law treats as special (health, beliefs,
sexuality, finances, family trouble, legal trouble). The policy keeps them, names the
kind (``sensitive:<kind>`` reason codes) and suggests ``sensitive`` as their privacy class;
see :class:`~episodic.domain.policy.WritePolicy` for what it then stores.

English patterns, chosen for precision: a word that is only sometimes sensitive ("operation",
"church" as a place) needs a context word next to it; Spanish and German ones in
:mod:`~episodic.domain.policy.sensitivity_i18n`, read on the text with its accents folded.
"""

from __future__ import annotations

from functools import cache

from episodic.domain import linear
from episodic.domain.policy import sensitivity_i18n

_KINDS: dict[str, str] = {
    "health": r"""
        diagnos\w* | cancer | tumou?r | chemo\w* | biops\w+ | surger\w+ | hospitali[sz]ed | a&e
        | heart\s+(attack|palpitation\w*|condition|surgery) | stroke | diabetes | diabetic | asthma attack
        | pregnan\w* | miscarri\w+ | ivf | fertility | (health|cancer)\s+scare | memory\s+clinic | dementia
        | alzheimer\w* | parkinson\w* | chronic\s+pain | physio\w* | (blood|scan)\s+results | prescri\w+
        | medication | meds\b | antibiotics | hip\s+operation | knee\s+operation | operation\s+on
        | (my|his|her|their)\s+(gp|doctor|consultant|oncologist) | hospital\w* | angio\w+ | stents?\b | angina
        | ecg | mammogram | lump\s+in | benign | malignant | fibroadenoma | egg\s+collection | embryo\w*
        | (first|12-week|20-week|dating)\s+scan | due\s+date | whiplash | concussion | fracture\w*
    """,
    "mental_health": r"""
        therap(y|ist)
        | depress\w* | anxiety | panic\s+attacks? | burn(ed|t)?\s*-?out
        | bipolar | adhd | autis\w+ | ocd | ptsd | eating\s+disorder | self[-\s]harm | suicid\w*
        | antidepressants? | mental\s+health | grief\s+counsel\w* | rehab | addiction | relapse\w* | sober
    """,
    "finances": r"""
        debts? | in\s+the\s+red | overdra(ft|wn) | bankrupt\w* | repossess\w* | evict\w* | arrears
        | (credit\s+cards?|loans?)\s+(debt|i\s+can't) | on\s+credit\s+cards | repayment\s+plan | debt\s+advice
        | payday\s+loan | money\s+advi[sc]er | balance\s+(on|onto)\s+a\s+loan
        | can't\s+afford\s+(the\s+)?(rent|mortgage|bills) | owe\s+(the\s+)?(bank|\W?\d)
        | (i['\u2019]m|i\s+am|we['\u2019]re|we\s+are)\s+(so\s+|totally\s+|completely\s+|flat\s+|stony\s+)?broke\b
    """,
    "beliefs": r"""
        my\s+(faith|religion) | religious | convert(ed|ing)\s+to
        | (went|go|going)\s+to\s+(church|mosque|synagogue|temple|mass)
        | pray(ing|ed|er)? | atheis\w+ | ramadan | fasting\s+for | bible\s+study | vote[ds]?\s+(for|labour|tory|reform)
        | (political|party)\s+member\w*
        | (i['\u2019]m|i\s+am|we['\u2019]re|we\s+are|raised|brought\s+up)\s+(a\s+)?(muslim|christian|catholic|jewish
          |hindu|buddhist|sikh|mormon|protestant|evangelical|quaker|pagan)\b
    """,
    "sexuality_identity": r"""
        gay | lesbian | bisexual | queer | pansexual | asexual | (came|coming)\s+out\s+(as|to)\b | transgender
        | trans\s+(woman|man|person|kid) | non-?binary | lgbt\w* | gender\s+identity | transition(ing|ed)\b
    """,
    "family_trouble": r"""
        divorc\w+ | separat(ed|ion|ing)\b | custody | affair | cheat(ed|ing)\s+on | estranged
        | domestic\s+(abuse|violence) | abus(ed|ive) | passed\s+away | funeral | died | miscarriage | grief
        | (moved|kicked)\s+out\s+of\s+(home|the\s+house) | not\s+speaking\s+to\s+(my|his|her)
    """,
    "legal": r"""
        arrested | charged\s+with | court\s+(case|date|hearing) | lawsuit | sued | suing | prison | jail
        | probation | criminal\s+record | police\s+caution | tribunal
    """,
}


_EXCEPTED: dict[str, str] = {
    # a counsellor seen, not a job ("I'm a counsellor", "she works as a counselor")
    "mental_health": r"""
        (?P<veto>(?:i'm|i\x{2019}m|am|is|'s|\x{2019}s|as|be|become)\sa\s)?\bcounsell?or
        | \bcounsell?ing(?P<veto2>\s+(jobs?|careers?|degrees?|courses?|programmes?|programs?|roles?|field
          |qualifications?))?
    """,
}
"""Words that are a disclosure except in a context next to them: the context is a veto group, and a
match that took it does not count (:func:`_excepted`)."""


def _compiled(body: str) -> linear.Pattern:
    r"""A pattern written across lines (as ``re.VERBOSE`` reads it, which RE2 has not): its layout
    spaces are dropped, every space it matches is spelled ``\s``."""
    return linear.compile("".join(body.split()), ignore_case=True)


@cache
def _patterns() -> dict[str, linear.Pattern]:
    """Compiled on first use, not at import: a recall-only cold start never needs them."""
    return {kind: _compiled(rf"\b(?:{body})") for kind, body in _KINDS.items()}


@cache
def _other_languages() -> tuple[linear.Pattern, dict[str, linear.Pattern]]:
    """Every other language's patterns joined into one (most texts match none of them: one
    search instead of one a kind), and each kind's own."""
    bodies = {kind: " | ".join(languages) for kind, languages in sensitivity_i18n.KINDS.items()}
    joined = _compiled(rf"\b(?:{' | '.join(bodies.values())})")
    return joined, {kind: _compiled(rf"\b(?:{body})") for kind, body in bodies.items()}


@cache
def _exceptions() -> dict[str, linear.Pattern]:
    return {kind: _compiled(body) for kind, body in _EXCEPTED.items()}


@cache
def _screen() -> linear.Pattern:
    """Every English pattern and exception as one (:func:`linear.any_of`): a text it finds nothing in
    discloses nothing in English, found in one search (most texts)."""
    return linear.any_of([*_patterns().values(), *_exceptions().values()])


def _excepted(kind: str, text: str) -> bool:
    pattern = _exceptions().get(kind)
    if pattern is None:
        return False
    groups = linear.group_numbers(pattern).values()
    return any(all(m.start(group) < 0 for group in groups) for m in pattern.finditer(text))


def disclosures(text: str) -> list[str]:
    r"""The kinds of sensitive disclosure ``text`` makes (sorted), or ``[]``. English words are
    looked for where Python's Unicode ``\b`` would find them (:func:`linear.ascii_words`), Spanish
    and German ones in the text without its accents."""
    english = linear.ascii_words(text)
    kinds: set[str] = set()
    if _screen().search(english):
        kinds = {kind for kind, pattern in _patterns().items() if pattern.search(english) or _excepted(kind, english)}
    joined, by_kind = _other_languages()
    plain = sensitivity_i18n.folded(text)
    if joined.search(plain):
        kinds.update(kind for kind, pattern in by_kind.items() if pattern.search(plain))
    return sorted(kinds)
