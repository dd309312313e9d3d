# opsche developer entry points. `make demo` and `make test` are the README's quick start; both
# run `make setup` first, which creates .venv and builds (or finds cached) control-plane binaries;
# `make test` also builds the shipping tools (helm, helm-unittest, crane) the chart's tests use.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEMO_NODES ?= 8

.PHONY: setup venv controlplane tools mmdebstrap image check fmt test test-unit test-integration demo clean cluster-down

setup: venv controlplane

venv: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "opsche needs Python >= 3.11; set PYTHON=...")'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,learn]'
	@touch $(STAMP)

controlplane: venv
	$(BIN)/opsche cluster build

tools: venv
	$(BIN)/opsche cluster build --tools

# mmdebstrap (Debian's package) makes the image's root filesystem; installed when missing if root.
mmdebstrap:
	@command -v mmdebstrap >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -q && apt-get install -y -q mmdebstrap; } \
	  || { echo "make: mmdebstrap is needed for the image (apt-get install mmdebstrap)" >&2; exit 1; }

# The container image as an OCI layout in build/image (no Docker engine: mmdebstrap + crane).
image: tools mmdebstrap
	$(BIN)/opsche image build --out build/image

# The static checks CI runs before the tests: formatting, lint, types (tests too), layering.
check: venv
	$(BIN)/ruff format --check src tests
	$(BIN)/ruff check src tests
	$(BIN)/mypy --strict src tests
	$(BIN)/lint-imports

fmt: venv
	$(BIN)/ruff format src tests
	$(BIN)/ruff check --fix src tests

# pytest exits 5 when it collected nothing: for this suite that is a broken path or import,
# never a pass, so it is reported and turned into a plain failure.
test: setup tools mmdebstrap
	@$(BIN)/pytest tests; status=$$?; \
	if [ $$status -eq 5 ]; then echo "make test: pytest collected no tests; failing" >&2; exit 1; fi; \
	exit $$status

test-unit: venv
	$(BIN)/pytest -q tests/unit

test-integration: setup tools mmdebstrap
	$(BIN)/pytest tests/integration

demo: setup
	$(BIN)/opsche demo --nodes $(DEMO_NODES)

cluster-down: venv
	$(BIN)/opsche cluster down

clean:
	-$(BIN)/opsche cluster down
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
