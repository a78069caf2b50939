#!/usr/bin/env bash
# Build and run the operation-cost microbenchmark (needs g++ and an AVX-512 CPU):
#   run.sh [N]       float32, op_costs.cpp
#   run.sh 16 [N]    bfloat16 and float16, op_costs16.cpp (AVX512-BF16 and F16C too)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
src="$here/op_costs.cpp"
if [[ "${1:-}" == "16" ]]; then
  src="$here/op_costs16.cpp"
  shift
fi
out="$(mktemp -d)"
g++ -O2 -std=c++17 -o "$out/op_costs" "$src"
"$out/op_costs" "$@"
rm -rf "$out"
