#!/usr/bin/env bash
# The GPU check, one command on a machine with a CUDA GPU (target: an NVIDIA H200):
#
#     tests/gpu_check.sh OUTDIR
#
# 1. builds turbogelu._C in place (setup.py build_ext --inplace, TURBOGELU_CUDA=1) against the
#    torch that `python3` imports there: no virtual environment, nothing installed (the GPU
#    machine has no network and its own Python / PyTorch, which the project's pins do not
#    reach);
# 2. runs tests/test_cuda.py on the GPU: every op, layout and dtype bit-identical to the CPU
#    kernels, all 65,536 bfloat16 / float16 inputs, edge values, opcheck, gradcheck, streams,
#    torch.compile, the packed bfloat16 path against the lab's replay (needs numpy, scipy, mpmath;
#    skipped, and said so, without them);
# 3. runs the benchmark: the 1M-element protocol (50 rounds x 100 calls, interleaved, CUDA
#    events) and the size sweep 64K ... 256M with GB/s and the copy / mul limit.
#
# Everything it prints is also in OUTDIR: gpu_check.log (all of it), build.log, test_cuda.log
# (+ .xml), bench.jsonl (every row), bench_1m.md and bench_sweep.md (the tables), summary.md,
# and, where experiments/bench.py can time a GPU, bench_general.md / .jsonl (its quick mode).
# Sized for under 5 minutes on an H200; each step has its own time limit. PYTHON=... picks
# another interpreter. Exit status: 0 when every step passed.
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
mkdir -p "$1"
OUT="$(cd "$1" && pwd)"
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
PY="${PYTHON:-python3}"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"  # the in-place build, not an installed copy
exec > >(tee "$OUT/gpu_check.log") 2>&1

T0=$(date +%s)
STATUS=0
SUMMARY="$OUT/summary.md"
: >"$SUMMARY"
note() { echo "$*" | tee -a "$SUMMARY"; }
step() { echo; echo "=== $* ($(($(date +%s) - T0)) s)"; }

step "machine"
note "# turbogelu GPU check"
note ""
note "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ), host: $(hostname)"
note "- repository: $ROOT ($(git rev-parse --short HEAD 2>/dev/null || echo 'not a git checkout'))"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem \
    --format=csv,noheader | sed 's/^/- GPU: /' | tee -a "$SUMMARY"
else
  note "- nvidia-smi: not found"
fi
if ! command -v "$PY" >/dev/null; then
  note "FAILED: no Python interpreter '$PY' (set PYTHON=...)"
  exit 1
fi
"$PY" - <<'EOF' | tee -a "$SUMMARY"
import importlib.util, platform, sys
print(f"- python: {platform.python_version()} ({sys.executable})")
try:
    import torch
except ImportError as e:
    print(f"FAILED: torch does not import: {e}")
    sys.exit(1)
print(f"- torch: {torch.__version__}, built with CUDA {torch.version.cuda}, "
      f"cuda available: {torch.cuda.is_available()}, devices: {torch.cuda.device_count()}")
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print(f"- device 0: {p.name}, sm_{p.major}{p.minor}, {p.multi_processor_count} SMs, "
          f"{p.total_memory / 2**30:.0f} GiB")
mods = ["setuptools", "ninja", "pytest", "numpy", "scipy", "mpmath", "triton"]
have = {m: importlib.util.find_spec(m) is not None for m in mods}
print("- modules: " + ", ".join(f"{m} {'yes' if ok else 'MISSING'}" for m, ok in have.items()))
EOF
CUDA_ROOT="$("$PY" -c 'import sys; sys.path.insert(0, "turbogelu"); import _build; print(_build.find_cuda_home() or "")')"
if [[ -z "$CUDA_ROOT" ]]; then
  note "FAILED: no CUDA toolkit (nvcc) found: set CUDA_HOME to the toolkit root"
  exit 1
fi
note "- CUDA toolkit: $CUDA_ROOT ($("$CUDA_ROOT/bin/nvcc" --version | grep -o 'release [0-9.]*' || echo '?'))"
if ! "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)'; then
  note "FAILED: torch.cuda.is_available() is False: nothing to check on this machine"
  exit 1
fi

step "build"
note ""
note "Building turbogelu._C in place against the installed torch (no dependency installs):"
note "  TURBOGELU_CUDA=1 $PY setup.py build_ext --inplace"
B0=$(date +%s)
if TURBOGELU_CUDA=1 timeout 420 "$PY" setup.py build_ext --inplace >"$OUT/build.log" 2>&1; then
  note "- build: ok in $(($(date +%s) - B0)) s ($(grep -m1 'turbogelu: CUDA kernels' "$OUT/build.log" || true))"
else
  tail -40 "$OUT/build.log"
  note "- build: FAILED after $(($(date +%s) - B0)) s (see build.log)"
  exit 1
fi

step "tests on the GPU"
if "$PY" -c 'import pytest' 2>/dev/null; then
  set +e
  timeout 300 "$PY" -m pytest tests/test_cuda.py -q -rs -p no:cacheprovider \
    --junitxml="$OUT/test_cuda.xml" 2>&1 | tee "$OUT/test_cuda.log"
  rc=${PIPESTATUS[0]}
  set -e
  note "- tests/test_cuda.py: $(grep -E '[0-9]+ (passed|failed)' "$OUT/test_cuda.log" | tail -1) (exit $rc)"
  if [[ $rc -ne 0 ]]; then STATUS=1; fi
  grep -E "^SKIPPED" "$OUT/test_cuda.log" | sed 's/^/  /' | tee -a "$SUMMARY" || true
  if grep -q "SKIPPED.*no CUDA device" "$OUT/test_cuda.log"; then
    note "  WARNING: GPU tests were skipped"
    STATUS=1
  fi
else
  note "- tests: SKIPPED, pytest is not installed for $PY (nothing may be installed here)"
  STATUS=1
fi

step "benchmark: 1M elements, 50 rounds x 100 calls"
set +e
timeout 240 "$PY" -m experiments.bench_cuda --size 1048576 --rounds 50 --calls 100 \
  --out "$OUT/bench.jsonl" | tee "$OUT/bench_1m.md"
rc1=${PIPESTATUS[0]}
step "benchmark: size sweep 64K ... 256M"
timeout 300 "$PY" -m experiments.bench_cuda --sweep --out "$OUT/bench.jsonl" | tee "$OUT/bench_sweep.md"
rc2=${PIPESTATUS[0]}
set -e
note "- benchmark 1M: exit $rc1; sweep: exit $rc2 (tables: bench_1m.md, bench_sweep.md)"
if [[ $rc1 -ne 0 || $rc2 -ne 0 ]]; then STATUS=1; fi
# The general benchmark (experiments/bench.py), where it can time a GPU: its quick mode, as an
# extra (reported, not counted in the exit status).
BENCH_HELP="$("$PY" -m experiments bench --help 2>/dev/null || true)"
if [[ "$BENCH_HELP" == *"--device"* ]]; then
  step "extra: python -m experiments bench --device cuda --quick"
  set +e
  timeout 180 "$PY" -m experiments bench --device cuda --quick --out "$OUT/bench_general.jsonl" \
    >"$OUT/bench_general.md" 2>&1
  rc3=$?
  set -e
  note "- extra: turbogelu bench --device cuda --quick: exit $rc3 (bench_general.md)"
else
  note "- extra: turbogelu bench has no --device option in this checkout: skipped"
fi
{
  echo
  echo "## 1M elements"
  echo
  cat "$OUT/bench_1m.md"
  echo
  echo "## Size sweep"
  echo
  cat "$OUT/bench_sweep.md"
} >>"$SUMMARY"

step "done"
note ""
note "gpu_check: $([[ $STATUS -eq 0 ]] && echo 'ALL PASSED' || echo 'SOME STEPS FAILED') in $(($(date +%s) - T0)) s"
exit $STATUS
