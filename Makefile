# Everything a newcomer needs. `make run` and `make test` do all set-up themselves.
VENV ?= .venv
PYTHON ?= python3
# torch is pinned to the CPU build that this workplace's machines carry on disk; elsewhere use
# e.g. TORCH_SPEC="torch --index-url https://download.pytorch.org/whl/cpu" to avoid a CUDA download.
TORCH_SPEC ?= torch==2.13.0
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# jsii (under aws-cdk-lib) warns on every start that this machine's Node 20 is past its end of life.
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION ?= 20

.PHONY: setup run run-aws-local demo test test-fuzz test-fast lint typecheck eval bench bench-recall bench-load policy-model synth layer clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet $(TORCH_SPEC)
	# setuptools warns on every editable install that top-level folders share package names
	# (functions/, benchmarks/): they are the packages, by design.
	PYTHONWARNINGS="ignore:Editable installation" $(BIN)/pip install --quiet -e ".[local,aws,dev,infra,mcp]"
	touch $(STAMP)

setup: $(STAMP)

run: setup  ## start the service on the embedded local backend (http://127.0.0.1:8765)
	$(BIN)/episodic serve

run-aws-local: setup  ## the AWS backend (DynamoDB, S3, the stream function) over moto's server on loopback, in memory
	EPISODIC_INGEST_MAPPING=$${EPISODIC_INGEST_MAPPING:-events/ingest/mapping.json} $(BIN)/episodic serve --backend aws-local

demo: setup  ## a scripted scenario against a fresh data dir
	$(BIN)/episodic demo

test: setup  ## the whole test suite but the long fuzzing runs (real SQLite, real MiniLM model)
	$(BIN)/python -m pytest -n 2 --dist loadfile -m "not fuzz"

test-fuzz: setup  ## the long property-based and fuzzing runs (hypothesis "fuzz" profile, >=1,000 OpenAPI cases)
	HYPOTHESIS_PROFILE=fuzz $(BIN)/python -m pytest -m fuzz tests

test-fast: setup  ## unit tests only
	$(BIN)/python -m pytest tests/unit -q

eval: setup  ## the governance and retrieval metrics against tests/evals/thresholds.json
	$(BIN)/episodic eval

bench: setup  ## every figure: throughput, recall latency, API latency, the Chroma peer, cold imports; writes BENCHMARKS.md
	PYTHONWARNINGS="ignore:Editable installation" $(BIN)/pip install --quiet -e ".[bench]"
	$(BIN)/episodic bench

bench-load: setup  ## 16 clients, 30% writes / 70% recalls over HTTP against episodic serve, with a py-spy profile
	$(BIN)/python benchmarks/mixed_load.py --clients 16 --seconds 30 --profile

policy-model: setup  ## retrain the instruction model and the chatter classifier from the labelled sets into layers/episodic/domain/policy/data
	$(BIN)/python -c "from episodic.domain.policy.instruction_model import main; main()"
	$(BIN)/python -c "from episodic.domain.policy.chatter import main; main()"

bench-recall: setup  ## structured recall latency vs the textbook loop, printed (not asserted)
	$(BIN)/python benchmarks/structured_recall.py --episodes 20000 --queries 200

# cfn-lint's W3005: CDK puts a DependsOn on each function's role beside the GetAtt that already implies it.
lint: setup synth
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/cfn-lint --ignore-checks W3005 -- cdk.out/*.template.json

synth: setup  ## the CDK app into cdk.out, cdk-nag checked; no Docker, no credentials (STAGE=prod for another stage)
	rm -rf cdk.out
	$(if $(STAGE),CDK_CONTEXT_JSON='{"stage": "$(STAGE)"}') $(BIN)/python -m infra.app

layer: setup  ## the layer's dependencies for Lambda (Python 3.13, arm64) into build/layer; run before deploying
	$(BIN)/python -m infra.layer

typecheck: setup
	$(BIN)/mypy layers/episodic functions benchmarks

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache cdk.out build
