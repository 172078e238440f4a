"""``episodic --version`` names the package and the write policy its decisions are stamped with."""

import pytest

from episodic.domain.policy import POLICY_VERSION
from episodic.entrypoints.cli.main import main


def test_given_the_version_flag_when_run_then_package_and_policy_versions_are_printed(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("episodic ") and f"(policy {POLICY_VERSION})" in out
