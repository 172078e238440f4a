"""`episodic bench` runs end to end at CI size and writes its report (figures are not asserted)."""

from episodic.cli import main


def test_given_tiny_sizes_when_the_benchmark_runs_then_every_section_is_reported(tmp_path, capsys):
    out = tmp_path / "BENCHMARKS.md"
    assert main(["bench", "--writes", "100", "--sizes", "2000", "--api-requests", "3", "--out", str(out)]) == 0
    report = out.read_text()
    for section in ("Write throughput", "Scoped recall latency", "API latency", "cold import", "Peak memory"):
        assert section in report
    assert "2,000" in report and "functions.api" in report
