#!/usr/bin/env bash
# Build and run the operation-cost microbenchmark (needs g++ and an AVX-512 CPU).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$(mktemp -d)"
g++ -O2 -std=c++17 -o "$out/op_costs" "$here/op_costs.cpp"
"$out/op_costs" "$@"
rm -rf "$out"
