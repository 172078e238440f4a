"""`episodic summarize`, `forget --dry-run`/`forget` and `reembed` as a user runs them."""

from datetime import UTC, datetime, timedelta

from episodic.application.settings import Settings
from episodic.bootstrap.local import build_local_service
from episodic.entrypoints.cli.main import main
from tests.support.doubles import FixedClock
from tests.support.factories import AGENT, proposal


def test_given_a_data_dir_when_maintenance_commands_run_then_they_report_and_act(tmp_path, minilm, capsys, monkeypatch):
    monkeypatch.setenv("EPISODIC_EMBEDDER", "minilm")  # the model the data dir was written with
    data = tmp_path / "data"
    now = datetime.now(UTC)
    old = build_local_service(Settings(data_dir=data), embedder=minilm, clock=FixedClock(now - timedelta(days=60)))
    stale = old.writes.remember(AGENT, proposal(summary="Vending machine on floor 2 was restocked", importance=0.05,
                                         occurredAt=(now - timedelta(days=60)).isoformat()))  # fmt: skip
    old.close()
    fresh = build_local_service(Settings(data_dir=data), embedder=minilm, clock=FixedClock(now))
    for n in range(6):
        backup = proposal(summary=f"Backup job {n} copied {n + 3} GB to the vault", actorId="backup-bot",
                          occurredAt=(now - timedelta(hours=n + 1)).isoformat())  # fmt: skip
        fresh.writes.remember(AGENT, backup)
    fresh.close()

    assert main(["forget", "--dry-run", "--data-dir", str(data)]) == 0
    out = capsys.readouterr().out
    assert "would archive 1 of 7 episode(s)" in out and str(stale.event_id) in out
    assert main(["forget", "--data-dir", str(data)]) == 0
    assert "archived 1 of 7 episode(s)" in capsys.readouterr().out
    assert main(["summarize", "--data-dir", str(data)]) == 0
    out = capsys.readouterr().out
    assert "1 actor(s) summarised" in out
    first = [cell.strip() for cell in row(out, "backup-bot")]
    assert first[:4] == ["acme", "backup-bot", "6", "allow"]
    assert main(["summarize", "--data-dir", str(data)]) == 0  # run again: nothing new, no second digest
    again = [cell.strip() for cell in row(capsys.readouterr().out, "backup-bot")]
    assert again == [*first[:3], "kept", first[4]]
    assert main(["reembed", "--data-dir", str(data)]) == 0
    assert "done: 0 episode(s) re-embedded" in capsys.readouterr().out


def row(table: str, key: str) -> list[str]:
    """The cells of the table row that holds ``key`` (rich draws cells between │ bars)."""
    line = next(line for line in table.splitlines() if key in line)
    return [cell for cell in line.strip("│ ").split("│")]
