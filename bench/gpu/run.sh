#!/usr/bin/env bash
# bench/gpu/run.sh - the whole GPU check, on a machine with one NVIDIA GPU,
# in one go (GPU time is short): run it from the repository root after
# bench/gpu/prepare.sh built bench/gpu/bundle/ on a development machine.
# Needs nothing there but the GPU's driver, CUDA's and NCCL's libraries and
# python3 (PyTorch for the yardstick); no MLIR, no network.
#
# Several ranks share the one GPU: NCCL refuses two ranks on one device
# unless each has its own NCCL_HOSTID, and then moves bytes over its socket
# transport: right for correctness, meaningless for transfer timings (only
# the one-rank layer is timed).
#
# Steps (each under a timeout, so nothing hangs; a failed step is a FAIL
# in the table and the script goes on):
#   launcher     does this machine's mpirun start the bundle's executables
#                (built against the development machine's Open MPI)? If not,
#                each rank is started by this script with NCCL_COMM_ID,
#                ZBC_RANK and ZBC_RANKS (no MPI at all), and the table says so.
#   kernels      bin/zbc-cuda-kernel-check: every CUDA kernel against the CPU
#                kernels, fp32 and bf16, attention with and without document
#                ids and cross entropy with ignored labels; its TIME lines
#                include attention on a row of packed documents against the
#                same row unmasked (the work: sum of squared lengths).
#   conformance  bin/zbc-kernel-conformance-cuda: the kernel conformance
#                suite (test/Runtime/KernelConformanceTest.cpp, the CPU's in
#                ctest) against the CUDA Device, fp32, against the reference
#                interpreter; its index-error tests skip (kernel-check has
#                them).
#   equal        gpt-p{2,4}-{f32,bf16}: one SGD step on the GPU equals the
#                CPU backend's (saved by prepare.sh) to 1e-5 / 2e-2.
#   zero         gpt-d2-zero1: data parallel 2 x pipeline 2, --zero 1 (the
#                program's NCCL reduce-scatters, tied all-reduces and
#                all-gathers), two AdamW steps with clipping equal the CPU
#                backend's to 1e-5.
#   trains       gpt-p2-{f32,bf16}, 50 steps: the loss falls; with the
#                CUDA allocation counter preloaded, no device allocation
#                happens during a step.
#   lost rank    gpt-p4-f32, rank 2 killed (SIGKILL) mid-run: every rank
#                exits, non-zero, within 60 s.
#   layer        layer-4096 (a GPT block) and llama-layer-4096 (a
#                Llama-3-8B decoder layer): F, B, W per microbatch from the
#                GPU's events (the difference of a 6-step and a 1-step run,
#                so the first step's plan searches drop out), the runtime's
#                share of the step outside the computes and the optimizer's
#                kernels, and PyTorch eager's F, B, fused BW of the same
#                stage (torch_stage.py --model gpt or llama).
#
# Usage: bench/gpu/run.sh [OUT_DIR]   (default: $OUT, or /tmp/zbc-gpu)
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUNDLE=$ROOT/bench/gpu/bundle
OUT=${1:-${OUT:-/tmp/zbc-gpu}}
TEXT=$BUNDLE/text
mkdir -p "$OUT"
RESULTS=()
record() { RESULTS+=("$(printf '%-34s %-5s %s' "$1" "$2" "$3")"); echo "== $1: $2 $3"; }

[ -d "$BUNDLE" ] || { echo "run.sh: no $BUNDLE (run bench/gpu/prepare.sh first)" >&2; exit 1; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
PYTHON=$(command -v python3)

# The bundle's libraries, only where this machine lacks them.
if ldd "$BUNDLE/gpt-p2-f32/cuda/rank0" | grep -q "not found"; then
  export LD_LIBRARY_PATH=$BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  echo "using the bundle's copies of: $(ls "$BUNDLE/lib" | tr '\n' ' ')"
fi
if ldd "$BUNDLE/gpt-p2-f32/cuda/rank0" | grep "not found"; then
  record "libraries" FAIL "the executables miss libraries (above)"
fi

MPIRUN=$(command -v mpirun || true)
LAUNCHER=mpirun

# launch DIR PROCESSES TIMEOUT ARGS...: runs the rank executables of DIR as
# one job, each process with its own NCCL_HOSTID; the job's exit status.
# With PIPELINE=P the processes are replicas of a P-rank pipeline (process
# k runs rank k mod P, replica after replica).
launch() {
  local dir=$1 ranks=$2 limit=$3
  shift 3
  local pipeline=${PIPELINE:-$ranks}
  if [ "$LAUNCHER" = mpirun ]; then
    local mpmd=()
    for ((r = 0; r < ranks; r++)); do
      [ $r -gt 0 ] && mpmd+=(:)
      mpmd+=(-np 1 env NCCL_HOSTID=zbc-gpu-$r "$dir/rank$((r % pipeline))" "$@")
    done
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
      timeout "$limit" "$MPIRUN" --oversubscribe "${mpmd[@]}"
    return $?
  fi
  local pids=() port=$((20000 + RANDOM % 20000)) status=0
  for ((r = 0; r < ranks; r++)); do
    NCCL_COMM_ID=127.0.0.1:$port ZBC_RANK=$r ZBC_RANKS=$ranks ZBC_LOCAL_RANK=$r \
      NCCL_HOSTID=zbc-gpu-$r timeout "$limit" "$dir/rank$((r % pipeline))" "$@" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
  return $status
}

#--- launcher ----------------------------------------------------------------
probe=(--steps 1 --data "$TEXT" --lr 0.1 --quiet)
if [ -n "$MPIRUN" ] && launch "$BUNDLE/gpt-p2-f32/cuda" 2 120 "${probe[@]}" \
     >"$OUT/launcher-mpirun.log" 2>&1; then
  record "launcher" ok "mpirun ($("$MPIRUN" --version 2>&1 | head -1))"
else
  LAUNCHER=direct
  if launch "$BUNDLE/gpt-p2-f32/cuda" 2 120 "${probe[@]}" >"$OUT/launcher-direct.log" 2>&1; then
    record "launcher" ok "NCCL_COMM_ID, one process per rank (this mpirun failed: $OUT/launcher-mpirun.log)"
  else
    record "launcher" FAIL "neither mpirun nor NCCL_COMM_ID ran 2 ranks ($OUT/launcher-*.log)"
  fi
fi

#--- kernels -----------------------------------------------------------------
timeout 600 "$BUNDLE/bin/zbc-cuda-kernel-check" >"$OUT/kernel-check.log" 2>&1
status=$?
if [ $status = 0 ]; then
  record "kernels" ok "$(grep -c PASS "$OUT/kernel-check.log") checks passed"
else
  record "kernels" FAIL "exit $status: $(grep -c FAIL "$OUT/kernel-check.log") failed; $(tail -1 "$OUT/kernel-check.log")"
fi

#--- conformance -------------------------------------------------------------
timeout 300 "$BUNDLE/bin/zbc-kernel-conformance-cuda" >"$OUT/conformance.log" 2>&1
status=$?
passed=$(grep -o '\[  PASSED  \] [0-9]* test' "$OUT/conformance.log" | grep -o '[0-9]*')
skipped=$(grep -o '\[  SKIPPED \] [0-9]* test' "$OUT/conformance.log" | grep -o '[0-9]*')
if [ $status = 0 ] && ! grep -q "no CUDA device" "$OUT/conformance.log"; then
  record "conformance" ok "${passed:-0} tests passed, ${skipped:-0} skipped"
else
  record "conformance" FAIL "exit $status: $(grep -c '^\[  FAILED  \] KernelConformance' "$OUT/conformance.log") failed ($OUT/conformance.log)"
fi

#--- equal -------------------------------------------------------------------
for p in 2 4; do
  for precision in f32 bf16; do
    case=gpt-p$p-$precision
    tolerance=1e-5
    [ "$precision" = bf16 ] && tolerance=2e-2
    rm -rf "$OUT/$case"
    if launch "$BUNDLE/$case/cuda" "$p" 180 --steps 1 --data "$TEXT" --lr 0.1 \
         --save "$OUT/$case/saved" --quiet >"$OUT/$case.log" 2>&1; then
      line=$("$PYTHON" "$ROOT/bench/gpu/compare.py" "$BUNDLE/$case/ref" "$OUT/$case/saved" \
             --tolerance "$tolerance" 2>&1)
      status=$?
      record "one step, $case" "$([ $status = 0 ] && echo ok || echo FAIL)" "$line"
    else
      record "one step, $case" FAIL "the run failed ($OUT/$case.log)"
    fi
  done
done

#--- zero --------------------------------------------------------------------
case=gpt-d2-zero1
rm -rf "$OUT/$case"
if PIPELINE=2 launch "$BUNDLE/$case/cuda" 4 180 --steps 2 --data "$TEXT" \
     --clip-norm 0.5 --save "$OUT/$case/saved" --quiet >"$OUT/$case.log" 2>&1; then
  line=$("$PYTHON" "$ROOT/bench/gpu/compare.py" "$BUNDLE/$case/ref" "$OUT/$case/saved" \
         --tolerance 1e-5 2>&1)
  status=$?
  record "two steps, $case" "$([ $status = 0 ] && echo ok || echo FAIL)" "$line"
else
  record "two steps, $case" FAIL "the run failed ($OUT/$case.log)"
fi

#--- trains ------------------------------------------------------------------
for precision in f32 bf16; do
  case=gpt-p2-$precision
  rm -rf "$OUT/$case-50"
  if LD_PRELOAD=$BUNDLE/lib/libzbc_cuda_alloc_counter.so \
       launch "$BUNDLE/$case/cuda" 2 300 --steps 50 --data "$TEXT" --lr 0.1 \
       --report "$OUT/$case-50" >"$OUT/$case-50.log" 2>&1; then
    line=$("$PYTHON" - "$OUT/$case-50" <<'EOF'
import json, sys
reports = [json.load(open(f"{sys.argv[1]}/rank{r}.json")) for r in (0, 1)]
losses = reports[1]["losses"]
allocations = [r["device_allocations_in_steps"] for r in reports]
ok = losses[-1] < losses[0] - 0.5 and allocations == [0, 0]
print(f"loss {losses[0]:.4f} -> {losses[-1]:.4f}; device allocations in "
      f"steps {allocations}")
sys.exit(0 if ok else 1)
EOF
)
    status=$?
    record "50 steps, $case" "$([ $status = 0 ] && echo ok || echo FAIL)" "$line"
  else
    record "50 steps, $case" FAIL "the run failed ($OUT/$case-50.log)"
  fi
done

#--- lost rank ---------------------------------------------------------------
launch "$BUNDLE/gpt-p4-f32/cuda" 4 120 --steps 100000 --data "$TEXT" --lr 0.01 \
  --timeout 20 >"$OUT/lost-rank.log" 2>&1 &
job=$!
sleep 8
killed=no
grep -q "^step " "$OUT/lost-rank.log" && pkill -KILL -f "gpt-p4-f32/cuda/rank2" && killed=yes
begin=$(date +%s)
wait "$job"
status=$?
seconds=$(($(date +%s) - begin))
if [ $killed = yes ] && [ $status != 0 ] && [ $seconds -lt 60 ] &&
   ! pgrep -f "gpt-p4-f32/cuda/rank" >/dev/null; then
  record "lost rank" ok "rank 2 killed mid-run: the job ended (exit $status) $seconds s later"
else
  record "lost rank" FAIL "killed: $killed (the job must be training first), exit $status after $seconds s ($OUT/lost-rank.log)"
  pkill -KILL -f "gpt-p4-f32/cuda/rank" || true
fi

#--- layer -------------------------------------------------------------------
# time_layer CASE MODEL: the one-rank stage CASE (prepare.sh) against
# torch_stage.py --model MODEL.
time_layer() {
  local case=$1 model=$2 layer=$BUNDLE/$1/cuda ok=1
  for steps in 1 6; do
    rm -rf "$OUT/$case-$steps"
    launch "$layer" 1 300 --steps $steps --lr 0.01 --report "$OUT/$case-$steps" \
      --quiet >"$OUT/$case-$steps.log" 2>&1 || ok=0
  done
  timeout 300 "$PYTHON" "$ROOT/bench/gpu/torch_stage.py" --model "$model" \
    --out "$OUT/torch-$model.json" >"$OUT/torch-$model.log" 2>&1 || ok=0
  if [ $ok = 0 ]; then
    record "$case" FAIL "a run failed ($OUT/$case-*.log, $OUT/torch-$model.log)"
    return
  fi
  while IFS= read -r line; do RESULTS+=("$line"); echo "$line"; done < <("$PYTHON" - "$OUT" "$case" "$model" <<'EOF'
import json, sys
out, case, model = sys.argv[1:4]
one, six = (json.load(open(f"{out}/{case}-{s}/rank0.json")) for s in (1, 6))
def per_kind(report):
    return {c["kind"]: (c["seconds"], c["count"]) for c in report["profile"]["computes"]}
a, b = per_kind(one), per_kind(six)
zbc = {k: (b[k][0] - a[k][0]) / (b[k][1] - a[k][1]) * 1e3 for k in b}
steps = six["profile"]["step_seconds"] - one["profile"]["step_seconds"]
busy = sum(b[k][0] - a[k][0] for k in b) + (
    six["profile"]["optimizer_seconds"] - one["profile"]["optimizer_seconds"])
torch = json.load(open(f"{out}/torch-{model}.json"))
t = {"F": torch["F_ms"], "B": torch["B_ms"], "W": torch["BW_ms"] - torch["B_ms"]}
label = lambda what: f"{case} {what}".ljust(34)
for k in "FBW":
    print(f"{label(k)}{'ok' if zbc[k] <= 1.1 * t[k] else 'FAIL':<6}"
          f"zbc {zbc[k]:.3f} ms, PyTorch {t[k]:.3f} ms ({zbc[k] / t[k]:.3f}x)")
bw = zbc["B"] + zbc["W"]
print(f"{label('B+W vs fused')}{'ok' if bw <= 1.05 * torch['BW_ms'] else 'FAIL':<6}"
      f"zbc {bw:.3f} ms, PyTorch {torch['BW_ms']:.3f} ms ({bw / torch['BW_ms']:.3f}x)")
overhead = 1 - busy / steps
print(f"{label('runtime')}{'ok' if overhead < 0.02 else 'FAIL':<6}"
      f"{overhead * 100:.2f}% of {steps / 5 * 1e3:.3f} ms per step outside kernels")
EOF
)
}
time_layer layer-4096 gpt
time_layer llama-layer-4096 llama

echo
echo "zbc GPU check, $(date -u +%Y-%m-%dT%H:%MZ), launcher: $LAUNCHER"
printf '%s\n' "${RESULTS[@]}"
