#!/usr/bin/env bash
# bench/gpu/prepare.sh - builds, on the development machine, everything the
# GPU check (bench/gpu/run.sh) runs, into bench/gpu/bundle/ (git-ignored;
# the device tool carries it: carry ["bench/gpu/bundle"], 64 MiB at most).
#
# The GPU machine has no MLIR and reaches no package registry, so zbc
# itself stays here: the bundle holds CUDA-backend rank executables built
# by `zbc compile --backend cuda`, the CPU backend's results for the same
# programs (the oracle, computed here), the text they train on, the kernel
# check, the kernel conformance suite built for the CUDA device (it links
# the interpreter's kernels, not LLVM), the CUDA allocation counter, and the
# shared libraries the executables need that a GPU machine may lack (fmt,
# Open MPI's; CUDA, cuBLASLt and NCCL are that machine's own).
#
# Cases (the example GPT, zbc-dsl-gpt, one block per stage, zb-h1, m = 2p):
#   gpt-p{2,4}-{f32,bf16}   one SGD step on the GPL-3 text: the parameters
#                           the GPU ends with must equal the CPU backend's
#                           (ref/, saved here) to 1e-5 (f32) / 2e-2 (bf16)
#                           relative; the same executables then run 50
#                           AdamW steps, whose loss must fall.
#   gpt-d2-zero1            the GPT with its head tied to the embedding,
#                           data parallel 2 x pipeline 2 (4 processes),
#                           --zero 1: the program's NCCL reduce-scatters,
#                           tied all-reduces and all-gathers; two AdamW
#                           steps with clipping must equal the CPU
#                           backend's (ref/) to 1e-5 relative.
#   layer-4096              one rank, one stage: the embedding, one GPT
#                           block at h 4096 (32 heads), sequence 2048,
#                           microbatch 1, a final LayerNorm and a 256-way
#                           head, bf16: its F, B and W against PyTorch's
#                           eager run of the same stage (torch_stage.py).
#   llama-layer-4096        the same with one Llama-3-8B decoder layer (h
#                           4096, 32 heads on 8 kv heads, intermediate
#                           14336, rope theta 5e5 with Llama 3's scaling):
#                           the embedding, the layer, RMSNorm and an untied
#                           256-way head (torch_stage.py --model llama).
#
# Usage: bench/gpu/prepare.sh [BUILD_DIR]      (default: build)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
BUNDLE=$ROOT/bench/gpu/bundle
ZBC=$BUILD/bin/zbc
DSL_GPT=$BUILD/bin/zbc-dsl-gpt
TEXT=/usr/share/common-licenses/GPL-3
SGD=(--lr 0.1)

grep -q "ZBC_HAVE_CUDA:INTERNAL=ON\|zbc_runtime_cuda" "$BUILD/build.ninja" \
  || { echo "prepare.sh: $BUILD has no CUDA backend (configure with nvcc and NCCL)" >&2; exit 1; }
ninja -C "$BUILD" -j2 zbc zbc-dsl-gpt zbc-cuda-kernel-check \
  zbc-kernel-conformance-cuda zbc_cuda_alloc_counter >/dev/null

rm -rf "$BUNDLE"
mkdir -p "$BUNDLE/lib" "$BUNDLE/bin"
cp "$TEXT" "$BUNDLE/text"
cp "$BUILD/bin/zbc-cuda-kernel-check" "$BUNDLE/bin/"
cp "$BUILD/test/Runtime/zbc-kernel-conformance-cuda" "$BUNDLE/bin/"
cp "$BUILD/lib/libzbc_cuda_alloc_counter.so" "$BUNDLE/lib/"

for p in 2 4; do
  for precision in f32 bf16; do
    case=gpt-p$p-$precision
    work=$BUNDLE/$case
    mkdir -p "$work"
    flags=()
    [ "$precision" = bf16 ] && flags=(--bf16)
    "$DSL_GPT" --layers "$p" "${flags[@]}" >"$work/model.mlir"
    common=("$work/model.mlir" --ranks "$p" --microbatches $((2 * p)) --schedule zb-h1)
    # The oracle: the CPU backend, one step.
    "$ZBC" run "${common[@]}" -o "$work/cpu" --steps 1 --data "$TEXT" \
      --save "$work/ref" "${SGD[@]}" >/dev/null
    rm -rf "$work/cpu"
    "$ZBC" compile "${common[@]}" --backend cuda -o "$work/cuda" >/dev/null
    # Only the executables and the launch script travel.
    rm -rf "$work/cuda/src" "$work/cuda/build.log" "$work/cuda/schedule.svg" \
      "$work/cuda/program.mlir"
    echo "prepared $case"
  done
done

work=$BUNDLE/gpt-d2-zero1
mkdir -p "$work"
"$DSL_GPT" --layers 2 --tied >"$work/model.mlir"
common=("$work/model.mlir" --ranks 2 --data-parallel 2 --microbatches 8
        --schedule zb-h1 --zero 1 --optimizer adamw)
"$ZBC" run "${common[@]}" -o "$work/cpu" --steps 2 --data "$TEXT" \
  --clip-norm 0.5 --save "$work/ref" >/dev/null
rm -rf "$work/cpu"
"$ZBC" compile "${common[@]}" --backend cuda -o "$work/cuda" >/dev/null
rm -rf "$work/cuda/src" "$work/cuda/build.log" "$work/cuda/schedule.svg" \
  "$work/cuda/program.mlir"
echo "prepared gpt-d2-zero1"

work=$BUNDLE/layer-4096
mkdir -p "$work"
"$DSL_GPT" --layers 1 --hidden 4096 --heads 32 --seq 2048 --batch 1 --vocab 256 \
  --bf16 >"$work/model.mlir"
"$ZBC" compile "$work/model.mlir" --ranks 1 --microbatches 2 --schedule zb-h1 \
  --backend cuda -o "$work/cuda" >/dev/null
rm -rf "$work/cuda/src" "$work/cuda/build.log" "$work/cuda/program.mlir"
echo "prepared layer-4096"

work=$BUNDLE/llama-layer-4096
mkdir -p "$work"
"$BUILD/bin/zbc-dsl-llama" --layers 1 --hidden 4096 --intermediate 14336 \
  --heads 32 --kv-heads 8 --seq 2048 --max-positions 2048 --batch 1 --vocab 256 \
  --rope-theta 500000 --llama3 8,1,4,8192 --bf16 >"$work/model.mlir"
"$ZBC" compile "$work/model.mlir" --ranks 1 --microbatches 2 --schedule zb-h1 \
  --backend cuda -o "$work/cuda" >/dev/null
rm -rf "$work/cuda/src" "$work/cuda/build.log" "$work/cuda/program.mlir"
echo "prepared llama-layer-4096"

# The shared libraries of the executables that are neither CUDA's nor the
# C library's: the GPU machine may lack them (run.sh puts them on
# LD_LIBRARY_PATH only if it does).
ldd "$BUNDLE/gpt-p2-f32/cuda/rank0" | awk '/=>/ {print $3}' \
  | grep -E 'libfmt|libmpi|libopen-|libhwloc|libevent|libudev|libz\.so' \
  | while read -r lib; do cp -L "$lib" "$BUNDLE/lib/"; done
du -sh "$BUNDLE"
