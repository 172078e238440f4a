"""`episodic bench` runs end to end at CI size and writes its report (figures are not asserted)."""

from episodic.entrypoints.cli.main import main


def test_given_tiny_sizes_when_the_benchmark_runs_then_every_section_is_reported(tmp_path, capsys):
    out = tmp_path / "BENCHMARKS.md"
    argv = ["--writes", "100", "--sizes", "2000", "--api-requests", "3", "--api-tenant", "100", "--conversations",
            "cv07", "--pathological-shapes", "2", "--health-writes", "1", "--load-seconds", "5", "--load-seed", "100",
            "--load-clients", "4", "--latency-questions", "5", "--out", str(out)]  # fmt: skip
    assert main(["bench", *argv]) == 0
    report = out.read_text()
    sections = ("Write throughput", "Scoped recall latency", "API latency", "Conversation memory", "cold import",
                "Query embedding under concurrency", "pathological input", "/v1/health` while",
                "Recall against the model, query by query")  # fmt: skip
    for section in (*sections, "Peak memory"):
        assert section in report
    assert "2,000" in report and "functions.api" in report
