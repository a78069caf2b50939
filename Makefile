# Entry points for people and CI. `make test` from a fresh clone: venv, build, lint, pytest.
PY        ?= python3.11
VENV      := .venv
VPY       := $(VENV)/bin/python
STAMP_ENV := $(VENV)/.installed
STAMP_EXT := $(VENV)/.built
CXX_SRC   := $(wildcard kernels/cpu/*.cpp kernels/cpu/*.h kernels/include/turbogelu/*.h \
               kernels/cuda/*.cu kernels/cuda/*.cuh kernels/cuda/*.cpp kernels/cuda/*.h)
# Generated header: formatted by its generator, not by clang-format (nor is the generated
# kernels/mps/gelu_kernels.metal). The Metal test harness is formatted like the kernels.
CXX_FMT   := $(filter-out kernels/include/turbogelu/gelu_coeffs.h,$(CXX_SRC)) \
             tests/metal_stub/harness.cpp
PYTEST_ARGS ?=

.PHONY: all venv build lint format test test-all reproduce fit codegen bench clean

all: test

venv: $(STAMP_ENV)
$(STAMP_ENV): requirements.txt
	test -x $(VPY) || $(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -r requirements.txt
	touch $@

# Rebuilt only when a C++ source or the build files change.
build: $(STAMP_EXT)
$(STAMP_EXT): $(STAMP_ENV) $(CXX_SRC) setup.py turbogelu/_build.py pyproject.toml
	$(VPY) -m pip install -q --no-build-isolation --no-deps -e .
	touch $@

lint: $(STAMP_ENV)
	$(VENV)/bin/ruff check turbogelu tests setup.py
	$(VENV)/bin/ruff format --check turbogelu tests setup.py
	@if [ -x $(VENV)/bin/clang-format ]; then \
	  $(VENV)/bin/clang-format --dry-run --Werror $(CXX_FMT) && echo "clang-format: ok"; \
	else echo "clang-format not installed: C++ format check skipped"; fi
	$(VPY) -m turbogelu codegen --check

format: $(STAMP_ENV)
	$(VENV)/bin/ruff format turbogelu tests setup.py
	$(VENV)/bin/ruff check --fix turbogelu tests setup.py
	$(VENV)/bin/clang-format -i $(CXX_FMT)

# Fast suite (slow-marked tests excluded by pyproject's addopts).
test: build lint
	$(VPY) -m pytest $(PYTEST_ARGS)

# Everything, slow tests included.
test-all: build lint
	$(VPY) -m pytest -m "" $(PYTEST_ARGS)

fit: $(STAMP_ENV)
	$(VPY) -m turbogelu fit --range 4.389 --iters 35 --points 20000 --degree 8 --gelu-mode exact
	$(VPY) -m turbogelu fit --range 4.25 --iters 35 --points 20000 --degree 8 --gelu-mode tanh
	$(VPY) -m turbogelu.approx.packed
	$(VPY) -m turbogelu codegen

codegen: $(STAMP_ENV)
	$(VPY) -m turbogelu codegen

bench: build
	$(VPY) -m turbogelu bench --quick

# What exists so far (the report issue completes this target): the full test suite and the
# quick benchmark, written to results/.
reproduce: build
	mkdir -p results
	$(VPY) -m pytest -m "" $(PYTEST_ARGS)
	$(VPY) -m turbogelu bench --quick --out results/bench_quick.jsonl | tee results/bench_quick.md
	@echo "Notebooks, sweeps and the paper are not written yet (see the issues);"
	@echo "what exists ran: tests, and results/bench_quick.md"

clean:
	rm -rf build *.egg-info turbogelu/_C*.so $(STAMP_EXT)
