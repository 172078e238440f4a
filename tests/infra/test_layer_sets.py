"""``make layer``'s dependency sets: the service's functions get the core's
dependencies without the SDK's httpx, the authorizer's PyJWT/cryptography, or opensearch-py 3's
unused protobuf and gRPC; the authorizer gets only what it imports."""

from __future__ import annotations

from pathlib import Path

from infra.layer import AUTH, PRUNED, _name, prune, requirements, strip


def test_given_the_project_when_the_core_set_is_listed_then_only_what_the_handlers_import_is_in_it():
    names = {_name(r) for r in requirements()}
    assert {"pydantic", "aws-lambda-powertools", "numpy", "bm25s", "pystemmer", "opensearch-py"} <= names
    assert not names & {"httpx", "pyjwt", "boto3", "botocore", "cryptography"}
    assert {_name(r) for r in AUTH} == {"pyjwt", "aws-lambda-powertools"}


def installed(target: Path, dist: str, files: list[str]) -> None:
    """A distribution as pip lays it out: its files and a dist-info RECORD that lists them."""
    info = target / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    for name in files:
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        (target / name).write_text("x")
    (info / "RECORD").write_text("".join(f"{name},sha256=x,1\n" for name in files))


def test_given_installed_distributions_when_pruned_then_exactly_the_unused_ones_go(tmp_path):
    installed(tmp_path, "grpcio", ["grpc/__init__.py", "grpc/_cython/cygrpc.so"])
    installed(tmp_path, "protobuf", ["google/protobuf/__init__.py"])
    installed(tmp_path, "opensearch-py", ["opensearchpy/__init__.py"])
    assert prune(tmp_path, PRUNED) == ["grpcio", "protobuf"]
    assert not (tmp_path / "grpc").exists() and not (tmp_path / "google").exists()
    assert (tmp_path / "opensearchpy" / "__init__.py").exists()


def test_given_installed_packages_when_stripped_then_test_suites_stubs_and_build_headers_go(tmp_path):
    for name in ["numpy/_core/tests/test_x.py", "numpy/f2py/__init__.py", "numpy/_core/include/numpy/x.h",
                 "numpy/__init__.pyi", "numpy/__init__.py", "pydantic/main.py"]:  # fmt: skip
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x" * 1000)
    strip(tmp_path)
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert left == ["numpy/__init__.py", "pydantic/main.py"]
