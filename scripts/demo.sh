#!/usr/bin/env bash
# Sets everything up (packages, configure, build), then runs zbc's main job
# on the example GPT: builds it from its C++ DSL program and checks that it
# matches the hand-written IR, splits its backward into B and W, schedules
# and proves it, then compiles it for 4 ranks under the zero-bubble ZB-H1
# schedule into one executable per rank and trains it with them for 40
# steps on CPU ranks over MPI: the falling loss, the predicted peak bytes
# beside the measured ones, and where the generated code and the picture are.
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
echo "== Compiled for 4 ranks under ZB-H1 (8 microbatches, AdamW), one executable per rank:"
demo="$ZBC_BUILD_DIR/demo-gpt"
rm -rf "$demo"
"$bin/zbc" compile examples/gpt.mlir --ranks 4 --microbatches 8 \
  --schedule zb-h1 --optimizer adamw -o "$demo"

echo
echo "== Trained for 40 steps on 4 CPU ranks (MPI), on counting sequences"
echo "   (examples/data/counting.py); each rank's measured peak beside the proof's:"
python3 examples/data/counting.py "$demo/counting.safetensors"
"$demo/launch.sh" --steps 40 --lr 0.01 --data "$demo/counting.safetensors" \
  | awk '/^step/ { n++; if (n <= 3 || n % 10 == 0) print; next } { print }'
echo
echo "   generated code: $demo/src/rank{0,1,2,3}.cpp"
echo "   schedule:       $demo/schedule.svg"
echo "   report:         $demo/report.json"
