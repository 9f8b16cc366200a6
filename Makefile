# memgrid: `make grid` runs the embedded default grid; `make test` runs the suite.
# Both set up what they need first: a virtualenv with the package, a Docker engine
# (installed and started on Debian as root), and the content-addressed images.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
GRID_ARGS ?=
PYTEST_ARGS ?=
# Test files run on this many pytest workers at once (pytest-xdist), each file whole on one worker so its
# module-scoped fixtures (a cluster, a run several tests read) are set up once. On 2 cores two workers took CI's
# suite from 2816 s to 1981 s (the engine's waits overlap); a third took Docker-heavy files from 208 s to 182 s,
# the CPUs then 97% busy instead of 85%, and left the Docker-free ones as they were (163 s, 165 s); 1: one process.
TEST_WORKERS ?= 3

.PHONY: setup engine images grid test test-fast doctor clean

$(BIN)/memgrid: pyproject.toml arms/recall/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,dask]' -e arms/recall
	touch $@

setup: $(BIN)/memgrid
	@echo "memgrid is $(BIN)/memgrid: '. $(BIN)/activate' puts it on PATH, as the docs call it"

engine:
	bash scripts/ensure-engine.sh

images: setup engine
	$(BIN)/memgrid images build

# The grid builds only the images its own cells need (the default grid needs no third-party product's).
grid: setup engine
	$(BIN)/memgrid grid $(GRID_ARGS)

test: setup engine
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

# The edit loop: every test that needs no Docker engine (those using the `engine` fixture are marked `docker`).
# CI still runs everything (make test).
test-fast: setup
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadfile -m "not docker" $(PYTEST_ARGS)

doctor: setup
	$(BIN)/memgrid doctor

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache images/*/pydeps arms/*/pydeps arms/*/node_modules arms/*/assets
