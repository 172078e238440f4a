"""`episodic demo` end to end: the scripted tour over real HTTP with the real model."""

from pathlib import Path

from episodic.entrypoints.cli.main import main


def test_given_a_fresh_data_dir_when_the_demo_runs_then_every_step_shows_its_outcome(tmp_path, capsys):
    assert main(["demo", "--data-dir", str(tmp_path / "demo")]) == 0
    out = capsys.readouterr().out
    assert "HTTP 201" in out and '"decision": "allow"' in out
    assert "HTTP 403" in out and "not_memorable" in out
    sent = [line for line in out.splitlines() if line.strip().startswith(("agent ", "operator "))]
    assert any(line.split()[1:3] == ["POST", "/v1/episodes"] for line in sent)  # the requests are shown too
    assert "[REDACTED:payment_card]" in out
    assert all("4111" not in line for line in out.splitlines() if line not in sent)  # only what the agent sent
    assert "HTTP 202" in out and "review status denied" in out and "episode now active" in out
    assert "Past event, not current instruction." in out
    assert "old episode status: superseded" in out
    assert "GET after erasure -> HTTP 404" in out
    assert "episode.erased" in out


def test_given_no_data_dir_when_the_demo_runs_then_its_temporary_folder_is_removed(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    used = Path(out.splitlines()[0].split("data dir ", 1)[1])
    assert "removed the temporary data dir" in out and not used.exists()


def test_given_a_non_empty_data_dir_when_the_demo_runs_then_it_refuses(tmp_path, capsys):
    (tmp_path / "keep.txt").write_text("mine")
    assert main(["demo", "--data-dir", str(tmp_path)]) == 2
    assert "not empty" in capsys.readouterr().out
