# memgrid: `make grid` runs the embedded default grid; `make test` runs the suite.
# Both set up what they need first: a virtualenv with the package, a Docker engine
# (installed and started on Debian as root), and the content-addressed images.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
GRID_ARGS ?=
PYTEST_ARGS ?=

.PHONY: setup engine images grid test doctor clean

$(BIN)/memgrid: pyproject.toml arms/recall/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,dask]' -e arms/recall
	touch $@

setup: $(BIN)/memgrid

engine:
	bash scripts/ensure-engine.sh

images: setup engine
	$(BIN)/memgrid images build

# The grid builds only the images its own cells need (the default grid needs no third-party product's).
grid: setup engine
	$(BIN)/memgrid grid $(GRID_ARGS)

test: setup engine
	$(BIN)/pytest -q $(PYTEST_ARGS)

doctor: setup
	$(BIN)/memgrid doctor

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache images/*/pydeps arms/*/pydeps arms/*/node_modules arms/*/assets
