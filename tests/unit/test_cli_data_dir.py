"""Maintenance commands name the data dir they use and never create one: run from
the wrong folder, they would otherwise summarise, forget or re-embed an empty new store."""

from __future__ import annotations

import pytest

from episodic.adapters.sqlite.store import SqliteStore
from episodic.entrypoints.cli.main import main


@pytest.mark.parametrize("command", ["summarize", "forget", "reembed"])
def test_given_no_data_dir_when_a_maintenance_command_runs_then_it_refuses_and_creates_nothing(
    tmp_path, capsys, command
):
    missing = tmp_path / "nowhere"
    with pytest.raises(SystemExit) as refused:
        main([command, "--data-dir", str(missing)])
    assert refused.value.code == 2
    assert f"no data dir at {missing}" in capsys.readouterr().err
    assert not missing.exists()


def test_given_an_existing_data_dir_when_forgetting_then_it_says_which_one(tmp_path, capsys):
    SqliteStore(tmp_path / "episodic.db").close()
    assert main(["forget", "--dry-run", "--data-dir", str(tmp_path)]) == 0
    assert f"data dir: {tmp_path.resolve()}" in capsys.readouterr().err
