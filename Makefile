# Thin wrappers over `cgra ...` and pytest. Every user-facing target depends on `install`,
# so a fresh clone needs no manual step.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DESIGN ?= default
APP    ?= gaussian
JOBS   ?= 2

.PHONY: install test lint rtl rules app app-designs bench clean FORCE

install: $(STAMP)

$(STAMP): pyproject.toml $(wildcard */__init__.py)
	@command -v verilator >/dev/null 2>&1 || (apt-get update && apt-get install -y verilator)
	@command -v yosys >/dev/null 2>&1 || (apt-get update && apt-get install -y yosys)
	@command -v sta >/dev/null 2>&1 || (apt-get update && apt-get install -y opensta)
	@command -v iverilog >/dev/null 2>&1 || (apt-get update && apt-get install -y iverilog)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $(STAMP)

# `make test` deselects the tests marked `bench` (large runs: the 32x16 and 16x10 arrays in
# Verilator, the rest of a sweep; pyproject.toml); `make bench` runs them first
PYTEST := $(BIN)/pytest -n $(JOBS) --dist loadfile --no-loadscope-reorder -p no:cacheprovider

test: install
	$(PYTEST) -m "not bench" --durations=25 tests

lint: install
	$(BIN)/ruff check cgra peak lake canal garnet mapper dse runtime tests bench
	$(BIN)/lint-imports

# `cgra rtl` is incremental: what did not change since build/$(DESIGN) was generated is
# reused (an unchanged configuration rebuilds nothing; see docs/garnet.md)
rtl: install
	$(BIN)/cgra rtl --config configs/$(DESIGN).toml --out build/$(DESIGN)

rules: install
	$(BIN)/cgra rules --pe peak.examples.cgra_pe:PE --out build/rules --jobs $(JOBS)

# `make app` runs an app on the design it fits (harris needs 80 PEs: more than the 8x8 has;
# laplacian_pyramid 9 MEMs and 36 PEs; the DNN layers 81-106 MEMs;
# the BFloat16 apps *_bf16 need the FP PE: configs/bf16.toml); APP_DESIGN=<name> overrides.
# The design is brought up to date first, every time: the
# incremental `cgra rtl` regenerates what a PE spec or TOML edit changed and costs ~1 s
# when nothing did (FORCE: make cannot see the spec files a design depends on).
APP_DESIGN_harris := default
APP_DESIGN_laplacian_pyramid := default
APP_DESIGN_resnet_layer := default
APP_DESIGN_resnet_stride2 := default
APP_DESIGN_mobilenet_layer := default
APP_DESIGN_gemm := default
# (mapper/apps/__init__.py DESIGNS holds the same as data: `cgra run --list` prints it and
# tests/mapper/test_cli_run.py checks it against `make app-designs`)
app_design = $(or $(APP_DESIGN_$(1)),$(if $(filter %_bf16,$(1)),bf16,small))
APP_DESIGN ?= $(call app_design,$(APP))
# the input image and its size: `make app APP=gaussian IMAGE=photo.png WIDTH=100 HEIGHT=37`
# (`cgra run --image/--width/--height`; unset: the camera crop, 64x64, or a file's own size)
IMAGE  ?=
WIDTH  ?=
HEIGHT ?=

app: install build/$(APP_DESIGN)/design.json
	@echo "make app: $(APP) on design $(APP_DESIGN) (build/$(APP_DESIGN), configs/$(APP_DESIGN).toml)"
	$(BIN)/cgra run $(APP) --design build/$(APP_DESIGN)$(if $(IMAGE), --image $(IMAGE))$(if $(WIDTH), --width $(WIDTH))$(if $(HEIGHT), --height $(HEIGHT))

# `make app-designs APPS="gaussian harris"`: "<app> <design>" per line, the design `make app`
# picks for each (no install, nothing built)
app-designs:
	@$(foreach a,$(APPS),echo "$(a) $(call app_design,$(a))";)

build/%/design.json: FORCE | install
	$(BIN)/cgra rtl --config configs/$*.toml --out build/$*

FORCE:

bench: install
	$(PYTEST) -m bench --durations=25 tests
	@set -e; for f in bench/bench_*.py; do echo "== $$f"; $(BIN)/python $$f; done
	$(BIN)/python bench/bench_dse_trends.py --sweep configs/dse/small.toml

clean:
	rm -rf build
