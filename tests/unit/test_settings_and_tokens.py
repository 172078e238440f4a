import json

import pytest
from pydantic import ValidationError

from episodic.application.settings import Settings
from episodic.domain.model import Role
from episodic.entrypoints.server.tokens import load_tokens, parse_tokens


def test_given_episodic_variables_when_settings_are_read_then_they_are_typed_and_parsed():
    settings = Settings.from_env(
        {
            "EPISODIC_HALF_LIFE_DAYS": "14",
            "EPISODIC_TAG_WEIGHTS": "VIP=0.9, billing=0.6",
            "EPISODIC_WRITES_DISABLED": "1",
        }
    )
    assert settings.half_life_days == pytest.approx(14.0) and settings.writes_disabled is True
    assert settings.tag_weights == pytest.approx({"vip": 0.9, "billing": 0.6})
    assert settings.ranking_weights().half_life_days == pytest.approx(14.0)


def test_given_a_bad_setting_when_read_then_a_validation_error_names_it():
    with pytest.raises(ValidationError, match="review_timeout_days"):
        Settings.from_env({"EPISODIC_REVIEW_TIMEOUT_DAYS": "-1"})


def test_given_a_token_spec_when_parsed_then_each_token_maps_to_tenant_and_role():
    tokens = parse_tokens("aaaaaaaaaaaaaaaa1=acme:agent, bbbbbbbbbbbbbbbb2=acme:operator")
    assert tokens["aaaaaaaaaaaaaaaa1"].tenant_id == "acme" and tokens["bbbbbbbbbbbbbbbb2"].role is Role.OPERATOR
    assert "aaaaaa" not in tokens["aaaaaaaaaaaaaaaa1"].principal_id  # the audit never holds the token


def test_given_actors_in_a_token_spec_when_parsed_then_the_agent_is_bound_to_them():
    tokens = parse_tokens("aaaaaaaaaaaaaaaa1=acme:agent:sam+user:42, bbbbbbbbbbbbbbbb2=acme:agent")
    assert tokens["aaaaaaaaaaaaaaaa1"].actors == ("sam", "user:42")
    assert tokens["bbbbbbbbbbbbbbbb2"].actors is None  # tenant-wide


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        ("aaaaaaaaaaaaaaaa1=acme:operator:sam", "entry 1: only agent tokens are bound to actors"),
        ("aaaaaaaaaaaaaaaa1=acme:agent:sam+not ok", "entry 1: the actors must be 1 to 50 valid ids"),
        ("abc=demo:agent", "entry 1: the token has 3 characters; tokens need at least 16"),
        ("aaaaaaaaaaaaaaaa1=acme", "entry 1: no ':' between tenant and role"),
        ("aaaaaaaaaaaaaaaa1=acme:agent,bbbbbbbbbbbbbbbbbb2=acme:root", "entry 2: role 'root' is not one of"),
        ("aaaaaaaaaaaaaaaa1=acme#1:agent", "entry 1: tenant 'acme#1' is not a valid id"),
        ("aaaaaaaaaaaaaaaa1", "entry 1: no '='"),
        (",", "holds no token"),
    ],
)
def test_given_a_malformed_token_spec_when_parsed_then_the_real_reason_is_given_without_the_token(spec, reason):
    with pytest.raises(ValueError, match=reason) as refused:
        parse_tokens(spec)
    for token in ("abc", "aaaaaaaaaaaaaaaa1", "bbbbbbbbbbbbbbbbbb2"):
        assert token not in str(refused.value).replace("'", " ").split()


def test_given_no_tokens_when_loaded_then_a_private_file_with_an_agent_and_an_operator_is_created(tmp_path):
    book = load_tokens(tmp_path, environ={})
    assert book.created
    raw = json.loads((tmp_path / "tokens.json").read_text())
    assert sorted(v["role"] for v in raw.values()) == ["agent", "operator"]
    assert (tmp_path / "tokens.json").stat().st_mode & 0o077 == 0
    again = load_tokens(tmp_path, environ={})
    assert not again.created and set(again.tokens) == set(book.tokens)
    token = next(iter(book.tokens))
    assert again.authenticate(token) is not None and again.authenticate(token + "x") is None
