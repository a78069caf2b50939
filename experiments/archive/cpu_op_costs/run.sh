#!/usr/bin/env bash
# Build and run the operation-cost microbenchmark (needs g++ and an AVX-512 CPU; avx2: AVX2,
# FMA and F16C):
#   run.sh [N]       float32, op_costs.cpp
#   run.sh 16 [N]    bfloat16 and float16, op_costs16.cpp (AVX512-BF16 and F16C too)
#   run.sh avx2 [N [THREADS [backward|forward32]]]   bfloat16 and float16 forward (backward:
#                float32 too; forward32: the float32 forward) on an AVX2 CPU, op_costs16_avx2.cpp
#   run.sh half [N]  float16 GELU in half-precision arithmetic (AVX512-FP16), op_costs_half.cpp,
#                with the table of python -m turbogelu.approx.half16 (PYTHON: the interpreter)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
src="$here/op_costs.cpp"
case "${1:-}" in
  16) src="$here/op_costs16.cpp"; shift ;;
  avx2) src="$here/op_costs16_avx2.cpp"; shift ;;
  half) src="$here/op_costs_half.cpp"; shift ;;
esac
out="$(mktemp -d)"
g++ -O2 -std=c++17 -pthread -o "$out/op_costs" "$src"
if [[ "$src" == *op_costs_half.cpp ]]; then
  (cd "$here/../../.." && "${PYTHON:-python}" -m turbogelu.approx.half16 --bin "$out/table.bin" >/dev/null)
  set -- "$out/table.bin" "$@"
fi
"$out/op_costs" "$@"
rm -rf "$out"
