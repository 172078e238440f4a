"""``episodic tokens``: list, create and rotate the local server's bearer tokens."""

from __future__ import annotations

import stat

from episodic.entrypoints.cli.main import main
from episodic.entrypoints.server.tokens import load_tokens


def test_given_a_data_dir_when_tokens_are_created_listed_and_rotated_then_the_file_follows(tmp_path, capsys):
    data = str(tmp_path / "data")
    assert main(["tokens", "create", "--tenant", "acme", "--role", "operator", "--data-dir", data]) == 0
    created = capsys.readouterr().out.strip()
    assert len(created) >= 16
    assert main(["tokens", "list", "--data-dir", data]) == 0
    assert capsys.readouterr().out.split() == ["acme", "operator", created, "tenant-wide"]

    assert main(["tokens", "rotate", created, "--data-dir", data]) == 0
    rotated = capsys.readouterr().out.strip()
    book = load_tokens(tmp_path / "data", environ={})
    assert set(book.tokens) == {rotated} and book.tokens[rotated].tenant_id == "acme"
    assert stat.S_IMODE((tmp_path / "data" / "tokens.json").stat().st_mode) == 0o600


def test_given_bad_input_when_managing_tokens_then_it_says_why_without_echoing_a_token(tmp_path, capsys):
    data = str(tmp_path / "data")
    assert main(["tokens", "create", "--tenant", "not a tenant", "--data-dir", data]) == 2
    assert "tenant 'not a tenant' is not a valid id" in capsys.readouterr().err
    assert main(["tokens", "rotate", "secret-value-not-known-here", "--data-dir", data]) == 2
    err = capsys.readouterr().err
    assert "that token is not in" in err and "secret-value-not-known-here" not in err
    assert main(["tokens", "--data-dir", data]) == 0 and "no tokens yet" in capsys.readouterr().out


def test_given_actors_when_an_agent_token_is_created_then_it_is_bound_to_them_and_listed_so(tmp_path, capsys):
    data = str(tmp_path / "data")
    assert main(["tokens", "create", "--tenant", "acme", "--actor", "sam", "--actor", "bot-1", "--data-dir", data]) == 0
    created = capsys.readouterr().out.strip()
    assert main(["tokens", "list", "--data-dir", data]) == 0
    assert capsys.readouterr().out.split() == ["acme", "agent", created, "actors:", "sam,bot-1"]
    caller = load_tokens(tmp_path / "data", environ={}).tokens[created]
    assert caller.actors == ("sam", "bot-1") and caller.covers("sam") and not caller.covers("victim")


def test_given_an_operator_or_a_bad_actor_when_binding_a_token_then_it_is_refused_with_the_reason(tmp_path, capsys):
    data = str(tmp_path / "data")
    assert main(["tokens", "create", "--role", "operator", "--actor", "sam", "--data-dir", data]) == 2
    assert "only agent tokens are bound to actors" in capsys.readouterr().err
    assert main(["tokens", "create", "--actor", "not an id", "--data-dir", data]) == 2
    assert "the actors must be 1 to 50 valid ids" in capsys.readouterr().err
    assert not (tmp_path / "data" / "tokens.json").exists()


def test_given_the_random_source_when_a_token_would_start_with_a_dash_then_another_is_drawn(monkeypatch):
    from episodic.entrypoints.server import tokens

    draws = iter(["-looks-like-an-option", "a-usable-argument"])
    monkeypatch.setattr(tokens.secrets, "token_urlsafe", lambda size: next(draws))
    assert tokens.new_token() == "a-usable-argument"


def test_given_a_token_file_with_a_dash_token_when_rotated_after_a_double_dash_then_it_is_replaced(tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    (data / "tokens.json").write_text('{"-older-token-from-before": {"tenantId": "acme", "role": "agent"}}')
    assert main(["tokens", "--data-dir", str(data), "rotate", "--", "-older-token-from-before"]) == 0
    rotated = capsys.readouterr().out.strip()
    assert set(load_tokens(data, environ={}).tokens) == {rotated} and not rotated.startswith("-")
