#!/usr/bin/env bash
# Sets everything up (packages, configure, build), then runs zbc's main job
# on the example GPT: builds it from its C++ DSL program and checks that it
# matches the hand-written IR, splits its backward into B and W, schedules
# and proves it, then compiles it for 4 ranks under the zero-bubble ZB-H1
# schedule into one executable per rank and trains it with them on text
# (the GPL's bytes) on CPU ranks over MPI: the falling training and
# held-out losses beside the text's unigram entropy, the measured bubble and
# peak bytes beside the predicted ones, then resumes from a checkpoint and
# gets the same losses; last, compiles it under zb-auto within a per-rank
# memory limit.
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
  --zb-schedule="schedule=zb-auto microbatches=8 report=true" -o "$out/gpt-scheduled.mlir"
"$bin/zbc" check "$out/gpt-scheduled.mlir" | sed -n '/^program/,$p'

echo
echo "== Its sends and receives inserted, and the program proven (deadlock-free under"
echo "   rendezvous p2p, every message matched, exact peak bytes per rank):"
"$bin/zbc" verify "$out/gpt-scheduled.mlir"

echo
echo "== Compiled for 4 ranks under ZB-H1 (8 microbatches, AdamW), one executable per"
echo "   rank, and trained on text: the bytes of the GNU GPL, a held-out tenth, a"
echo "   warm-up and cosine learning rate, clipping, a checkpoint every 100 steps:"
demo="$ZBC_BUILD_DIR/demo-gpt"
text=/usr/share/common-licenses/GPL-3
rm -rf "$demo"
train=(--steps 300 --data "$text" --lr 3e-3 --warmup 20 --decay-steps 300
       --clip-norm 1 --eval-every 100)
"$bin/zbc" run examples/gpt.mlir --ranks 4 --microbatches 8 --schedule zb-h1 \
  --optimizer adamw "${train[@]}" --checkpoint-every 100 -o "$demo" \
  | awk '/^step/ { n++; if (n <= 2 || n % 50 == 0) print; next } { print }' \
  | tee "$out/run.log"

echo
echo "== Resumed from the checkpoint after step 200: the last 100 steps again, bit"
echo "   for bit the same losses:"
"$demo/launch.sh" "${train[@]}" --resume "$demo/checkpoints/step-200" \
  | grep -E '^(resuming|step 300|eval after step 300)' | tee "$out/resumed.log"
loss_at_300() { awk '/^step 300/ { print $4 }' "$1"; }
if [ -n "$(loss_at_300 "$out/run.log")" ] &&
   [ "$(loss_at_300 "$out/run.log")" = "$(loss_at_300 "$out/resumed.log")" ]; then
  echo "   step 300's loss is the same: $(loss_at_300 "$out/run.log")"
else
  echo "zbc: error: the resumed run's loss differs" >&2
  exit 1
fi

echo
echo "== The same GPT held to 2.8 MB per rank (ZB-H1 above needs 3.1 MB): zb-auto"
echo "   plans its activations within what parameters, optimizer state and"
echo "   temporaries leave, proven for every rank:"
"$bin/zbc" compile examples/gpt.mlir --ranks 4 --microbatches 8 --schedule zb-auto \
  --optimizer adamw --mem-limit 2800000 -o "$out/limited" \
  | grep -E 'compiled|bubble|memory limit|rank [0-9]:'

echo
echo "   generated code: $demo/src/rank{0,1,2,3}.cpp"
echo "   schedule:       $demo/schedule.svg (predicted), $demo/timeline.svg (measured)"
echo "   trace:          $demo/trace.json (Perfetto)"
echo "   checkpoints:    $demo/checkpoints/step-{100,200,300}"
