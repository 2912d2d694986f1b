#!/usr/bin/env python3
"""How far the checkpointed backward lowers the least memory limit, and
what it costs in makespan.

Compiles a model (default gpt-small, 4 ranks, zb-auto, 8 microbatches)
with `zbc compile --mem-limit` at limits from 70% to 130% of the least
limit the plain order fits, for `--recompute none`, `auto` (R ops where
they help; below every plain order's least limit it checkpoints the
backward, Note [Checkpointed backward]) and `checkpoint` (always), and
prints each compile's predicted makespan (schedule time units: FLOPs) or
"-" where it does not fit. Compile only: the e2e tests train the
programs and hold their measured peaks to the predicted ones.

Usage: bench/checkpoint_limit.py [--zbc build/bin/zbc] [--model M]
                                 [--ranks 4] [--microbatches 8] [--smoke]
(--smoke: 2 ranks, 4 microbatches, the least limits to 5% from a bracket
of 1 MiB to 256 MiB, and two fractions: a check that it runs, as ctest's
bench family runs it.)
"""
import argparse
import json
import os
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODES = ["none", "auto", "checkpoint"]
FRACTIONS = [0.70, 0.75, 0.80, 0.85, 0.90, 0.95, 1.00, 1.05, 1.15, 1.30]
SMOKE_FRACTIONS = [0.95, 1.15]


def compile_at(args, limit, mode, out):
    result = subprocess.run(
        [args.zbc, "compile", args.model, "--ranks", str(args.ranks),
         "--microbatches", str(args.microbatches), "--schedule", "zb-auto",
         "--mem-limit", str(limit), "--recompute", mode, "-o", out],
        capture_output=True, text=True)
    if result.returncode != 0:
        return None
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    checkpointed = ("checkpointed" in result.stderr or mode == "checkpoint")
    return (report["predicted_makespan"],
            max(r["peak_bytes"] for r in report["memory"]), checkpointed)


def least_limit(args, mode, out, tolerance=1.001, low=1, high=1 << 34):
    """The least limit `mode` compiles at, by bisection to `tolerance`
    (0.1%) between `low` and `high`."""
    while high / low > tolerance:
        middle = (low + high) // 2
        if compile_at(args, middle, mode, out):
            high = middle
        else:
            low = middle
    return high


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--zbc", default=os.path.join(ROOT, "build/bin/zbc"))
    parser.add_argument("--model",
                        default=os.path.join(ROOT, "examples/gpt-small.mlir"))
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--microbatches", type=int, default=8)
    parser.add_argument("--smoke", action="store_true",
                        help="2 ranks, 4 microbatches, coarse: checks that it "
                        "runs")
    args = parser.parse_args()
    fractions, bisection = FRACTIONS, {}
    if args.smoke:
        args.ranks, args.microbatches = 2, 4
        fractions = SMOKE_FRACTIONS
        bisection = {"tolerance": 1.05, "low": 1 << 20, "high": 1 << 28}
    with tempfile.TemporaryDirectory() as work:
        out = os.path.join(work, "out")
        least = {mode: least_limit(args, mode, out, **bisection)
                 for mode in ("none", "checkpoint")}
        print(f"least --mem-limit: plain {least['none']} bytes, checkpointed "
              f"{least['checkpoint']} ({least['checkpoint'] / least['none']:.3f}"
              f" of plain)")
        print("| limit / plain least | limit (bytes) | none | auto | checkpoint |")
        print("|---|---|---|---|---|")
        for fraction in fractions:
            limit = int(least["none"] * fraction)
            cells = []
            for mode in MODES:
                got = compile_at(args, limit, mode, out)
                if not got:
                    cells.append("-")
                    continue
                span, peak, checkpointed = got
                assert peak <= limit, (mode, limit, peak)
                mark = " (checkpointed)" if mode == "auto" and checkpointed else ""
                cells.append(f"{span:.4g}{mark}")
            print(f"| {fraction:.2f} | {limit} | " + " | ".join(cells) + " |",
                  flush=True)


if __name__ == "__main__":
    main()
