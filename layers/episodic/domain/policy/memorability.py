"""Is anything in this text worth remembering? Judged sentence by sentence.

People wrap facts in pleasantries: "Hey Tom, how's it going? I finally signed up for that
pottery class on Thursdays". Judged whole, such a turn looks like chatter; judged by its
sentences, one of them is a plan with a day in it. So the text is split into sentences (and
the clauses a dash or a semicolon joins), each sentence is judged, and the text is
``not_memorable`` only when every sentence is chatter.

A sentence is *chatter* when it is a pleasantry (a greeting, thanks, an acknowledgement,
laughter, a goodbye, a question about someone's day) or says too little to be a fact; it is
*memorable* when it carries a fact's marks -- something that happened or will happen, a
person, place or thing named, a number or a time, a plan, a preference, a decision, a
disclosure -- judged by content words and shape, with the chatter classifier as the
tie-breaker for short sentences. Every verdict is kept with its sentence's position, so a
decision can say which sentence was judged what.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from episodic.domain import linear
from episodic.domain.policy.chatter import ChatterClassifier
from episodic.domain.policy.ongoing import doing
from episodic.domain.policy.sensitivity import disclosures
from episodic.domain.policy.vocabulary import (
    CONVERSATION_WORDS,
    ENGLISH_WORDS,
    GREETINGS,
    LIFE_EVENTS,
    NOT_EVENTS,
    NOT_NAMES,
    PLEASANTRY_AFTER,
    PLEASANTRY_WORDS,
)

_SENTENCE_END = linear.compile(
    r"(?P<stop>[.!?…])[\"')\]]*\s+|\n+|\s+[-\x{2013}\x{2014}]\s+|;\s+|(?P<paren>\))\s+(?P<capital>[A-Z])"
)
"""Where sentences and clauses end: after a full stop, a question or exclamation mark (and any
closing quotes), at line breaks, dashes between spaces and semicolons, and between a closing
parenthesis and a capital. The mark and the parenthesis stay with their sentence, the capital
starts the next one (the groups say which part of a match is kept)."""
_WORD = linear.compile(r"[A-Za-z\x{C0}-\x{FF}']+|\d+")
"""A word: a run of Latin-1 letters and apostrophes, or of digits (letters and digits apart)."""


class _WordChars(dict[int, int]):
    """``str.translate`` table: what :data:`_WORD` reads stays, anything else becomes a space."""

    def __missing__(self, code: int) -> int:
        char = chr(code)
        value = (
            code
            if char.isdecimal() or char == "'" or "A" <= char <= "Z" or "a" <= char <= "z" or 0xC0 <= code <= 0xFF
            else 32
        )
        self[code] = value
        return value


_WORD_CHARS = _WordChars()


def _words_of(sentence: str) -> list[str]:
    """What :data:`_WORD` finds in ``sentence``, in order: the runs between other characters are
    split with no pattern, and only a run that mixes digits with letters is read by it (RE2's
    wrapper costs a few microseconds a match, and most sentences are all words)."""
    found: list[str] = []
    for run in sentence.translate(_WORD_CHARS).split():
        if run.isdecimal() or run.replace("'", "").isalpha() or not run.strip("'"):
            found.append(run)
        else:
            found += _WORD.findall(run)
    return found


_TIME = linear.compile(
    r"\b(yesterday|today|tonight|tomorrow|last|next|ago|since|until|week(end)?s?|months?|years?|"
    r"mon|tues|wednes|thurs|fri|satur|sun)(day)?\b|\b(january|february|march|april|may|june|july|august|"
    r"september|october|november|december|spring|summer|autumn|fall|winter|christmas|easter)\b",
    ignore_case=True,
)
_PLAN = linear.compile(
    r"\b(?:i'll|we'll|i will|we will|(?:i'm|we're|i am|we are) (?:going to|planning|planning to)|gonna|"
    r"plan(?:ning)?|book(?:ed)?|decided|signed up|propos(?:ed|ing))\b",
    ignore_case=True,
)
"""A plan, a booking, a decision or a proposal: "I'll ask him properly", "Owen proposed"."""
_PREFERENCE = linear.compile(
    r"\b(?:i|we)(?:'d| would| really| do| don't| didn't)? (?:need|want|prefer|hate|can't stand|rather|love|loved|"
    r"like|liked|enjoy|enjoyed)\b|\b\w+(?: now| really| still| also| always)? (?:needs|wants|prefers|hates|dislikes)\b",
    ignore_case=True,
)
"""A want, a need, a liking or a dislike in the speaker's own words ("I need a night out", "we'd
rather not", "I love that song": a sentence made only of pleasantries, "I love you", never gets
here), or someone's in the third person ("User now wants XML invoices", "Mum prefers trains")."""
_RELATION = linear.compile(
    r"\b(?:my|our)(?: \w+)? (?:mum|mom|mother|dad|father|parents?|grandma|granny|nan|grandpa|grandad|grandparents?|"
    r"sister|brother|siblings?|son|daughter|kids?|children|baby|wife|husband|partner|fianc[ée]e?|boyfriend|"
    r"girlfriend|aunt|uncle|cousin|niece|nephew|friends?|bestie|boss|manager|colleagues?|coworkers?|"
    r"neighbou?rs?|roommate|flatmate|landlord|teacher|doctor|therapist|dogs?|cats?|puppy|kitten|pets?)\b",
    ignore_case=True,
)
"""Someone in the speaker's life ("It's from my grandma", "my dog loves it"): a person (or a pet)
the speaker has is a fact about them, however few the other words."""
_REQUEST = linear.compile(
    r"\b(?:asked|asks|asking) (?:for|about|whether|if|to)\b|\b(?:requested|requests|reported|reports|complained|"
    r"complains)\b",
    ignore_case=True,
)
"""Someone asking for, reporting or complaining about something ("Ivo asked for paper invoices",
"Customer reported a double charge"): what they want or what went wrong, when the sentence names
it (:data:`REQUEST_OBJECT_WORDS`), not the conversation itself ("User asked for help")."""
REQUEST_OBJECT_WORDS = 2
"""Content words besides the verb, the speaker and words about the conversation that a request
must name."""
_REQUEST_VERBS = frozenset("asked asks asking requested requests reported reports complained complains".split())  # noqa: SIM905
_PAST_EVENT = linear.compile(
    r"\b(?:got|went|gone|sold|bought|won|lost|broke|broken|quit|had|began|begun|found|left|took|made|ran|"
    r"drove|flew|wrote|built|fell|met|paid|spent|gave|brought|caught|chose|ate|drank|saw|came|became|grew|"
    r"held|slept|woke|wore|sang|swam|rode|hurt|shut|stood|forgot|threw|tore|stole|[a-z]+[a-df-z]ed)\b"
)
"""A verb in the past tense, irregular or regular ("Sold the car", "Dad retired"): something
happened. Matched on lower-cased content words only, so pleasantries ("missed", "excited") and
the words of :data:`NOT_EVENTS` never count."""
_FIRST_PERSON = linear.compile(r"\b(i|i'm|i've|i'd|i'll|we|we're|we've|my|our|me|us)\b", ignore_case=True)


MIN_CONTENT_WORDS = 2
"""Content words (outside the pleasantry vocabulary) a sentence needs before it can be a fact."""

SUBSTANTIAL_CONTENT_WORDS = 5
"""A sentence with this many content words says something, whatever its shape."""

Verdict = Literal["memorable", "chatter"]


@dataclass(frozen=True)
class SentenceVerdict:
    index: int
    verdict: Verdict
    why: str


def _english(pattern: linear.Pattern, sentence: str) -> bool:
    r"""Whether a pattern of English words finds them in ``sentence``, bounded as Python's Unicode
    ``\b`` bounds them (:func:`linear.ascii_words`: not the ``u`` of "už")."""
    return pattern.search(linear.ascii_words(sentence)) is not None


def sentences(text: str) -> list[str]:
    """The sentences and dash- or semicolon-joined clauses of ``text``, stripped, non-empty."""
    parts, start = [], 0
    stop, paren, capital = (_SENTENCE_END.groupindex[g] for g in ("stop", "paren", "capital"))
    for end in _SENTENCE_END.finditer(text):
        cut, resume = end.start(), end.end()
        if end.start(stop) >= 0:
            cut = end.end(stop)  # the mark stays with its sentence
        elif end.start(paren) >= 0:
            cut, resume = end.end(paren), end.start(capital)
        parts.append(text[start:cut])
        start = resume
    parts.append(text[start:])
    return [part.strip() for part in parts if part.strip()]


def judge(text: str, classifier: ChatterClassifier, answering: str | None = None) -> list[SentenceVerdict]:
    """A verdict for every sentence of ``text``, in order. The text is read, and the turn it
    answers when there is one (``answering``: another speaker's turn just before it in the same
    conversation, :func:`~episodic.domain.policy.replied_turn`), never the route: the same turns
    get the same verdicts whichever route brings them.

    A reply to a question says what it is about by its place ("Fish only, no red meat" to "Do you
    eat meat?", "Waffles. He's a corgi mix" to "What's your dog's name?"): when ``answering`` asks
    about something (not "how are you?") and every sentence alone would be chatter, the first
    sentence that names anything and asks nothing itself is the answer, and memorable."""
    parts = sentences(text)
    verdicts = [_judge_sentence(i, sentence, classifier) for i, sentence in enumerate(parts)]
    if not memorable(verdicts):
        _read_together(parts, verdicts)
    if answering is None or memorable(verdicts) or not _asks_about_something(answering):
        return verdicts
    for i, sentence in enumerate(parts):
        if "?" not in sentence and _names_something(sentence):
            verdicts[i] = SentenceVerdict(i, "memorable", "answer")
            break
    return verdicts


def _read_together(parts: list[str], verdicts: list[SentenceVerdict]) -> None:
    """News told in bursts ("PASSED!!!!! Yesterday! One minor, for hesitating at a junction", "She
    is. Ex-army. She calls roundabouts 'the enemy'") is chatter sentence by sentence and a fact as a
    whole: when the English statements of a turn -- not its questions, not what it says to or about
    the listener ("Whatever gives you a bit of peace") -- hold :data:`SUBSTANTIAL_CONTENT_WORDS`
    content words between them, the one holding most is memorable, marked ``together``. English
    only: the pleasantry vocabulary is English, so another language's pleasantries would count as
    content ("Te amo. Cinco meses y ya")."""
    told = [
        (i, _words_of(_unshouted(sentence))) for i, sentence in enumerate(parts) if not _english(_ADDRESSED, sentence)
    ]
    if not any(ENGLISH_WORDS.intersection(w.lower() for w in words) for _, words in told):
        return
    counted = [(len(_content(words)), i) for i, words in told]
    if sum(count for count, _ in counted) >= SUBSTANTIAL_CONTENT_WORDS:
        _, most = max(counted, key=lambda entry: (entry[0], -entry[1]))
        verdicts[most] = SentenceVerdict(most, "memorable", "together")


def _unshouted(sentence: str) -> str:
    """Shouting is not naming: "I GOT THE JOB" reads as "I got the job"."""
    return sentence.capitalize() if sentence.isupper() else sentence


def _content(words: list[str]) -> list[str]:
    """Those of a sentence's ``words`` outside the pleasantry vocabulary that name no one addressed."""
    return [w for i, w in enumerate(words) if not _is_pleasantry(i, words) and not _is_vocative(i, words)]


def _asks_about_something(turn: str) -> bool:
    """Whether ``turn`` ends with a question that names something: "Do you eat meat?", not "How
    are you?" or "How was your weekend?", whose answers are small talk."""
    parts = sentences(turn)
    return bool(parts) and "?" in parts[-1] and _names_something(parts[-1])


def _names_something(sentence: str) -> bool:
    """Whether ``sentence`` holds a word outside the pleasantry vocabulary (a name after a greeting
    does not count)."""
    words = _words_of(sentence)
    return any(not _is_pleasantry(i, words) and not _is_vocative(i, words) for i in range(len(words)))


def memorable(verdicts: list[SentenceVerdict]) -> bool:
    return any(v.verdict == "memorable" for v in verdicts)


def _judge_sentence(index: int, sentence: str, classifier: ChatterClassifier) -> SentenceVerdict:
    sentence = _unshouted(sentence)
    words = _words_of(sentence)
    content = _content(words)
    if len(content) < MIN_CONTENT_WORDS and not any(w.isdigit() for w in words):
        if not content:
            return SentenceVerdict(index, "chatter", "pleasantry")
        short = _short_personal_fact(sentence, words)
        return (
            SentenceVerdict(index, "memorable", short)
            if short
            else SentenceVerdict(index, "chatter", "too_little_content")
        )
    marks = _fact_marks(sentence, words, content)
    if marks:
        return SentenceVerdict(index, "memorable", marks)
    if classifier.is_chatter(sentence):
        return SentenceVerdict(index, "chatter", "classifier")
    return SentenceVerdict(index, "memorable", "classifier")


def _fact_marks(sentence: str, words: list[str], content: list[str]) -> str:
    """The strongest sign that the sentence states a fact, or '' when it shows none."""
    if any(w.isdigit() for w in words):
        return "number"
    if disclosures(sentence):
        return "disclosure"
    if len(content) >= SUBSTANTIAL_CONTENT_WORDS:
        return "substantial"
    if _english(_TIME, sentence):
        return "time"
    if any(w[:1].isupper() and not w.isupper() and w in content for w in words[1:]):
        return "named_thing"
    if _english(_PLAN, sentence):
        return "plan"
    if _english(_PREFERENCE, sentence):
        return "preference"
    if _english(_RELATION, sentence):
        return "relation"
    if _english(_REQUEST, sentence) and len(_request_object(content)) >= REQUEST_OBJECT_WORDS:
        return "request"
    if _english(_FIRST_PERSON, sentence) and len(content) >= 3:
        return "first_person_statement"
    if _ongoing(sentence, content):
        return "ongoing"
    if _possessive_name(sentence):
        return "named_thing"
    if _past_event(sentence, content):
        return "event"
    return ""


def _ongoing(sentence: str, content: list[str]) -> bool:
    """What the speaker is doing (:func:`~episodic.domain.policy.ongoing.doing`) and, beside the
    verb, something it is about; not said to or about the listener ("Wishing you the best")."""
    verb = doing(linear.ascii_words(sentence))
    return verb is not None and not _english(_ADDRESSED, sentence) and any(w.lower() != verb for w in content)


def _request_object(content: list[str]) -> list[str]:
    """The content words of a request that name what it is about: not the verb, not a name (the
    one asking), not the conversation's own words."""
    return [w for w in content if w.lower() not in _REQUEST_VERBS | CONVERSATION_WORDS and not w[:1].isupper()]


_ADDRESSED = linear.compile(r"\?\W*$|\b(?:you|you've|you'll|you're|you'd|your|ya|u|ur)\b", ignore_case=True)
"""A question, or words to the listener: asking what happened ("Who won?") or answering their news
("you ran a MARATHON") says no new past event of the speaker's own."""


def _past_event(sentence: str, content: list[str]) -> bool:
    """A past-tense verb and, beside it, a word about the world rather than the conversation, in a
    sentence that is neither a question nor said about the listener."""
    if _english(_ADDRESSED, sentence):
        return False
    lowered = [w.lower() for w in content]
    verbs = [w for w in lowered if w not in NOT_EVENTS and _PAST_EVENT.fullmatch(w)]
    return bool(verbs) and any(w not in CONVERSATION_WORDS and w != verbs[0] for w in lowered)


_POSSESSIVE_OPENING = linear.compile(r"^\W*([A-Z\x{C0}-\x{DE}][A-Za-z\x{C0}-\x{FF}-]*)['\x{2019}]s\b")


def _possessive_name(sentence: str) -> bool:
    """A sentence that opens with a capitalised possessive names someone or something ("Dingle's
    even better", "Priya's moving to Leeds", with a straight or a curly apostrophe): a capital at
    the start is no sign of a name, but the possessive form of a word that is not a pronoun or a
    question word is."""
    opening = _POSSESSIVE_OPENING.match(sentence)
    return opening is not None and opening.group(1).lower() not in NOT_NAMES


def _short_personal_fact(sentence: str, words: list[str]) -> str:
    """Few words can still be a fact about the speaker: where they will be when ("I'm off that
    whole weekend"), what they want ("I need a night out"), a life event ("We're expecting!") or
    a sensitive disclosure ("I'm bipolar.", "I have diabetes."), which the sensitive rules
    classify rather than drop."""
    if _english(_FIRST_PERSON, sentence) and _english(_TIME, sentence):
        return "time"
    if _english(_PREFERENCE, sentence):
        return "preference"
    if _english(_RELATION, sentence):
        return "relation"
    if _english(_ADDRESSED, sentence):  # asking the listener, or about them, tells nothing new
        return ""
    if any(w.lower() in LIFE_EVENTS for w in words):
        return "event"
    return "disclosure" if disclosures(sentence) else ""


def _is_pleasantry(position: int, words: list[str]) -> bool:
    word = words[position].lower()
    if word in PLEASANTRY_WORDS:
        return True
    before = PLEASANTRY_AFTER.get(word)
    return before is not None and position > 0 and words[position - 1].lower() == before


def _is_vocative(position: int, words: list[str]) -> bool:
    """A capitalised word right after a greeting ("Hey Tom", "Thanks Priya") or alone ("Kez!!")
    names who is addressed, not a fact; a time or a past event alone ("Yesterday!", "PASSED!!") names
    no one."""
    if not words[position][:1].isupper():
        return False
    if len(words) == 1:
        lowered = words[0].lower()
        past = lowered not in NOT_EVENTS and _PAST_EVENT.fullmatch(lowered) is not None
        return not (_english(_TIME, lowered) or lowered in LIFE_EVENTS or past)
    return position > 0 and words[position - 1].lower() in GREETINGS
