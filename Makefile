# `make` sets everything up and builds reports/report.pdf at the default scale (offline, CPU).
# `make test` sets everything up and runs the test suite without the tests marked `slow` (what CI runs);
# `make test-all` runs every test.
# Both are idempotent: the environment is rebuilt only when pyproject.toml or requirements.lock change.
VENV := .venv
STAMP := $(VENV)/.installed
PYTHON ?= python3
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: all setup report test test-all lint format bench lock

all: report

$(STAMP): pyproject.toml requirements.lock Makefile
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -c requirements.lock -e '.[dev]'
	@# laplace-torch declares torchvision, which no code here imports. A CPU build of torch beside PyPI's CUDA build
	@# of torchvision cannot load torchvision's operators, and then `import laplace` fails: drop such a torchvision.
	$(VENV)/bin/python -c 'import torchvision' 2>/dev/null || $(VENV)/bin/pip uninstall --quiet -y torchvision
	touch $(STAMP)

# Every job is a fresh interpreter that imports the package: its bytecode is compiled once here, not in each job
# (0.3 s a job on 2 cores where PYTHONDONTWRITEBYTECODE is set, as on the machines this project is tested on).
BYTECODE := $(VENV)/.bytecode
$(BYTECODE): $(STAMP) $(shell find src -name '*.py')
	$(VENV)/bin/python -m compileall -q src
	touch $(BYTECODE)

setup: $(STAMP) $(BYTECODE)

report: $(STAMP) $(BYTECODE)
	snakemake --cores all

test: $(STAMP) $(BYTECODE)
	pytest -m "not slow"

test-all: $(STAMP) $(BYTECODE)
	pytest

lint: $(STAMP)
	ruff check src tests benchmarks scripts
	ruff format --check src tests benchmarks scripts
	snakefmt --check Snakefile workflow
	snakemake --lint

format: $(STAMP)
	ruff format src tests benchmarks scripts
	snakefmt Snakefile workflow

bench: $(STAMP)
	python benchmarks/job_overhead.py
	python -m benchmarks.default_build --studies udn_spirals
	python -m benchmarks.scheduler_overhead
	python -m benchmarks.dry_run
	python -m benchmarks.startup_checks

lock: $(STAMP)
	{ echo "# Full dependency tree, pinned (pip install -c requirements.lock -e '.[dev]'). Regenerate with 'make lock'."; \
	  pip freeze --exclude-editable | sed 's/^torch==\(.*\)+cpu$$/torch==\1/'; } > requirements.lock
