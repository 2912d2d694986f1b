#!/usr/bin/env python3
"""What the memory levers cost on the ranks: step time and measured peaks.

Compiles one model (default examples/gpt-small.mlir) for P ranks under one
schedule four ways, with the same order where the levers allow:
  none       no lever;
  selective  --recompute selective (each stage's R rebuilds only what costs
             no matmul-class FLOPs: layer norms, GELU; Note [Selective
             recomputation]);
  full       --recompute full (every R runs the ops of F that rebuild the
             whole stash);
  offload    --offload full (every stash copied to host memory after its F
             and back before its backward, on the CPU backend's copy thread;
             --copy-bandwidth as given, large by default: copies planned as
             cheap, so the order is the plain one with its copies);
then trains each for --steps steps, --rounds times in turn (none, selective,
full, offload, none, ...), and reads every rank's report: the step time (the
slowest rank's seconds per step; the median over rounds, and each lever's
median ratio to `none` in the same round, since these machines are noisy),
each rank's measured peak device bytes (checked equal to the predicted),
the largest host peak, and the R ops per step.

Usage: bench/levers_step_time.py [--model examples/gpt-small.mlir]
       [--ranks 4] [--microbatches 8] [--schedule zb-h1] [--steps 10]
       [--rounds 3] [--build build] [--work DIR] [--smoke]
(--smoke: examples/mlp.mlir on 2 ranks, 2 microbatches, one step, one round:
a check that it runs and its reports parse, as ctest's bench family runs it;
its times mean nothing.)
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

import rank_runs
from rank_runs import run

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LEVERS = [
    ("none", []),
    ("selective", ["--recompute", "selective"]),
    ("full", ["--recompute", "full"]),
    ("offload", ["--offload", "full"]),
]


def train(out, steps, report):
    reports = rank_runs.train(out, steps, report)
    for rep in reports:
        if rep["measured_peak_bytes"] != rep["predicted_peak_bytes"]:
            sys.exit(f"{out} rank {rep['rank']}: measured peak "
                     f"{rep['measured_peak_bytes']}, predicted "
                     f"{rep['predicted_peak_bytes']}")
    return reports


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model",
                        default=os.path.join(ROOT, "examples", "gpt-small.mlir"))
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--microbatches", type=int, default=8)
    parser.add_argument("--schedule", default="zb-h1")
    parser.add_argument("--copy-bandwidth", default="1e12")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--work", default=None)
    parser.add_argument("--smoke", action="store_true",
                        help="the smallest model, one step, one round: checks "
                        "that it runs")
    args = parser.parse_args()
    if args.smoke:
        args.model = os.path.join(ROOT, "examples", "mlp.mlir")
        args.ranks, args.microbatches, args.steps, args.rounds = 2, 2, 1, 1
    work = os.path.abspath(args.work or tempfile.mkdtemp(prefix="zbc-levers-"))
    zbc = os.path.join(args.build, "bin", "zbc")

    compiled = {}
    for name, options in LEVERS:
        out = os.path.join(work, name)
        extra = (["--copy-bandwidth", args.copy_bandwidth]
                 if "--offload" in options else [])
        run([zbc, "compile", args.model, "--ranks", str(args.ranks),
             "--microbatches", str(args.microbatches), "--schedule",
             args.schedule, *options, *extra, "-o", out])
        with open(os.path.join(out, "report.json")) as f:
            compiled[name] = (out, json.load(f))

    step = {name: [] for name, _ in LEVERS}
    ratio = {name: [] for name, _ in LEVERS}
    last = {}
    for round_ in range(args.rounds):
        times = {}
        for name, _ in LEVERS:
            out = compiled[name][0]
            reports = train(out, args.steps,
                            os.path.join(work, f"report-{name}-{round_}"))
            times[name] = max(r["profile"]["step_seconds"] for r in reports)
            last[name] = reports
        for name, _ in LEVERS:
            step[name].append(times[name])
            ratio[name].append(times[name] / times["none"])

    print(f"{os.path.basename(args.model)}, {args.ranks} ranks, "
          f"{args.schedule}, {args.microbatches} microbatches, "
          f"{args.steps} steps x {args.rounds} rounds")
    print("| lever | predicted bubble | step ms (median) | vs none (median ratio) "
          "| device peak per rank | largest host peak | R per step |")
    print("|---|---|---|---|---|---|---|")
    for name, _ in LEVERS:
        reports = last[name]
        device = [r["measured_peak_bytes"] for r in reports]
        host = max(r["measured_host_peak_bytes"] for r in reports)
        recomputes = sum(c["count"] for r in reports
                         for c in r["profile"]["computes"]
                         if c["kind"] == "R") // (args.steps)
        bubble = compiled[name][1].get("predicted_bubble_rate")
        print(f"| {name} | {bubble:.4f} | {1000 * statistics.median(step[name]):.2f} "
              f"| {statistics.median(ratio[name]):.3f} | {device} | {host} "
              f"| {recomputes} |")


if __name__ == "__main__":
    main()
