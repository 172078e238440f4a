"""The embedders' per-tenant memory of questions' and names' vectors."""

from episodic.adapters.question_cache import QuestionCache


def test_forgetting_a_tenant_drops_only_what_is_kept_for_it():
    cache = QuestionCache(8)
    acme, acme_other, globex, again = object(), object(), object(), object()  # stand-ins for vectors
    cache.put("acme", "Kalomiten Foods", acme)
    cache.put("acme", "refund delays", acme_other)
    cache.put("globex", "Kalomiten Foods", globex)
    cache.forget_tenant("acme")
    assert cache.get("acme", "Kalomiten Foods") is None and cache.get("acme", "refund delays") is None
    assert cache.get("globex", "Kalomiten Foods") is globex
    cache.put("acme", "Kalomiten Foods", again)  # kept again once asked again
    assert cache.get("acme", "Kalomiten Foods") is again
