#!/usr/bin/env bash
# Times zbc's backward passes (zb-partition, zb-autodiff, zb-split-backward)
# on a 96-layer GPT-style model with hidden size 8192, built by the DSL
# example. Prints the median of several runs of
#   parse:    zbc-opt reading, verifying and printing the model (no passes)
#   backward: the same plus --zb-backward=stages=8
# so the passes' own cost is the difference, measured in the same run.
#
# Usage: bench/backward-passes.sh [RUNS]   (after ./scripts/test.sh has built)
#        bench/backward-passes.sh --smoke  (one run of each on an 8-layer GPT
#        of hidden 64: a check that it runs, as ctest's bench family runs it;
#        its times mean nothing)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${ZBC_BUILD_DIR:-$root/build}/bin
shape=(--layers 96 --hidden 8192 --heads 64 --seq 1024 --batch 1 --vocab 50304)
name="96 layers, hidden 8192, seq 1024, vocab 50304"
if [[ ${1:-} == --smoke ]]; then
  shift
  set -- 1 "$@"
  shape=(--layers 8 --hidden 64 --heads 2 --seq 16 --batch 1 --vocab 256)
  name="8 layers, hidden 64, seq 16, vocab 256 (--smoke)"
fi
runs=${1:-7}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$bin/zbc-dsl-gpt" "${shape[@]}" --no-cuts -o "$work/gpt96.mlir"
ops=$(grep -c ' = zb\.' "$work/gpt96.mlir")

# Median wall time in seconds of running "$@" $runs times.
median() {
  local times=()
  for _ in $(seq "$runs"); do
    local start end
    start=$(date +%s.%N)
    "$@" >/dev/null
    end=$(date +%s.%N)
    times+=("$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')")
  done
  printf '%s\n' "${times[@]}" | sort -g | awk '{ t[NR] = $1 } END { print t[int((NR + 1) / 2)] }'
}

parse=$(median "$bin/zbc-opt" "$work/gpt96.mlir" -o "$work/out.mlir")
backward=$(median "$bin/zbc-opt" "$work/gpt96.mlir" --zb-backward=stages=8 -o "$work/out.mlir")
split_ops=$(grep -c ' = zb\.' "$work/out.mlir")

echo "model: GPT, $name ($ops model ops)"
echo "after --zb-backward=stages=8: $split_ops ops in 8 stages"
printf 'parse+verify+print:            %.3f s (median of %d)\n' "$parse" "$runs"
printf 'with partition+autodiff+split: %.3f s (median of %d)\n' "$backward" "$runs"
awk -v b="$backward" -v p="$parse" 'BEGIN { printf "ratio backward/parse:          %.2f\n", b / p }'
