"""The retention score (episodic.domain.forgetting.retention): 0-10 from access frequency (40%), tag weight (30%),
age (20%) and agent feedback (10%), the number the relevance-decay sweep compares with its
threshold (3.0 by default, after 30 idle days)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from episodic.application.settings import Settings
from episodic.domain.forgetting.retention import ACCESS_SATURATION, AGE_HALF_LIFE_DAYS, retention_score
from episodic.domain.model import Episode
from tests.support import fuzzing  # noqa: F401  (the shared hypothesis tiers: derandomized, no example database)

OCCURRED = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
UNIT = settings(max_examples=300, phases=tuple(Phase))  # pure arithmetic: shrinking costs nothing here


def _episode(**fields: object) -> Episode:
    """A stored episode with the defaults a fresh write gets: never accessed, importance 0.5,
    no feedback, occurred at ``OCCURRED``."""
    data: dict[str, object] = {
        "event_id": "01KAZ3Q7J9X2B8M4T6V0W1Y3C5",
        "tenant_id": "acme",
        "actor_id": "user-1",
        "event_type": "task_milestone",
        "occurred_at": OCCURRED,
        "recorded_at": OCCURRED,
        "summary": "Deployed release 4.2 to production",
        "source_refs": ["ci:run-77"],
        "source_trust": "tool_result",
        "policy_version": "test",
    }
    data.update(fields)
    return Episode.model_validate(data)


def _days(days: float) -> datetime:
    return OCCURRED + timedelta(days=days)


# ----------------------------------------------------------------------------- the design's numbers


def test_given_every_component_at_its_best_when_scored_then_the_score_is_exactly_ten():
    episode = _episode(access_count=ACCESS_SATURATION, importance=1.0, feedback_score=1.0)
    assert retention_score(episode, OCCURRED) == pytest.approx(10.0)


def test_given_every_component_at_its_worst_when_scored_then_the_score_is_exactly_zero():
    episode = _episode(access_count=0, importance=0.0, feedback_score=-1.0)
    assert retention_score(episode, _days(100 * 365)) == pytest.approx(0.0)


def test_given_a_fresh_default_episode_when_scored_at_once_then_only_tag_age_and_neutral_feedback_count():
    # 10 * (0.4*0 access + 0.3*0.5 importance + 0.2*1 age + 0.1*0.5 neutral feedback)
    assert retention_score(_episode(), OCCURRED) == pytest.approx(4.0)


def test_given_a_default_episode_never_recalled_when_idle_days_pass_then_it_reaches_the_decay_threshold_only_after():
    defaults = Settings()
    episode = _episode()
    at_idle_limit = retention_score(episode, _days(defaults.decay_idle_days))
    assert at_idle_limit == defaults.decay_threshold  # exactly 3.0: not *below* it yet
    assert retention_score(episode, _days(defaults.decay_idle_days + 1)) < defaults.decay_threshold


@pytest.mark.parametrize(
    ("component", "best", "worst", "points"),
    [
        ("access_count", {"access_count": ACCESS_SATURATION}, {"access_count": 0}, 4.0),
        ("importance", {"importance": 1.0}, {"importance": 0.0}, 3.0),
        ("feedback_score", {"feedback_score": 1.0}, {"feedback_score": -1.0}, 1.0),
    ],
)
def test_given_one_component_from_worst_to_best_when_scored_then_it_moves_the_score_by_its_weight(
    component, best, worst, points
):
    now = _days(10)
    assert retention_score(_episode(**best), now) - retention_score(_episode(**worst), now) == pytest.approx(points)


def test_given_an_episode_when_it_ages_then_the_age_component_halves_every_half_life():
    episode = _episode(importance=0.0, feedback_score=-1.0)  # only age left: 2.0 points at age 0
    assert retention_score(episode, OCCURRED) == pytest.approx(2.0)
    assert retention_score(episode, _days(AGE_HALF_LIFE_DAYS)) == pytest.approx(1.0)
    assert retention_score(episode, _days(2 * AGE_HALF_LIFE_DAYS)) == pytest.approx(0.5)
    assert retention_score(episode, _days(3 * AGE_HALF_LIFE_DAYS)) == pytest.approx(0.25)


def test_given_an_episode_when_a_single_hour_passes_then_the_score_already_decays():
    episode = _episode()
    assert retention_score(episode, OCCURRED + timedelta(hours=1)) < retention_score(episode, OCCURRED)


# ----------------------------------------------------------------------------- age edge cases


@pytest.mark.parametrize("ahead", [timedelta(seconds=1), timedelta(days=1), timedelta(days=3650)])
def test_given_an_occurrence_after_now_when_scored_then_age_counts_as_zero_not_as_a_bonus(ahead):
    episode = _episode()
    assert retention_score(episode, OCCURRED - ahead) == retention_score(episode, OCCURRED) == pytest.approx(4.0)


def test_given_a_now_in_another_timezone_when_scored_then_only_the_instant_matters():
    episode = _episode()
    same_instant = _days(30).astimezone(timezone(timedelta(hours=-7)))
    assert retention_score(episode, same_instant) == retention_score(episode, _days(30))


# ----------------------------------------------------------------------------- access frequency


def test_given_more_accesses_than_saturation_when_scored_then_access_stops_adding():
    now = _days(5)
    saturated = retention_score(_episode(access_count=ACCESS_SATURATION), now)
    assert retention_score(_episode(access_count=10 * ACCESS_SATURATION), now) == saturated
    assert retention_score(_episode(access_count=ACCESS_SATURATION - 1), now) < saturated


def test_given_accesses_when_scored_then_the_first_ones_count_more_than_later_ones():
    now = _days(5)
    score = [retention_score(_episode(access_count=n), now) for n in (0, 1, 2, 10, 11)]
    assert score[1] - score[0] > score[2] - score[1] > score[4] - score[3] > 0


# ----------------------------------------------------------------------------- tag weights


def test_given_a_tag_with_a_configured_weight_when_scored_then_the_weight_replaces_importance():
    episode = _episode(importance=0.1, tags=["billing"])
    weighted = retention_score(episode, OCCURRED, {"billing": 0.9})
    assert weighted - retention_score(episode, OCCURRED) == pytest.approx(10 * 0.3 * (0.9 - 0.1))
    assert weighted == retention_score(_episode(importance=0.9, tags=["billing"]), OCCURRED)


def test_given_a_matching_weight_below_the_importance_when_scored_then_the_tag_weight_still_wins():
    episode = _episode(importance=1.0, tags=["chatter"])
    assert retention_score(episode, OCCURRED, {"chatter": 0.2}) == retention_score(_episode(importance=0.2), OCCURRED)


def test_given_a_zero_tag_weight_when_scored_then_it_counts_as_a_match_not_as_missing():
    episode = _episode(importance=1.0, tags=["noise"])
    assert retention_score(episode, OCCURRED, {"noise": 0.0}) == retention_score(_episode(importance=0.0), OCCURRED)


def test_given_several_weighted_tags_when_scored_then_the_highest_weight_counts():
    episode = _episode(importance=0.0, tags=["chatter", "billing", "unweighted"])
    weights = {"chatter": 0.1, "billing": 0.8, "legal": 1.0}
    assert retention_score(episode, OCCURRED, weights) == retention_score(_episode(importance=0.8), OCCURRED)


@pytest.mark.parametrize("weights", [None, {}, {"legal": 1.0, "chatter": 0.0}])
def test_given_no_weight_for_any_of_its_tags_when_scored_then_importance_counts(weights):
    episode = _episode(importance=0.7, tags=["billing"])
    assert retention_score(episode, OCCURRED, weights) == retention_score(_episode(importance=0.7), OCCURRED)


def test_given_a_tag_written_in_capitals_when_scored_then_the_lower_case_weight_applies():
    episode = _episode(importance=0.0, tags=["Billing"])  # the model stores tags lower-cased
    assert retention_score(episode, OCCURRED, {"billing": 1.0}) == retention_score(_episode(importance=1.0), OCCURRED)


@pytest.mark.parametrize(("weight", "as_if"), [(5.0, 1.0), (math.inf, 1.0), (-3.0, 0.0), (-math.inf, 0.0)])
def test_given_a_tag_weight_outside_zero_to_one_when_scored_then_it_is_clamped(weight, as_if):
    episode = _episode(tags=["billing"])
    assert retention_score(episode, _days(3), {"billing": weight}) == retention_score(
        episode, _days(3), {"billing": as_if}
    )


def test_given_a_nan_tag_weight_when_scored_then_it_counts_as_no_weight():
    episode = _episode(tags=["billing"])
    score = retention_score(episode, OCCURRED, {"billing": math.nan})
    assert score == retention_score(episode, OCCURRED)  # importance decides, as with no weight


def test_given_a_non_finite_tag_weight_in_the_environment_when_settings_load_then_they_are_refused():
    for raw in ("billing=nan", "billing=inf"):
        with pytest.raises(ValidationError):
            Settings.from_env({"EPISODIC_TAG_WEIGHTS": raw})


def test_given_tag_weights_with_capitals_when_settings_are_built_then_they_match_lower_case_tags():
    assert Settings(tag_weights={" Billing ": 0.5}).tag_weights == pytest.approx({"billing": 0.5})


# ----------------------------------------------------------------------------- feedback


def test_given_helpful_rather_than_unhelpful_feedback_when_scored_then_it_is_worth_one_point_around_neutral():
    now = _days(12)
    helpful = retention_score(_episode(feedback_score=1.0), now)
    neutral = retention_score(_episode(feedback_score=0.0), now)
    unhelpful = retention_score(_episode(feedback_score=-1.0), now)
    assert helpful - neutral == pytest.approx(0.5)
    assert neutral - unhelpful == pytest.approx(0.5)


def test_given_only_unhelpful_feedback_when_an_unaccessed_episode_is_scored_then_it_falls_below_the_threshold_sooner():
    threshold = Settings().decay_threshold
    neutral, disliked = _episode(), _episode(feedback_score=-1.0)
    assert retention_score(neutral, _days(20)) >= threshold
    assert retention_score(disliked, _days(20)) < threshold


# ----------------------------------------------------------------------------- properties

episodes = st.builds(
    _episode,
    access_count=st.integers(min_value=0, max_value=10**9),
    importance=st.floats(min_value=0.0, max_value=1.0),
    feedback_score=st.floats(min_value=-1.0, max_value=1.0),
    tags=st.lists(st.sampled_from(["billing", "legal", "chatter", "ops"]), max_size=4),
)
ages = st.floats(min_value=-3650.0, max_value=365_000.0)
tag_weights = st.none() | st.dictionaries(
    st.sampled_from(["billing", "legal", "chatter", "other"]), st.floats(allow_nan=False), max_size=4
)


@UNIT
@given(episode=episodes, age_days=ages, weights=tag_weights)
def test_given_any_episode_age_and_finite_weights_when_scored_then_the_score_is_within_zero_to_ten_at_four_places(
    episode, age_days, weights
):
    score = retention_score(episode, _days(age_days), weights)
    assert 0.0 <= score <= 10.0
    assert round(score, 4) == score


@UNIT
@given(episode=episodes, age_days=st.floats(min_value=0.0, max_value=36_500.0), later=st.floats(0.0, 36_500.0))
def test_given_any_episode_when_time_passes_then_its_score_never_rises(episode, age_days, later):
    assert retention_score(episode, _days(age_days + later)) <= retention_score(episode, _days(age_days))


@UNIT
@given(
    episode=episodes,
    age_days=ages,
    field=st.sampled_from(["access_count", "importance", "feedback_score"]),
    data=st.data(),
)
def test_given_any_episode_when_one_component_improves_then_its_score_never_falls(episode, age_days, field, data):
    current = getattr(episode, field)
    better = data.draw(
        st.integers(min_value=current, max_value=10**9)
        if field == "access_count"
        else st.floats(min_value=current, max_value=1.0),
        label="better",
    )
    improved = episode.model_copy(update={field: better})
    now = _days(age_days)
    assert retention_score(improved, now) >= retention_score(episode, now)
