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
