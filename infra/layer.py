"""Build the core layer's dependencies for Lambda without Docker: ``make layer``.

pip fetches wheels for Lambda's platform -- CPython 3.13 on arm64, manylinux2014 -- with
``--only-binary=:all:``, so nothing is compiled on this machine and the result does not depend
on it. The packages are the project's runtime dependencies plus the ``aws`` extra (read from
pyproject.toml, so there is one list), less boto3, which the Lambda runtime provides. The
``episodic`` source itself is added by the CDK asset at every synth, so it is never stale.

``build/layer/.complete`` is written last; the CDK app uses the build only when it exists.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib

from infra.config import LAYER_BUILD, LAYER_READY, ROOT

IN_RUNTIME = frozenset({"boto3", "botocore", "s3transfer"})  # provided by Lambda's Python runtime
# The layer comes first on sys.path, so nothing in it may break the runtime's botocore.
BOTOCORE_COMPATIBLE = ("python-dateutil>=2.1,<3", "jmespath>=0.7.1,<2", "urllib3>=1.25.4,<3")
PLATFORM = ("--platform", "manylinux2014_aarch64", "--implementation", "cp", "--python-version", "3.13")


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def requirements() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["aws"]]
    return sorted({r for r in wanted if _name(r) not in IN_RUNTIME}, key=_name)


def main() -> None:
    shutil.rmtree(LAYER_BUILD, ignore_errors=True)
    target = LAYER_BUILD / "python"
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-compile",
        "--only-binary=:all:",
        *PLATFORM,
        "--target",
        str(target),
        *requirements(),
        *BOTOCORE_COMPATIBLE,
    ]
    print("+", " ".join(command))
    subprocess.run(command, check=True)
    leaked = sorted(p.name for p in target.iterdir() if p.name in IN_RUNTIME)
    if leaked:
        raise SystemExit(f"a dependency pulled in {leaked}, which the runtime provides; pin it out first")
    LAYER_READY.write_text("built by `make layer`\n")
    size = sum(f.stat().st_size for f in target.rglob("*") if f.is_file())
    print(f"layer dependencies in {target}: {size / 2**20:.0f} MiB unzipped (Lambda allows 250 MiB in all)")


if __name__ == "__main__":
    main()
