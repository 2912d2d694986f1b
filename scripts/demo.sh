#!/usr/bin/env bash
# Sets everything up (packages, configure, build), then runs zbc on the
# examples: builds the GPT from its C++ DSL program, checks that it matches
# the hand-written IR, prints the summary of every example model and
# schedule, and splits the GPT's backward into B and W (per-stage FLOPs and
# activation memory).
set -euo pipefail
source "$(dirname "$0")/setup.sh"
zbc_setup
bin="$ZBC_BUILD_DIR/bin"
cd "$ZBC_ROOT"

echo
echo "== The GPT example, written in C++ with the zbc DSL (examples/dsl/gpt.cpp):"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$bin/zbc-dsl-gpt" -o "$out/gpt-from-dsl.mlir"
if diff <("$bin/zbc-opt" "$out/gpt-from-dsl.mlir") <("$bin/zbc-opt" examples/gpt.mlir) >/dev/null; then
  echo "   same IR as examples/gpt.mlir"
else
  echo "zbc: error: the DSL GPT and examples/gpt.mlir differ" >&2
  exit 1
fi

echo
"$bin/zbc" check examples/*.mlir

echo
echo "== Backward of the GPT split into B (input gradient) and W (weight gradient):"
"$bin/zbc" split examples/gpt.mlir
