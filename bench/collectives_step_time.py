#!/usr/bin/env python3
"""The gradient all-reduces in the program against the runtime's own.

A GPT (zbc-dsl-gpt, untied) on data parallel D x pipeline P CPU ranks:
  program   this build: each stage's gradients summed by a zb.all_reduce of
            the program, placed after the stage's last W (Note [Collectives
            in the program]);
  runtime   --baseline-build, a build from before the collectives were in
            the program: the runtime started an MPI_Iallreduce per
            parameter from its optimizer step, after the parameter's last W;
each compiled with the same schedule and trained --steps steps, --rounds
times in turn (these machines are noisy: the ratio is taken within each
round). From every rank's report: the step time (the slowest rank's mean)
and, for `program`, the time its step's end waited for the all-reduces (the
measured exposed share: the slowest rank's wait over its step time).

Beside the measured share, the simulator's (Note [Collectives in the
simulator]): the model's stage times measured by `zbc profile` (ms), the
all-reduce bandwidth measured by zbc-bench-allreduce between D processes
for the largest stage's gradient bytes, and `zbc compile --cost-file
--collective-bandwidth`'s predicted exposed share.

Usage: bench/collectives_step_time.py [--build build] [--baseline-build DIR]
       [--ranks 2] [--replicas 2] [--microbatches 8] [--schedule zb-h1]
       [--steps 6] [--rounds 3] [--hidden 256] [--work DIR] [--smoke]
(--smoke: a small model, one step, one round, no baseline: a check that it
runs and its reports parse, as ctest's bench family runs it; its times mean
nothing.)
"""
import argparse
import json
import os
import re
import statistics
import sys
import tempfile

from rank_runs import run, train

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--baseline-build", default=None)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--microbatches", type=int, default=8)
    parser.add_argument("--schedule", default="zb-h1")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--work", default=None)
    parser.add_argument("--smoke", action="store_true",
                        help="a small model, one step, one round: checks "
                        "that it runs")
    args = parser.parse_args()
    if args.smoke:
        args.hidden, args.steps, args.rounds = 32, 1, 1
        args.microbatches = 2 * args.replicas
        args.baseline_build = None
    work = os.path.abspath(args.work or tempfile.mkdtemp(prefix="zbc-coll-"))
    os.makedirs(work, exist_ok=True)
    bin_ = os.path.join(args.build, "bin")
    model = os.path.join(work, "gpt.mlir")
    with open(model, "w") as f:
        f.write(run([os.path.join(bin_, "zbc-dsl-gpt"), "--layers",
                     str(args.ranks), "--hidden", str(args.hidden), "--heads",
                     "4", "--seq", "64", "--batch", "2", "--vocab",
                     "1024"]).stdout)

    builds = [("program", bin_)]
    if args.baseline_build:
        builds.append(("runtime", os.path.join(args.baseline_build, "bin")))
    shape = ["--ranks", str(args.ranks), "--data-parallel", str(args.replicas),
             "--microbatches", str(args.microbatches), "--schedule",
             args.schedule, "--optimizer", "adamw"]
    compiled = {}
    for name, where in builds:
        out = os.path.join(work, name)
        run([os.path.join(where, "zbc"), "compile", model, *shape, "-o", out])
        compiled[name] = out

    step = {name: [] for name, _ in builds}
    ratio, waited = [], []
    for round_ in range(args.rounds):
        times = {}
        for name, _ in builds:
            reports = train(compiled[name], args.steps,
                            os.path.join(work, f"report-{name}-{round_}"))
            times[name] = max(r["profile"]["step_seconds"]
                              for r in reports) / args.steps
            if name == "program":
                waited.append(max(r["profile"]["collective_wait_seconds"]
                                  for r in reports) / args.steps / times[name])
        for name, _ in builds:
            step[name].append(times[name])
        if "runtime" in times:
            ratio.append(times["program"] / times["runtime"])

    # The simulator's share: measured stage times, measured all-reduce.
    costs = os.path.join(work, "costs.json")
    run([os.path.join(bin_, "zbc"), "profile", model, "--stages",
         str(args.ranks), "--steps", "2" if args.smoke else "3", "-o", costs])
    program = open(os.path.join(compiled["program"], "program.mlir")).read()
    sums = [int(b) for b in re.findall(r"zb\.all_reduce .* : (\d+) bytes",
                                       program)]
    largest = max(sums)
    probe = json.loads(run(["mpirun", "--allow-run-as-root", "--bind-to",
                            "none", "--oversubscribe", "-np",
                            str(args.replicas),
                            os.path.join(bin_, "zbc-bench-allreduce"),
                            str(largest), "3" if args.smoke else "20"]
                           ).stdout.strip().splitlines()[-1])
    ring = 2 * (args.replicas - 1) / args.replicas
    bandwidth = ring * largest / probe["ms"]  # bytes per ms, as the ring
    predicted = run([os.path.join(bin_, "zbc"), "compile", model, *shape,
                     "--cost-file", costs, "--collective-bandwidth",
                     f"{bandwidth:.0f}", "-o",
                     os.path.join(work, "predicted")]).stdout
    line = re.search(r"gradient all-reduces: ([0-9.e+-]+) on the busiest rank, "
                     r"([0-9.e+-]+) of it exposed \(([0-9.]+) of", predicted)
    if not line:
        sys.exit(f"zbc compile did not time the all-reduces:\n{predicted}")

    print(f"GPT hidden {args.hidden}, data {args.replicas} x pipeline "
          f"{args.ranks}, {args.schedule}, {args.microbatches} microbatches, "
          f"AdamW, {args.steps} steps x {args.rounds} rounds")
    print(f"all-reduce of {largest} bytes over {args.replicas} processes: "
          f"{probe['ms']:.3f} ms (ring bandwidth {bandwidth:.0f} bytes/ms)")
    print("| reductions | step ms (median) | vs runtime (median ratio) "
          "| exposed share measured | exposed share predicted |")
    print("|---|---|---|---|---|")
    print(f"| in the program | {1000 * statistics.median(step['program']):.2f} "
          f"| {statistics.median(ratio):.3f} "
          if ratio else
          f"| in the program | {1000 * statistics.median(step['program']):.2f} "
          f"| - ", end="")
    print(f"| {statistics.median(waited):.4f} | {float(line.group(3)):.4f} |")
    if "runtime" in step:
        print(f"| by the runtime | {1000 * statistics.median(step['runtime']):.2f}"
              f" | 1 | - | - |")


if __name__ == "__main__":
    main()
