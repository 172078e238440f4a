"""The wheels ``make layer`` asks pip for: Lambda's Python 3.13 runs on Amazon Linux 2023 (glibc
2.34), so both manylinux2014 wheels and glibc-2.28 ones are taken -- RE2 publishes only the latter
for Python 3.13, and asking for manylinux2014 alone finds no RE2 at all."""

from __future__ import annotations

from infra.layer import PLATFORM, platform_options


def test_given_lambdas_machine_then_pip_may_take_manylinux2014_and_glibc_2_28_wheels() -> None:
    assert platform_options("x86_64", "3.13") == (
        "--platform", "manylinux2014_x86_64", "--platform", "manylinux_2_28_x86_64",
        "--implementation", "cp", "--python-version", "3.13",
    )  # fmt: skip


def test_given_the_layer_then_it_is_built_for_arm64_python_3_13() -> None:
    platforms = [PLATFORM[i + 1] for i, option in enumerate(PLATFORM) if option == "--platform"]
    assert platforms == ["manylinux2014_aarch64", "manylinux_2_28_aarch64"]
    assert PLATFORM[PLATFORM.index("--python-version") + 1] == "3.13"
