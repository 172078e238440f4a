"""The embedders' per-tenant memory of questions' and names' vectors."""

from episodic.adapters.question_cache import QuestionCache


def test_forgetting_a_tenant_drops_only_what_is_kept_for_it():
    cache = QuestionCache(8)
    cache.put("acme", "Kalomiten Foods", [1.0])
    cache.put("acme", "refund delays", [2.0])
    cache.put("globex", "Kalomiten Foods", [3.0])
    cache.forget_tenant("acme")
    assert cache.get("acme", "Kalomiten Foods") is None and cache.get("acme", "refund delays") is None
    assert cache.get("globex", "Kalomiten Foods") == [3.0]
    cache.put("acme", "Kalomiten Foods", [4.0])  # kept again once asked again
    assert cache.get("acme", "Kalomiten Foods") == [4.0]
