#!/bin/bash
# zbc as an installed package: `cmake --install` into a fresh prefix, then a
# user's project out of zbc's tree (examples/dsl, find_package(zbc)) builds
# the DSL examples against it; their MLP prints the IR of examples/mlp.mlir,
# and the prefix's own zbc compiles and trains their Llama, finding its
# runtime (headers and libraries) in the prefix.
#
# Usage: out-of-tree.sh BUILD_DIR SOURCE_DIR WORK_DIR
set -euo pipefail
build=$1 source=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" > "$work/install.log"
test -x "$prefix/bin/zbc" && test -x "$prefix/bin/zbc-opt"
test -f "$prefix/lib/cmake/zbc/zbcConfig.cmake"
test -f "$prefix/include/zbc/runtime/zbc_runtime.h"

cmake -S "$source/examples/dsl" -B "$work/dsl" -G Ninja \
  -DCMAKE_PREFIX_PATH="$prefix" > "$work/configure.log"
cmake --build "$work/dsl" -j 2 > "$work/build.log"

"$work/dsl/zbc-dsl-mlp" -o "$work/mlp.mlir"
"$prefix/bin/zbc-opt" "$work/mlp.mlir" > "$work/mlp.dsl.mlir"
"$prefix/bin/zbc-opt" "$source/examples/mlp.mlir" > "$work/mlp.file.mlir"
diff "$work/mlp.dsl.mlir" "$work/mlp.file.mlir"
echo "ok: examples/dsl built out of tree against $prefix; its MLP prints examples/mlp.mlir"

"$work/dsl/zbc-dsl-llama" --layers 2 --no-cuts > "$work/llama.mlir"
(cd "$work" && "$prefix/bin/zbc" run llama.mlir --ranks 2 --microbatches 4 \
   --steps 2 -o run > run.log 2>&1) || { cat "$work/run.log"; exit 1; }
grep -q "step 2/2" "$work/run.log"
# The rank programs were built against the prefix's runtime, not the build's.
grep -q -- "-I$prefix/include" "$work/run/build.log"
grep -q "$prefix/lib/libzbc_runtime.a" "$work/run/build.log"
echo "ok: $prefix/bin/zbc compiled and trained the DSL's Llama with the prefix's runtime: $(grep 'step 2/2' "$work/run.log")"

# Schedules of one's own: examples/schedules (a variant of 1F1B and looped
# BFS) built as a plugin against the prefix, compiled and trained by the
# prefix's zbc, each parameter held to the single-process reference; and a
# plugin of broken schedules, refused before code generation.
reference=$build/bin/zbc-reference
cmake -S "$source/examples/schedules" -B "$work/schedules" -G Ninja \
  -DCMAKE_PREFIX_PATH="$prefix" > "$work/schedules-configure.log"
cmake --build "$work/schedules" > "$work/schedules-build.log"
plugin=$work/schedules/libzbc-example-schedules.so
"$prefix/bin/zbc" schedule --schedule-plugin "$plugin" --list > "$work/list.txt"
grep -q "^deferred-w-1f1b" "$work/list.txt" && grep -q "^looped-bfs" "$work/list.txt"
# The DSL's GPT, one block per stage: p stages for the linear schedule, 2p
# for looped BFS on the interleaved placement.
for layers in 2 4 8; do
  "$work/dsl/zbc-dsl-gpt" --layers $layers > "$work/gpt$layers.mlir"
done
for case in "deferred-w-1f1b 4 8 sgd 4" "looped-bfs 2 4 adamw 4" \
            "deferred-w-1f1b 2 4 adamw 2" "looped-bfs 4 8 sgd 8"; do
  set -- $case
  out=$work/$1-p$2
  eps=(); [ "$4" = adamw ] && eps=(--eps 1e-2)
  "$prefix/bin/zbc" compile "$work/gpt$5.mlir" --schedule-plugin "$plugin" \
    --schedule "$1" --ranks "$2" --microbatches "$3" --optimizer "$4" \
    -o "$out" > "$out.log" 2>&1 || { cat "$out.log"; exit 1; }
  "$out/launch.sh" --steps 1 --quiet --save "$out/saved" "${eps[@]}"
  "$reference" "$out/program.mlir" --steps 1 --compare "$out/saved" \
    "${eps[@]}" > "$out.reference" || { cat "$out.reference"; exit 1; }
  echo "ok: $1, p = $2 ($4): $(head -1 "$out.log"); $(tail -1 "$out.reference")"
done

cmake -S "$source/test/install/broken-schedules" -B "$work/broken" -G Ninja \
  -DCMAKE_PREFIX_PATH="$prefix" > "$work/broken-configure.log"
cmake --build "$work/broken" > "$work/broken-build.log"
broken=$work/broken/libzbc-broken-schedules.so
expect_refused() { # SCHEDULE TEXT
  if "$prefix/bin/zbc" compile "$source/examples/mlp.mlir" \
      --schedule-plugin "$broken" --schedule "$1" --ranks 2 \
      --microbatches 2 -o "$work/refused-$1" > "$work/$1.log" 2>&1; then
    echo "FAILED: schedule $1 compiled"; exit 1
  fi
  grep -qF -- "$2" "$work/$1.log" || { cat "$work/$1.log"; exit 1; }
  test ! -e "$work/refused-$1/src/rank0.cpp" # stopped before code generation
  echo "ok: $1 refused: $(grep -F -- "$2" "$work/$1.log" | head -1)"
}
expect_refused backward-first \
  "schedule 'backward-first': rank 1, stage 1, microbatch 0: BW(1,0) (action 0) runs before F(1,0) (action 1)"
expect_refused crossed-waits \
  "rank 1: F(1,1) (action 0, microbatch 1) waits for F(0,1) on rank 0 (action 2), which is stuck at BW(0,0) (action 1)"
if "$prefix/bin/zbc" schedule --schedule-plugin "$source/README.md" --list \
    > "$work/not-a-plugin.log" 2>&1; then
  echo "FAILED: README.md loaded as a plugin"; exit 1
fi
grep -q "cannot load it" "$work/not-a-plugin.log"
echo "ok: $(cat "$work/not-a-plugin.log")"
