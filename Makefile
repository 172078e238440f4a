# Everything a newcomer needs. `make run` and `make test` do all set-up themselves.
VENV ?= .venv
PYTHON ?= python3
# torch is pinned to the CPU build that this workplace's machines carry on disk; elsewhere use
# e.g. TORCH_SPEC="torch --index-url https://download.pytorch.org/whl/cpu" to avoid a CUDA download.
TORCH_SPEC ?= torch==2.13.0
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: setup run demo test test-fast lint typecheck eval bench bench-recall clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet $(TORCH_SPEC)
	$(BIN)/pip install --quiet -e ".[local,aws,dev]"
	touch $(STAMP)

setup: $(STAMP)

run: setup  ## start the service on the embedded local backend (http://127.0.0.1:8765)
	$(BIN)/episodic serve

demo: setup  ## a scripted scenario against a fresh data dir
	$(BIN)/episodic demo

test: setup  ## the whole test suite (real SQLite, real MiniLM model)
	$(BIN)/python -m pytest -n 2 --dist loadfile

test-fast: setup  ## unit tests only
	$(BIN)/python -m pytest tests/unit -q

eval: setup  ## the governance and retrieval metrics against tests/evals/thresholds.json
	$(BIN)/episodic eval

bench: setup  ## every figure: throughput, recall latency, API latency, cold imports; writes BENCHMARKS.md
	$(BIN)/episodic bench

bench-recall: setup  ## structured recall latency vs the textbook loop, printed (not asserted)
	$(BIN)/python benchmarks/structured_recall.py --episodes 20000 --queries 200

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: setup
	$(BIN)/mypy layers/episodic functions

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache
