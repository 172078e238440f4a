"""Several timeline pages read at once (``EpisodeStore.timelines``, what recall reads the turns
around its items with) are the first pages of the same queries read one by one, in each query's
own order, on every backend; and each page keeps its own scope, down to the privacy rule."""

from __future__ import annotations

from datetime import timedelta

from episodic.application.ports import Scope, TimelineQuery
from episodic.domain.model import EventType, PrivacyClass
from tests.support.factories import AGENT, TURNS_START, remember_turn


def test_given_several_queries_when_read_at_once_then_each_page_is_the_one_read_alone(service, clock):
    writes = service.writes
    for minute, (speaker, words) in enumerate(
        [("ana", "I moved to Porto in May for the new bakery job"), ("ben", "I started rowing at the club on Tuesdays"),
         ("ana", "The bakery opens at six, so I get up at five"), ("ben", "I adopted a dog called Rufus last week"),
         ("ana", "My sister Lia visits me in Porto in August"), ("ben", "Rufus is a beagle and he is two years old")]
    ):  # fmt: skip
        remember_turn(writes, words, minute * 5, actorId=speaker)
    remember_turn(writes, "I am saving up for a flat of my own in Porto", 40, actorId="ana", privacyClass="private")
    now = clock.now()
    everyone = (PrivacyClass.PUBLIC, PrivacyClass.INTERNAL)

    def scope(**narrowed) -> Scope:
        return Scope(tenant_id=AGENT.tenant_id, now=now, privacy_classes=everyone, **narrowed)

    queries = [
        TimelineQuery(scope=scope(actor_id="ana"), limit=200, newest_first=False),
        TimelineQuery(scope=scope(actor_id="ben", event_types=(EventType.CONVERSATION_TURN,)), limit=2),
        TimelineQuery(scope=scope(occurred_after=TURNS_START + timedelta(minutes=9)), limit=3, newest_first=False),
        TimelineQuery(scope=scope(actor_id="nobody"), limit=5),
        TimelineQuery(scope=Scope(tenant_id="another-tenant", now=now), limit=50),
    ]
    pages = service.deps.episodes.timelines(queries)
    alone = [service.deps.episodes.timeline(query)[0] for query in queries]
    assert [[e.event_id for e in page] for page in pages] == [[e.event_id for e in page] for page in alone]
    assert [len(page) for page in pages] == [3, 2, 3, 0, 0]  # ana's private turn is not in her page
    assert [e.summary for e in pages[1]] == [
        "Rufus is a beagle and he is two years old",
        "I adopted a dog called Rufus last week",
    ]
    assert service.deps.episodes.timelines([]) == []
