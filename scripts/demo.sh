#!/usr/bin/env bash
# Sets everything up (packages, configure, build), then runs zbc on the
# examples: builds the GPT from its C++ DSL program, checks that it matches
# the hand-written IR, prints the summary of every example model and
# schedule, splits the GPT's backward into B and W (per-stage FLOPs and
# activation memory), schedules it with zb-auto, inserts the transfers and
# proves the program (zbc verify), and draws ZB-H1.
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

echo
echo "== The GPT scheduled with zb-auto (8 microbatches), per-rank work:"
"$bin/zbc-opt" examples/gpt.mlir --zb-backward \
  --zb-schedule="kind=zb-auto microbatches=8 report=true" -o "$out/gpt-scheduled.mlir"
"$bin/zbc" check "$out/gpt-scheduled.mlir" | sed -n '/^program/,$p'

echo
echo "== Its sends and receives inserted, and the program proven (deadlock-free under"
echo "   rendezvous p2p, every message matched, exact peak bytes per rank):"
"$bin/zbc" verify "$out/gpt-scheduled.mlir"

echo
echo "== ZB-H1 on 4 ranks, 8 microbatches (unit costs):"
"$bin/zbc" schedule --schedule zb-h1 --ranks 4 --microbatches 8 | sed -n 1,12p
"$bin/zbc" schedule --schedule zb-h1 --ranks 4 --microbatches 8 --format svg -o "$ZBC_BUILD_DIR/zb-h1.svg"
echo "   timeline drawn in $ZBC_BUILD_DIR/zb-h1.svg"
