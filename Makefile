# The commands people type. Each one creates .venv and installs what it needs on a fresh machine.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
# Re-install whenever the dependencies in pyproject.toml change.
STAMP  := $(VENV)/.installed-$(shell sha1sum pyproject.toml | cut -c1-12)

.PHONY: install demo test bench lint clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip
# the CPU build of torch first: otherwise sentence-transformers pulls a multi-GB CUDA one
	$(PY) -m pip install -q --disable-pip-version-check torch==2.13.0
	$(PY) -m pip install -q --disable-pip-version-check -e '.[server,claude,grpc,dev]'
# the web UI's browser tests drive Debian's chromium through Playwright (no browser download)
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium)
# `bench instructions` (and its test) count instructions with valgrind's callgrind
	command -v valgrind >/dev/null || (apt-get update -qq && apt-get install -y -qq valgrind)
	rm -f $(VENV)/.installed-*
	touch $@

install: $(STAMP)

## make demo: serve on the embedded store and play a real Claude Code session into it
demo: $(STAMP)
	$(PY) -m demo

## make test: the whole test suite (real ClickHouse via chdb, real Claude Code, scripted model),
## one worker process per core (at most 4); a test file runs whole in one worker, so a module's
## fixtures (a running service, a played Claude Code session) are set up once
test: $(STAMP)
	$(PY) -m pytest -n logical --maxprocesses 4 --dist loadfile

## make bench: every benchmark behind `skillsight bench`, each against its DESIGN.md target:
## ingest (with durable acknowledgements, next to the rate before them), decoder fuzzing,
## instrumentation overhead, rebuild, deterministic evaluation, the embedded store's writes, trace-to-scores latency,
## LLM judges (with the scheduler's overhead), scorecard queries over 10M activations (the
## generated store is kept in .skillsight/bench-scorecard and reused), scale-out (activations
## evaluated per second with 1, 2 and 3 worker processes on one store), clustering (embeddings,
## full runs at 10k and 100k failures, online assignment, the cluster list over 10M activations),
## paired reruns (the rerun's own overhead per paired run; the report of 1,000 cases x 2 x 3)
bench: $(STAMP)
	$(PY) -m benchmarks ingest
	$(PY) -m benchmarks fuzz --inputs 1000000
	$(PY) -m benchmarks overhead
	$(PY) -m benchmarks rebuild
	$(PY) -m benchmarks eval
	$(PY) -m benchmarks inserts
	$(PY) -m benchmarks instructions
	$(PY) -m benchmarks eval-latency
	$(PY) -m benchmarks judges
	$(PY) -m benchmarks scorecard --data .skillsight/bench-scorecard --keep
	$(PY) -m benchmarks scale-out
	$(PY) -m benchmarks clustering --data .skillsight/bench-clusters
	$(PY) -m benchmarks reruns

lint: $(STAMP)
	$(VENV)/bin/ruff check skillsight tests demo benchmarks
	$(VENV)/bin/ruff format --check skillsight tests demo benchmarks
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

clean:
	rm -rf $(VENV) .skillsight .pytest_cache .mypy_cache .ruff_cache
