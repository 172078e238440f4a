"""Every subcommand explains itself: a description, and each option's default."""

from __future__ import annotations

import pytest

from episodic.entrypoints.cli.main import HANDLERS, main


@pytest.mark.parametrize("command", sorted(HANDLERS))
def test_given_a_subcommand_when_asked_for_help_then_it_describes_itself_and_its_defaults(command, capsys):
    with pytest.raises(SystemExit) as done:
        main([*command.split(), "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    description = out.split("\n\n")[1]
    assert description[:1].isupper() and description.rstrip().endswith(".")
    assert "(default: None)" not in out  # an unset option says what applies instead


def test_given_options_with_defaults_when_helped_then_the_defaults_are_shown(capsys):
    with pytest.raises(SystemExit):
        main(["mcp", "--help"])
    out = capsys.readouterr().out
    assert "(default: 8766)" in out and "(default: 127.0.0.1)" in out
