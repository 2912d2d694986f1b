#!/usr/bin/env python3
"""End-to-end tests of compiled pipelines: zbc compile, MPI ranks, the oracle.

Usage: e2e.py MODE --bin BUILD/bin --lib BUILD/lib --work DIR

Modes (one ctest test each, see test/CMakeLists.txt):
  every-schedule  every registered schedule (read from the registry, so one
                  added later is tested too), p in {2, 4}, the example MLP
                  and the packed GPT (one layer or block per stage, v * p
                  stages; --virtual given at p = 2, inferred at p = 4),
                  m = 2p, SGD: after one step every parameter on every rank
                  equals zbc-reference's single-process result to 1e-5
                  relative; per rank the measured peak live bytes equal the
                  verifier's prediction, the arena is at most 1.1x that, and
                  no heap allocation happens during a step (the allocation
                  counter preloaded into every rank). The packed GPT
                  (--packed: a documents input) trains on packed documents
                  (packed.py's packed_data: varied lengths, a split
                  document, padding with -100 targets, microbatches of
                  different real-token counts), the rest on synthetic data.
  every-schedule-llama  the same on the example Llama (zbc-dsl-llama, one
                  layer per stage) and its tied variant, packed.
  packed-data-parallel  packed documents under data parallelism and a step
                  with nothing to train on (test/e2e/packed.py).
  loss-falls      the example GPT on 4 ranks under zb-h1 with AdamW, 50
                  steps on a learnable data file: the loss falls.
  mem-limit       --mem-limit is each rank's whole memory: zb-auto at 75% of
                  zb-h1's peak plans fewer activations, every rank's
                  predicted and measured peak is within the limit; zb-h1
                  there stops at the proof; a limit nothing fits is refused.
  bad-input       an unverifiable program stops before code generation with
                  the verifier's diagnostic; a launch with the wrong number of
                  ranks, a missing executable or an unreadable data file
                  exits non-zero with a message from every rank, never hangs;
                  a memory plan that overlaps live buffers is caught by the
                  rank's ledger.
  training-*      training as users run it (test/e2e/training.py): text data,
                  AdamW with clipping and a learning-rate schedule against
                  the reference, bitwise resume and refused checkpoints, lost
                  ranks, bad training input.
  failures-*, every-cut  failures handled: nothing lost, nothing silent, no
                  orphans or hangs; every cut the partitioner can make
                  (test/e2e/failures.py).
  cuda-*          the CUDA backend where no GPU is (test/e2e/backends.py).
  schedule-files  schedules of one's own: a compute-only CSV, a
                  compute+comms CSV in the user's transfer order and a
                  hand-written zb.program, p in {2, 4}, against the
                  reference (test/e2e/schedule_files.py).
  hosts           deployment: launch.sh over --hosts' hostfile and
                  launch-slurm.sh's --multi-prog file train as one host does
                  (test/e2e/hosts.py).
  levers          each lever mode above in turn (recompute full and
                  selective, checkpoint, offload, both levers mixed); with
                  --cases representative (e2e-levers-quick, the quick loop's
                  and the sanitizer run's) one case each, a linear, an
                  interleaved and a V schedule among them; the normal run's
                  lever tests take --cases covering (recompute.py: half of
                  every lever's cases, every schedule, p and model still
                  under each).
Every command runs under a timeout, so a hang fails the test.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib", "python"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "examples", "data"))
from counting import learnable_data  # noqa: E402
from zbc_models import gpt, llama, mlp, schedules  # noqa: E402
from zbc_e2e import EXAMPLES, expect_failure, fresh_dir, run  # noqa: E402
import backends  # noqa: E402
import checkpoint  # noqa: E402
import failures  # noqa: E402
import hosts  # noqa: E402
import offload  # noqa: E402
import packed  # noqa: E402
import recompute  # noqa: E402
import schedule_files  # noqa: E402
import training  # noqa: E402



def model_source(args, model, stages):
    """The IR of test model `model` with `stages` stages; a name ending in
    "-packed" is the model with a documents input (--packed)."""
    if model == "mlp":
        return mlp(stages)
    flags = ["--packed"] if model.endswith("-packed") else []
    if model.startswith("gpt"):
        return gpt(os.path.join(args.bin, "zbc-dsl-gpt"), stages, *flags)
    # The example Llama (RMSNorm, RoPE with Llama 3's scaling, GQA, SwiGLU),
    # one layer per stage; "llama-tied": its head is the embedding table,
    # one parameter in the first and the last stage.
    if model.startswith("llama-tied"):
        flags.append("--tied")
    return llama(os.path.join(args.bin, "zbc-dsl-llama"), stages, *flags)


def every_schedule(args, models=("mlp", "gpt-packed")):
    zbc = os.path.join(args.bin, "zbc")
    reference = os.path.join(args.bin, "zbc-reference")
    counter = os.path.join(args.lib, "libzbc_alloc_counter.so")
    env = dict(os.environ, LD_PRELOAD=counter)
    cases = [(name, v, p, model) for name, v in schedules(zbc)
             for p in (2, 4) for model in models]
    worst_arena, worst_error, bitwise, compared = 0.0, 0.0, 0, 0
    failures = []
    begin = time.time()
    # The packed models' data: m = 2p reads samples 0..2p-1 of one step.
    os.makedirs(args.work, exist_ok=True)
    packed_file = os.path.join(args.work, "packed.safetensors")
    counted = packed.packed_data(packed_file)
    print(f"packed data: {len(counted)} samples counting {counted} real "
          "tokens", flush=True)
    for name, v, p, model in cases:
        stages = v * p
        case = f"{name}-p{p}-{model}"
        work = fresh_dir(args.work, case)
        source = os.path.join(work, "model.mlir")
        with open(source, "w") as f:
            f.write(model_source(args, model, stages))
        out = os.path.join(work, "out")
        # At p = 4 the stages per rank are left to zbc: the schedule's own,
        # or for an interleaved one the model's stages over the ranks.
        virtual = ["--virtual", str(v)] if p == 2 else []
        run([zbc, "compile", source, "--ranks", str(p), "--microbatches",
             str(2 * p), "--schedule", name, "-o", out] + virtual)
        data = (["--data", packed_file] if model.endswith("-packed")
                else [])
        run([os.path.join(out, "launch.sh"), "--steps", "1", "--quiet",
             "--save", os.path.join(work, "saved"), "--report",
             os.path.join(work, "report")] + data, env=env)
        for r in range(p):
            with open(os.path.join(work, "report", f"rank{r}.json")) as f:
                rep = json.load(f)
            where = f"{case} rank {r}"
            if rep["measured_peak_bytes"] != rep["predicted_peak_bytes"]:
                sys.exit(f"FAILED: {where}: measured peak "
                         f"{rep['measured_peak_bytes']} bytes, predicted "
                         f"{rep['predicted_peak_bytes']}")
            ratio = rep["arena_bytes"] / rep["predicted_peak_bytes"]
            worst_arena = max(worst_arena, ratio)
            if ratio > 1.1:
                failures.append(f"{where}: arena {rep['arena_bytes']} is "
                                f"{ratio:.3f}x the peak "
                                f"{rep['predicted_peak_bytes']}")
            if rep["allocations_in_steps"] != 0:
                sys.exit(f"FAILED: {where}: {rep['allocations_in_steps']} heap "
                         "allocations during steps (the counter was preloaded: "
                         "-1 means it was not)")
        result = run([reference, os.path.join(out, "program.mlir"), "--steps",
                      "1", "--compare", os.path.join(work, "saved")] + data)
        summary = result.stdout.strip().splitlines()[-1]
        numbers = re.search(r"(\d+) parameters .* error (\S+), (\d+) bitwise",
                            summary)
        compared += int(numbers.group(1))
        worst_error = max(worst_error, float(numbers.group(2).rstrip(",")))
        bitwise += int(numbers.group(3))
        print(f"ok {case}: {summary}", flush=True)
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        sys.exit("FAILED:\n" + "\n".join(failures))
    packed_cases = sum(model.endswith("-packed") for *_, model in cases)
    print(f"{len(cases)} of {len(cases)} pipelines ({packed_cases} on packed "
          f"documents) train as the reference: "
          f"{compared} parameters, largest relative error {worst_error:.2e}, "
          f"{bitwise} bitwise equal; measured peak = predicted on every rank; "
          f"worst arena/peak {worst_arena:.3f}; 0 allocations in steps "
          f"({time.time() - begin:.0f} s)")


def loss_falls(args):
    zbc = os.path.join(args.bin, "zbc")
    os.makedirs(args.work, exist_ok=True)
    data = os.path.join(args.work, "counting.safetensors")
    learnable_data(data)
    out = os.path.join(args.work, "gpt")
    run([zbc, "compile", os.path.join(EXAMPLES, "gpt.mlir"), "--ranks", "4",
         "--microbatches", "8", "--schedule", "zb-h1", "--optimizer", "adamw",
         "-o", out])
    report = os.path.join(args.work, "report")
    run([os.path.join(out, "launch.sh"), "--steps", "50", "--data", data,
         "--lr", "0.01", "--quiet", "--report", report])
    with open(os.path.join(report, "rank3.json")) as f:
        losses = json.load(f)["losses"]
    first, last = losses[0], sum(losses[-5:]) / 5
    print(f"loss over 50 AdamW steps: {first:.4f} -> {last:.4f} "
          f"(mean of the last 5)")
    if len(losses) != 50 or not last < 0.5 * first:
        sys.exit(f"FAILED: the loss did not fall to half: {losses}")


def mem_limit(args):
    """--mem-limit is each rank's whole memory (Note [Rank budget])."""
    zbc = os.path.join(args.bin, "zbc")
    gpt_model = os.path.join(EXAMPLES, "gpt.mlir")
    shape = ["--ranks", "4", "--microbatches", "8"]

    def compiled(schedule, limit, check=True):
        out = fresh_dir(args.work, f"{schedule}-{limit}")
        result = run([zbc, "compile", gpt_model, *shape, "--schedule", schedule,
                      "--mem-limit", str(limit), "-o", out], check=check)
        return out, result

    # zb-h1 holds up to `most` bytes on a rank (it reads no limit); at 75%
    # of that zb-auto plans fewer activations, and every rank's whole
    # memory fits.
    out, _ = compiled("zb-h1", 0)
    with open(os.path.join(out, "report.json")) as f:
        most = max(r["peak_bytes"] for r in json.load(f)["memory"])
    limit = int(0.75 * most)
    out, _ = compiled("zb-auto", limit)
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    peaks = [r["peak_bytes"] for r in report["memory"]]
    budget = report["activation_budget_bytes"]
    if max(peaks) > limit or not budget < limit:
        sys.exit(f"FAILED: at --mem-limit {limit} the peaks are {peaks}, the "
                 f"activation budget {budget}")
    measured = os.path.join(args.work, "measured")
    run([os.path.join(out, "launch.sh"), "--steps", "1", "--quiet",
         "--report", measured])
    for r, peak in enumerate(peaks):
        with open(os.path.join(measured, f"rank{r}.json")) as f:
            got = json.load(f)["measured_peak_bytes"]
        if got != peak:
            sys.exit(f"FAILED: rank {r} measured {got} bytes, predicted {peak}")
    print(f"ok: zb-auto within --mem-limit {limit} (zb-h1: {most}): "
          f"activations planned within {budget} bytes, peaks {peaks} measured")

    # A schedule that reads no limit still stops at the proof, which names
    # the rank, the op and what it holds; a limit no budget fits names the
    # rank's own memory.
    _, result = compiled("zb-h1", limit, check=False)
    if result.returncode == 0 or "over the memory limit of " + str(limit) \
            not in result.stderr:
        sys.exit(f"FAILED: zb-h1 at --mem-limit {limit}:\n{result.stderr}")
    print("ok: " + next(line for line in result.stderr.splitlines()
                        if "over the memory limit" in line))
    _, result = compiled("zb-auto", 1000, check=False)
    if result.returncode == 0 or "no schedule within --mem-limit 1000 bytes " \
            "per rank" not in result.stderr:
        sys.exit(f"FAILED: zb-auto at --mem-limit 1000:\n{result.stderr}")
    print("ok: " + result.stderr.splitlines()[-1])


def bad_input(args):
    zbc = os.path.join(args.bin, "zbc")
    os.makedirs(args.work, exist_ok=True)
    out = os.path.join(args.work, "mlp")
    shutil.rmtree(out, ignore_errors=True)
    run([zbc, "compile", os.path.join(EXAMPLES, "mlp.mlir"), "--ranks", "2",
         "--microbatches", "2", "-o", out])
    with open(os.path.join(out, "program.mlir")) as f:
        program = f.read()

    # A deadlock: rank 0's first F waits for a gradient of its microbatch.
    recv = re.search(r"\n( *)(%recv_grad1_0 = zb.recv [^\n]*)", program)
    broken = program.replace(recv.group(0), "")
    broken = re.sub(r"(%F0_0 = zb.compute F stage 0 mb 0)",
                    recv.group(2) + "\n" + recv.group(1) +
                    r"\1 after(%recv_grad1_0)", broken, count=1)
    bad = os.path.join(args.work, "deadlock.mlir")
    with open(bad, "w") as f:
        f.write(broken)
    bad_out = os.path.join(args.work, "deadlock")
    shutil.rmtree(bad_out, ignore_errors=True)
    result = run([zbc, "compile", bad, "--ranks", "2", "--microbatches", "2",
                  "-o", bad_out], check=False)
    if (result.returncode == 0 or "deadlock" not in result.stderr or
            "deadlock.mlir:" not in result.stderr or
            os.path.exists(os.path.join(bad_out, "src", "rank0.cpp"))):
        sys.exit("FAILED: an unverifiable program was not stopped before "
                 f"code generation:\n{result.stderr}")
    print("ok: unverifiable program stopped: " + result.stderr.splitlines()[0])

    mpirun = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to",
              "none"]
    # Three processes of a two-rank program.
    expect_failure(mpirun + ["-np", "3", os.path.join(out, "rank0")], 3,
                   "this job has 3 ranks, but the program was compiled for 2")
    # The executables in the wrong order.
    expect_failure(mpirun + ["-np", "1", os.path.join(out, "rank1"), ":",
                             "-np", "1", os.path.join(out, "rank0")], 2,
                   "error:")
    # An unreadable data file.
    expect_failure([os.path.join(out, "launch.sh"), "--data",
                    os.path.join(args.work, "no-such-file.safetensors")], 2,
                   "no-such-file.safetensors")
    # A plan that overlaps two live buffers (the generated table edited):
    # the ledger stops the rank at the first read of the clobbered bytes,
    # and the job ends.
    source = os.path.join(out, "src", "rank1.cpp")
    with open(source) as f:
        code = f.read()
    at = re.search(r'\{"in.0 of stage 1 mb 0", (\d+),', code).group(1)
    code = re.sub(r'(\{"F.0 of stage 1 mb 0", )\d+,', r"\g<1>" + at + ",", code)
    with open(source, "w") as f:
        f.write(code)
    with open(os.path.join(out, "build.log")) as f:
        build = next(line[2:].split() for line in f
                     if line.startswith("$ ") and "rank1.cpp" in line)
    run(build)
    expect_failure([os.path.join(out, "launch.sh")], 1,
                   "reads in.0 of stage 1 mb 0 after F.0 of stage 1 mb 0 was "
                   "written over its bytes")
    # A missing executable.
    os.remove(os.path.join(out, "rank1"))
    expect_failure([os.path.join(out, "launch.sh")], 1, "rank1 is missing")
    expect_failure(mpirun + ["-np", "1", os.path.join(out, "rank0"), ":",
                             "-np", "1", os.path.join(out, "rank1")], 1,
                   "rank1")


# The lever equivalence modes, which `levers` runs one after another (with
# --cases representative: e2e-levers-quick).
LEVER_MODES = ("recompute-equivalence", "recompute-selective-equivalence",
               "checkpoint-equivalence", "offload-equivalence",
               "levers-mixed-equivalence")


def main():
    parser = argparse.ArgumentParser()
    modes = {"every-schedule": every_schedule,
             "every-schedule-llama":
                 lambda a: every_schedule(a, ("llama", "llama-tied-packed")),
             "loss-falls": loss_falls,
             "mem-limit": mem_limit, "bad-input": bad_input, **training.MODES,
             **failures.MODES, **backends.MODES, **schedule_files.MODES,
             **hosts.MODES, **packed.MODES, **recompute.MODES, **offload.MODES,
             **checkpoint.MODES}
    modes["levers"] = lambda a: [modes[m](a) for m in LEVER_MODES]
    parser.add_argument("mode", choices=sorted(modes))
    parser.add_argument("--cases",
                        choices=("all", "representative", "covering"),
                        default="all",
                        help="of the lever modes' (and training-zero's and "
                             "training-tied's) cases: all, the "
                             "representative ones (the quick loop's and the "
                             "sanitizer run's) or CI's covering without them "
                             "(recompute.chosen_cases)")
    parser.add_argument("--bin", required=True)
    parser.add_argument("--lib", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    args.bin, args.lib, args.work = (os.path.abspath(p) for p in
                                     (args.bin, args.lib, args.work))
    modes[args.mode](args)


if __name__ == "__main__":
    main()
