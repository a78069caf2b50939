#!/usr/bin/env bash
# The GPU check: build, verify and time every CUDA op, in one command (target: an NVIDIA H200
# with 16 CPU cores, under 8 minutes):
#
#     tests/gpu_check.sh OUTDIR                 # on the GPU machine
#     tests/gpu_check.sh --dry-run OUTDIR       # anywhere: every step a machine without a GPU can run
#     tests/gpu_check.sh --reuse-build ...      # skip the build when turbogelu/_C is up to date
#
# It writes exactly two files: OUTDIR/summary.md (the verdicts, the tables at 1M and 256M
# elements, the kernels' registers; rewritten after each step, so a killed run still leaves
# one) and OUTDIR/gpu_check.tar.gz (every step's log, the JUnit XML, bench.jsonl, the full
# tables, the summary).
#
# Steps, each with its own time limit, all within one budget (GPU_CHECK_BUDGET, 450 s):
#   machine    python, torch, the GPU, the CUDA toolkit (nothing is installed: the GPU machine
#              has no network; PYTHON=... picks the interpreter)
#   build      setup.py build_ext --inplace, TURBOGELU_CUDA=1, MAX_JOBS=cores sources at a time
#              (with ninja or without: tests/gpu_check.py build), against the torch installed
#              there; a failed build ends the check
#   resources  the kernels' registers, spills and blocks per SM (tests/gpu_check.py)
#   tests      tests/test_cuda.py on the GPU: every row of the kernels' table (GELU's two
#              forms and the activation family's ops), layout and dtype bit-identical to the
#              CPU kernels, every tail and 16-byte offset, every 16-bit input, both opt-in
#              packed bfloat16 paths (GELU's, the family's paper tier) bit-identical to the
#              lab's replay of their bfloat16 arithmetic, opcheck, gradcheck, compile,
#              streams, the grid against the occupancy, a bfloat16 tensor of more than 2^31
#              elements on slices
#   memcheck   compute-sanitizer --tool memcheck over tests/cuda_memcheck.py (every tail and
#              16-byte offset, tensors of at most 1M elements; the family's ops up to 4099,
#              their packed bfloat16 path included), smallest sizes first; 20 s before its
#              limit it starts no further size and the summary says which it left out
#              (PARTIAL, not a failure: the sanitizer's cost is unknown before a run)
#   bench-1m   python -m experiments.bench_cuda, 1M elements, 50 rounds x 100 calls
#   bench-sweep  the same, 64K ... 256M elements (GB/s against a device copy / torch.mul)
#
# Exit status: 0 all passed; 1 a correctness failure (the build, a test, memcheck, or a
# benchmark that did not finish); 3 only a speed verdict failed (the forward op above 1.05x
# F.gelu at 1M, or the op beyond 1.10x the copy / mul time at 256M, any dtype or direction);
# 2 the machine cannot run the check (no torch, no GPU, no nvcc) or a usage error. A signal
# (TERM, INT, HUP) ends it with 1 and a summary of the steps that ran.
#
# --dry-run: no GPU needed. The build as above (without forcing CUDA), the resources, the
# tests against the CPU kernels (TURBOGELU_TEST_DEVICE=cpu: the GPU-only checks skip),
# tests/cuda_memcheck.py on the CPU without the sanitizer, the benchmark on CPU tensors at
# small sizes (a run of the code, not a measurement: its verdicts are shown, not judged), the
# summary and the archive. Exit 0 when every step ran, 1 otherwise. GPU_CHECK_TESTS=EXPR runs
# only the tests pytest -k EXPR selects, and GPU_CHECK_QUICK=1 the dry run's memcheck cases on
# small tensors only: tests/test_gpu_check.py does both, to fit the suite's time.
set -uo pipefail

usage() {
  echo "usage: $0 [--dry-run] [--reuse-build] OUTDIR" >&2
  exit 2
}
DRY=0
REUSE=0
OUTARG=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dry-run) DRY=1 ;;
    --reuse-build) REUSE=1 ;;
    -*) usage ;;
    *) [[ -z "$OUTARG" ]] || usage; OUTARG="$1" ;;
  esac
  shift
done
[[ -n "$OUTARG" ]] || usage
mkdir -p "$OUTARG" || exit 2
OUT="$(cd "$OUTARG" && pwd)"
cd "$(dirname "$0")/.." || exit 2
ROOT="$(pwd)"
PY="${PYTHON:-python3}"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"  # the in-place build, not an installed copy
export MAX_JOBS="${MAX_JOBS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 4)}"
BUDGET="${GPU_CHECK_BUDGET:-450}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX")" || exit 2
LOG="$WORK/gpu_check"  # what the archive holds
mkdir -p "$LOG"
rm -f "$OUT/summary.md" "$OUT/gpu_check.tar.gz"
T0=$SECONDS
# On the GPU everything runs on the GPU, whatever the caller's environment says.
[[ $DRY -eq 1 ]] || unset TURBOGELU_TEST_DEVICE

# The benchmark's judged sizes (a dry run times CPU tensors: small ones).
if [[ $DRY -eq 1 ]]; then OP_SIZE=4096 SWEEP_TOP=16384; else OP_SIZE=1048576 SWEEP_TOP=268435456; fi
CORRECT=ok   # ok | FAILED
SPEED=ok     # ok | FAILED
ENV_PROBLEM=""
INTERRUPTED=""
STEPS=()     # rows of the steps table
NOTES=()     # lines under it

# ---------------------------------------------------------------- helpers

# limit_of LIMIT: a step's time limit now, min(LIMIT, what is left of the budget).
limit_of() {
  local left=$((BUDGET - (SECONDS - T0)))
  echo $(($1 < left ? $1 : left))
}

# step NAME LIMIT CMD...: CMD's output to the terminal and $LOG/NAME.log, under a time limit of
# min(LIMIT, what is left of the budget). Sets RC (124 or 137: out of time; 125: no time was
# left to start it) and SECS.
step() {
  local name="$1" limit
  limit=$(limit_of "$2")
  shift 2
  LIMIT=$limit
  if ((limit < 5)); then
    echo "not started: no time left in the ${BUDGET} s budget" >"$LOG/$name.log"
    RC=125
    SECS=0
    return
  fi
  echo
  echo "=== $name (limit $limit s, at $((SECONDS - T0)) s)"
  local t=$SECONDS
  timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$LOG/$name.log"
  RC=${PIPESTATUS[0]}
  SECS=$((SECONDS - t))
}

# row NAME RESULT: a line of the steps table (with the last step's time and limit).
row() { STEPS+=("| $1 | $2 | $SECS | $LIMIT |"); }
note() { NOTES+=("$*"); }
timed_out() { [[ $RC -eq 124 || $RC -eq 137 ]]; }
result() { # the word for RC
  if timed_out; then echo "TIMED OUT"; elif [[ $RC -eq 125 ]]; then echo "NOT RUN (no time left)"; elif [[ $RC -eq 0 ]]; then echo "ok"; else echo "FAILED (exit $RC)"; fi
}

# Lines of a markdown table file: its header and the rows of one size.
rows_of_size() { awk -v size="$2" -F'|' '/^\| direction/ || /^\|---/ {print; next} /^\|/ {s=$4; gsub(/ /, "", s); if (s == size) print}' "$1"; }

commit() {
  local c
  c="$(git rev-parse --short HEAD 2>/dev/null)" || { echo "? (not a git checkout)"; return; }
  git diff --quiet HEAD 2>/dev/null && echo "$c" || echo "$c with local changes"
}

# The steps table's word for a benchmark's exit status.
bench_result() {
  if [[ $RC -eq 3 && $DRY -eq 1 ]]; then
    echo "ok (its speed verdicts: not judged in a dry run)"
  elif [[ $RC -eq 3 ]]; then
    echo "ok; a speed bar FAILED"
  else
    result
  fi
}

status_code() {
  if [[ -n "$ENV_PROBLEM" ]]; then echo 2; return; fi
  if [[ $CORRECT != ok || -n "$INTERRUPTED" ]]; then echo 1; return; fi
  if [[ $DRY -eq 0 && $SPEED == FAILED ]]; then echo 3; return; fi
  echo 0
}

headline() {
  local code
  code=$(status_code)
  if [[ -n "$INTERRUPTED" ]]; then
    echo "INTERRUPTED$([[ $DRY -eq 1 ]] && echo ' (dry run)') by a signal: only the steps listed ran"
    return
  fi
  if [[ $DRY -eq 1 ]]; then
    [[ $code -eq 0 ]] && echo "DRY RUN: every step ran" || echo "DRY RUN: FAILED"
    return
  fi
  case $code in
    0) echo "PASSED" ;;
    1) echo "FAILED (correctness)" ;;
    2) echo "NOT RUN ($ENV_PROBLEM)" ;;
    3) echo "FAILED (speed)" ;;
  esac
}

write_summary() {
  local s="$LOG/summary.md" code
  code=$(status_code)
  {
    echo "# turbogelu GPU check: $(headline)"
    echo
    echo "exit status $code after $((SECONDS - T0)) s (budget $BUDGET s);" \
      "$(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname);" \
      "commit $(commit)"
    if [[ $DRY -eq 1 ]]; then
      echo
      echo "A dry run: no GPU used. The tests ran against the CPU kernels, the benchmark on CPU"
      echo "tensors at small sizes (its times are not measurements; its verdicts are not judged)."
    fi
    echo
    echo "| step | result | s | limit s |"
    echo "|---|---|---:|---:|"
    printf '%s\n' "${STEPS[@]}"
    echo
    [[ ${#NOTES[@]} -gt 0 ]] && printf '%s\n' "${NOTES[@]}" && echo
    [[ -s "$LOG/machine.log" ]] && { echo "## Machine"; echo; grep '^- ' "$LOG/machine.log"; echo; }
    if [[ -s "$LOG/verdicts.txt" ]]; then
      echo "## Speed verdicts ($([[ $DRY -eq 1 ]] && echo 'shown, not judged: a dry run' || echo 'judged: exit 3 when one fails'))"
      echo
      sed 's/^/    /' "$LOG/verdicts.txt"
      echo
    fi
    if [[ -s "$LOG/bench_1m.md" ]]; then
      echo "## $OP_SIZE elements (the op against F.gelu)"
      echo
      grep '^|' "$LOG/bench_1m.md"
      echo
    fi
    if [[ -s "$LOG/bench_sweep.md" ]]; then
      echo "## $SWEEP_TOP elements (the roofline; every size of the sweep in bench_sweep.md)"
      echo
      rows_of_size "$LOG/bench_sweep.md" "$SWEEP_TOP"
      echo
    fi
    if [[ -s "$LOG/resources.md" ]]; then
      echo "## Kernel resources"
      echo
      cat "$LOG/resources.md"
      echo
    fi
    echo "Everything else is in gpu_check.tar.gz: each step's log, test_cuda.xml, bench.jsonl,"
    echo "bench_1m.md, bench_sweep.md."
  } >"$s"
  cp "$s" "$OUT/summary.md"
}

finish() {
  trap - EXIT
  [[ -z "${PREFETCH_PID:-}" ]] || stop_prefetch
  write_summary
  tar -czf "$OUT/gpu_check.tar.gz" -C "$WORK" gpu_check 2>/dev/null ||
    echo "gpu_check: could not write $OUT/gpu_check.tar.gz" >&2
  rm -rf "$WORK"
  local code
  code=$(status_code)
  echo
  echo "gpu_check: $(headline); exit $code after $((SECONDS - T0)) s; $OUT/summary.md, $OUT/gpu_check.tar.gz"
  exit "$code"
}
trap finish EXIT
# Through finish: the summary and archive are still written, saying which steps ran.
trap 'INTERRUPTED=1; exit 143' TERM INT HUP

# ---------------------------------------------------------------- machine

LIMIT=20
SECS=0
step machine 20 bash -c '
  echo "- host: $(hostname), $(getconf _NPROCESSORS_ONLN) CPU cores, MAX_JOBS=$MAX_JOBS"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem \
      --format=csv,noheader | sed "s/^/- GPU: /"
  else
    echo "- nvidia-smi: not found"
  fi
  exec "$0" tests/gpu_check.py machine' "$PY"
MACHINE_RC=$RC
CUDA_ROOT="$("$PY" -c 'import sys; sys.path.insert(0, "turbogelu"); import _build; print(_build.find_cuda_home() or "")' 2>/dev/null)"
if [[ $MACHINE_RC -eq 3 || $MACHINE_RC -eq 126 || $MACHINE_RC -eq 127 ]]; then
  ENV_PROBLEM="no Python with torch ($PY; PYTHON=... picks another)"
elif [[ $DRY -eq 0 && $MACHINE_RC -eq 4 ]]; then
  ENV_PROBLEM="torch.cuda.is_available() is False"
elif [[ $DRY -eq 0 && -z "$CUDA_ROOT" ]]; then
  ENV_PROBLEM="no CUDA toolkit (nvcc): set CUDA_HOME"
elif [[ $MACHINE_RC -ne 0 && $MACHINE_RC -ne 4 ]]; then
  ENV_PROBLEM="the machine step failed (exit $MACHINE_RC)"
fi
row machine "$([[ -z "$ENV_PROBLEM" ]] && echo ok || echo "FAILED: $ENV_PROBLEM")"
[[ -z "$ENV_PROBLEM" ]] || exit 2
write_summary

# ---------------------------------------------------------------- build

# The PTX and ptxas tests' four nvcc compiles (about 45 s of one core) in the background
# while the extension builds, into a cache the tests read (tests/gpu_check.py prefetch): they
# would otherwise run one after another inside the tests step's time limit.
# In a session of its own (setsid), so that stopping it stops its nvcc processes too.
PREFETCH_PID=""
if [[ -n "$CUDA_ROOT" ]]; then
  export GPU_CHECK_NVCC_CACHE="$WORK/nvcc_cache"
  $(command -v setsid) "$PY" tests/gpu_check.py prefetch >"$LOG/prefetch.log" 2>&1 &
  PREFETCH_PID=$!
fi
stop_prefetch() { kill -- "-$PREFETCH_PID" 2>/dev/null || kill "$PREFETCH_PID" 2>/dev/null; }

if [[ $REUSE -eq 1 ]] && WHY="$("$PY" tests/gpu_check.py fresh 2>&1)"; then
  SECS=0
  LIMIT=0
  echo "reused: $WHY" >"$LOG/build.log"
  row build "reused, not rebuilt (--reuse-build: $WHY)"
else
  [[ $REUSE -eq 1 ]] && note "- build: --reuse-build, but the extension is not current (${WHY:-?}): rebuilt"
  if [[ $DRY -eq 0 ]]; then
    step build 200 env TURBOGELU_CUDA=1 "$PY" tests/gpu_check.py build
  else
    step build 200 "$PY" tests/gpu_check.py build
  fi
  if [[ $RC -eq 0 ]] && ! "$PY" -c 'import turbogelu.ops' >>"$LOG/build.log" 2>&1; then
    RC=1
    echo "the build finished but turbogelu.ops does not import" | tee -a "$LOG/build.log"
  fi
  row build "$(result)$(grep -m1 -o 'CUDA kernels [A-Z]* ([^)]*)' "$LOG/build.log" | sed 's/^/: /')"
  if [[ $RC -ne 0 ]]; then
    CORRECT=FAILED
    tail -30 "$LOG/build.log" | sed 's/^/    /' >"$LOG/build_tail.txt"
    note "- the build failed: the last lines of build.log:"
    while IFS= read -r line; do note "$line"; done <"$LOG/build_tail.txt"
    exit 1 # fail fast: nothing else can run
  fi
fi
if [[ $DRY -eq 0 ]] && ! "$PY" -c 'import torch, turbogelu.ops, sys; sys.exit(0 if torch._C._dispatch_has_kernel_for_dispatch_key("turbogelu::gelu", "CUDA") else 1)'; then
  CORRECT=FAILED
  note "- the extension has no CUDA kernels (see build.log)"
  exit 1
fi
write_summary

# ---------------------------------------------------------------- resources

step resources 20 "$PY" tests/gpu_check.py resources
if [[ $RC -eq 0 ]]; then
  mv "$LOG/resources.log" "$LOG/resources.md"
  row resources "ok ($(grep -c '(degree' "$LOG/resources.md") kernels)"
else
  row resources "$(result): reported only (tests/test_cuda.py checks the numbers)"
fi
write_summary

# ---------------------------------------------------------------- tests

if [[ $DRY -eq 1 ]]; then
  TEST_ENV=(env TURBOGELU_TEST_DEVICE=cpu)
else
  TEST_ENV=(env)
fi
SELECT=()
[[ -n "${GPU_CHECK_TESTS:-}" ]] && SELECT=(-k "$GPU_CHECK_TESTS")
step tests 150 "${TEST_ENV[@]}" "$PY" -m pytest tests/test_cuda.py \
  -q -rs -p no:cacheprovider \
  --maxfail=50 --junitxml="$LOG/test_cuda.xml" ${SELECT[@]+"${SELECT[@]}"}
TESTS="$("$PY" tests/gpu_check.py junit "$LOG/test_cuda.xml")"
row tests "$(result): $(head -1 <<<"$TESTS")"
note "- tests/test_cuda.py$([[ $DRY -eq 1 ]] && echo ' (against the CPU kernels)'): $TESTS"
if [[ $RC -ne 0 ]]; then CORRECT=FAILED; fi
if [[ -n "$PREFETCH_PID" ]]; then # done by now, else stopped: the tests no longer need it
  if kill -0 "$PREFETCH_PID" 2>/dev/null; then
    stop_prefetch
    note "- the nvcc prefetch was still running after the tests (prefetch.log): stopped"
  elif ! wait "$PREFETCH_PID"; then
    note "- the nvcc prefetch failed (prefetch.log): the tests compiled for themselves"
  fi
  PREFETCH_PID=""
fi
if [[ $DRY -eq 0 ]] && grep -q "no CUDA device" <<<"$TESTS"; then
  CORRECT=FAILED
  note "- the GPU tests skipped: no CUDA device seen by pytest"
fi
write_summary

# ---------------------------------------------------------------- memcheck

SANITIZER=""
for c in "$CUDA_ROOT/bin/compute-sanitizer" "$CUDA_ROOT/compute-sanitizer/compute-sanitizer" \
  "$(command -v compute-sanitizer 2>/dev/null)"; do
  if [[ -n "$c" && -x "$c" ]]; then SANITIZER="$c"; break; fi
done
# The cases stop starting new sizes 20 s before the step's limit (the sanitizer's cost on a
# GPU is unknown until it runs): a partial run says which sizes it left out and is not a
# failure; a mismatch or an invalid access is.
MEMCHECK_LIMIT=$(limit_of 90)
MEMCHECK=("$PY" tests/cuda_memcheck.py --budget $((MEMCHECK_LIMIT > 40 ? MEMCHECK_LIMIT - 20 : MEMCHECK_LIMIT / 2)))
if [[ $DRY -eq 1 ]]; then
  MODE=dry
  # shellcheck disable=SC2046
  step memcheck "$MEMCHECK_LIMIT" env TURBOGELU_TEST_DEVICE=cpu "${MEMCHECK[@]}" \
    $([[ -n "${GPU_CHECK_QUICK:-}" ]] && echo --quick)
elif [[ -z "$SANITIZER" ]]; then
  MODE=bare
  step memcheck "$MEMCHECK_LIMIT" env PYTORCH_NO_CUDA_MEMORY_CACHING=1 "${MEMCHECK[@]}"
else
  MODE=sanitizer
  # Without the caching allocator every tensor is its own allocation, whose bounds the
  # sanitizer knows (inside one of the allocator's blocks an overrun goes unseen).
  step memcheck "$MEMCHECK_LIMIT" env PYTORCH_NO_CUDA_MEMORY_CACHING=1 \
    "$SANITIZER" --tool memcheck --error-exitcode 99 "${MEMCHECK[@]}"
fi
# Judged from the log (tests/gpu_check.py memcheck): the cases' mismatches, the sanitizer's
# reports of bad accesses, whether the run finished; not the sanitizer's exit status alone,
# which also counts failed CUDA API calls made by torch.
VERDICT="$("$PY" tests/gpu_check.py memcheck "$LOG/memcheck.log" --rc "$RC" --mode "$MODE")"
MEMCHECK_RC=$?
[[ $MEMCHECK_RC -eq 0 ]] || CORRECT=FAILED
[[ -n "$VERDICT" ]] || VERDICT="FAILED: no verdict (tests/gpu_check.py memcheck: exit $MEMCHECK_RC)"
row memcheck "$(head -1 <<<"$VERDICT")"
while IFS= read -r line; do note "$line"; done < <(tail -n +2 <<<"$VERDICT")
[[ $DRY -eq 0 ]] || note "- memcheck: a dry run, on the CPU (compute-sanitizer: ${SANITIZER:-not found})"
write_summary

# ---------------------------------------------------------------- benchmark

if [[ $DRY -eq 1 ]]; then
  B1=(--device cpu --size "$OP_SIZE" --rounds 3 --calls 2 --op-size "$OP_SIZE")
  B2=(--device cpu --sizes "4096,$SWEEP_TOP" --rounds 2 --calls 2 --roofline-size "$SWEEP_TOP")
else
  B1=(--size "$OP_SIZE" --rounds 50 --calls 100 --op-size "$OP_SIZE")
  B2=(--sweep --roofline-size "$SWEEP_TOP")
fi
step bench-1m 40 "$PY" -m experiments.bench_cuda "${B1[@]}" --judge --out "$LOG/bench.jsonl"
RC1=$RC
mv "$LOG/bench-1m.log" "$LOG/bench_1m.md"
row bench-1m "$(bench_result)"
step bench-sweep 70 "$PY" -m experiments.bench_cuda "${B2[@]}" --judge --out "$LOG/bench.jsonl"
RC2=$RC
mv "$LOG/bench-sweep.log" "$LOG/bench_sweep.md"
row bench-sweep "$(bench_result)"
grep -hE '^(PASS|FAIL): ' "$LOG/bench_1m.md" "$LOG/bench_sweep.md" >"$LOG/verdicts.txt"
for rc in $RC1 $RC2; do
  case $rc in
    0) ;;
    3) SPEED=FAILED ;;
    *) CORRECT=FAILED ;; # a benchmark that crashed or ran out of time
  esac
done
if [[ $DRY -eq 1 ]]; then
  note "- speed verdicts: not judged in a dry run (CPU times)"
elif [[ ! -s "$LOG/verdicts.txt" ]]; then
  SPEED=FAILED
  note "- speed verdicts: none (the benchmark did not get as far)"
fi
exit "$(status_code)"
