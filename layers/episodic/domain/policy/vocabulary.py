"""The English words the sentence judge (:mod:`.memorability`) reads a sentence by: what pleasantries
are made of, past forms that are no event, words about the conversation itself, life events, words
that take a possessive without naming anyone, greetings, and the function words that tell English.
"""

from __future__ import annotations

NOT_EVENTS = frozenset(
    """
    tired bored blessed obsessed pleased thrilled relieved delighted stoked chuffed amazed impressed
    shocked confused annoyed interested worried scared stressed surprised touched honoured honored cursed
    thanked greeted waved apologized apologised acknowledged replied responded answered asked sent
    exchanged consisted contained expressed opened checked popped waited signed chatted laughed joked
    smiled texted messaged wished complimented congratulated
    """.split()  # noqa: SIM905 (a word list reads better as text)
)
"""Past forms that say how someone feels ("thrilled") or narrate the conversation itself ("User
thanked the assistant", "Exchanged pleasantries"), not something that happened in a life."""

CONVERSATION_WORDS = frozenset(
    """
    user users customer customers assistant agent lead greeting greetings pleasantries response reply
    replies message messages chat conversation session emoji thumbs requests request tasks start
    inconvenience everyone everybody someone nothing
    """.split()  # noqa: SIM905 (a word list reads better as text)
)
"""Words of a sentence about the conversation rather than about the world: a past verb among
only these ("Customer opened the chat") is no event."""

LIFE_EVENTS = frozenset(
    """
    engaged married pregnant expecting promoted retired graduated divorced separated hired fired
    adopted born died widowed evicted
    """.split()  # noqa: SIM905 (a word list reads better as text)
)
"""Words that are a life event on their own ("We're expecting!", "I'm engaged!")."""

PLEASANTRY_WORDS = frozenset(
    """
    hi hey hello hiya yo howdy heya morning evening afternoon night goodnight gn gm bye goodbye cya
    later soon talk ttyl xx x xo xoxo thanks thank thx ty cheers appreciate appreciated welcome np
    problem ok okay k kk sure yes yeah yep yup ya no nope nah right alright fine cool nice great good
    awesome amazing lovely wonderful fantastic brilliant perfect sweet wow omg oh ah aw aww ooh oof ugh
    hmm haha hahaha lol lmao rofl hehe ha yay woo woohoo sorry miss missed long time see hear how what
    hows whats how's what's going up new doing been you your u ur doin are is it was all well too so
    very really much just totally absolutely definitely indeed same love glad happy sounds sound
    like hope day weekend week care take have a the an and to of for with that this there here i me my
    we our it its in on at be do did does can could would will that's it's there's i'm you're we're
    they're he's she's don't can't won't didn't isn't wasn't i'll you'll we'll let's he she they them
    him her his their anyway honestly seriously literally sending strength hugs proud crying cry
    laughing dying dead mad crazy insane iconic legend bless poor god gosh jeez fair true deal luck
    congrats congratulations jealous envious relief please rush worries worry stop typical ideas idea
    update news tell told say said know think guess mean feel feeling keep let go going off back
    out about then now still ever never again more wait enjoy fun funny cute exciting excited tired busy
    whole bit lot lots some any thing things whatever yikes eek hooray bravo fingers crossed
    """.split()  # noqa: SIM905 (a word list reads better as text)
)
"""Words a pleasantry is made of; a sentence made only of these (and names) says nothing."""

PLEASANTRY_AFTER = {"course": "of"}
"""Words that are a pleasantry only after another ("of course"), not alone ("the course")."""

ENGLISH_WORDS = frozenset(
    "the and of to for at on is it she they my we our about with from that this i but has have".split()  # noqa: SIM905
)
"""English function words that Spanish and German do not write: a turn with none is not read as English."""

NOT_NAMES = frozenset(
    """
    who where when why which what how here there this that it he she one let everyone everybody
    someone somebody anyone anybody nobody mine yours
    """.split()  # noqa: SIM905 (a word list reads better as text)
)
"""Words that take a possessive 's at the start of a sentence without naming anyone ("Who's in?");
"Today's" and the like never get here: a time is a mark of its own, checked first."""

GREETINGS = frozenset(["hi", "hey", "hello", "hiya", "heya", "morning", "evening", "night", "thanks", "thank"])
