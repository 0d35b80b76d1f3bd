# Thin wrappers over `cgra ...` and pytest. Every user-facing target depends on `install`,
# so a fresh clone needs no manual step.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DESIGN ?= default
APP    ?= gaussian
JOBS   ?= 2

.PHONY: install test lint rtl rules app bench clean

install: $(STAMP)

$(STAMP): pyproject.toml $(wildcard */__init__.py)
	@command -v verilator >/dev/null 2>&1 || (apt-get update && apt-get install -y verilator)
	@command -v yosys >/dev/null 2>&1 || (apt-get update && apt-get install -y yosys)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $(STAMP)

test: install
	$(BIN)/pytest -n $(JOBS) --dist loadfile -p no:cacheprovider tests

lint: install
	$(BIN)/ruff check cgra peak lake canal garnet mapper tests bench
	$(BIN)/lint-imports

rtl: install
	$(BIN)/cgra rtl --config configs/$(DESIGN).toml --out build/$(DESIGN)

rules: install
	$(BIN)/cgra rules --pe peak.examples.cgra_pe:PE --out build/rules --jobs $(JOBS)

# `make app` runs on the small (8x8) design, generating it first when it is missing.
app: install build/small/design.json
	$(BIN)/cgra run $(APP) --design build/small

build/small/design.json: | install
	$(BIN)/cgra rtl --config configs/small.toml --out build/small

bench: install
	@set -e; for f in bench/bench_*.py; do echo "== $$f"; $(BIN)/python $$f; done

clean:
	rm -rf build
