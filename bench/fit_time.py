#!/usr/bin/env python3
"""What fitting a memory limit costs: the lowering with and without one.

Times `zbc-opt --zb-lower-to-program` (zb-backward, zb-stage-costs,
zb-schedule, zb-insert-p2p, zb-plan-memory: what `zbc compile` runs before
code generation) on two cases, each without a limit and with one that binds,
alternating the binaries given so that both see the same machine:
  llama8b   a Llama-3-8B shape (32 layers, h 4096, GQA 32/8, vocabulary
            128,256, sequence 4096, bf16) on 8 ranks under zb-v, m = 64,
            AdamW; the limit 80,000,000,000 bytes (rank 0 peaks at 79.9 GB)
  gptsmall  examples/gpt-small.mlir on 4 ranks under zb-auto, m = 8, with
            --recompute auto; the limit 45,519,667 bytes (5% above the least
            zb-auto fits without levers)
Prints each case's median seconds per binary, the ratio of the limited to
the unlimited lowering, and checks that every binary writes the same
activation budget and peaks. `--base DIR` adds an older build's bin/ (an
install prefix's bin/ works too) to compare with.

Usage: bench/fit_time.py [--bin build/bin] [--base DIR] [--runs 3]
                         [--cases llama8b,gptsmall] [--smoke]
(--smoke: one run of the case `smoke` alone, a 4-layer Llama of hidden 64
on 8 stages under zb-v, m = 8, AdamW, limit 1,300,000 bytes (the lowering
without one peaks at 1,461,888): a check that the script runs and the
binaries agree, as ctest's bench family runs it; its seconds mean nothing.)
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LLAMA8B = ["--layers", "32", "--hidden", "4096", "--intermediate", "14336",
           "--heads", "32", "--kv-heads", "8", "--vocab", "128256", "--seq",
           "4096", "--max-positions", "8192", "--batch", "1", "--rope-theta",
           "500000", "--llama3", "8,1,4,8192", "--bf16", "--no-cuts"]

# --smoke's model: the same shape of options at the smallest size.
SMOKE_LLAMA = ["--layers", "4", "--hidden", "64", "--intermediate", "128",
               "--heads", "4", "--kv-heads", "2", "--vocab", "256", "--seq",
               "16", "--max-positions", "16", "--batch", "1", "--no-cuts"]

CASES = {
    "llama8b": ("stages=16 schedule=zb-v microbatches=64 optimizer=adamw",
                80000000000),
    "gptsmall": ("stages=4 schedule=zb-auto microbatches=8 recompute=auto",
                 45519667),
    "smoke": ("stages=8 schedule=zb-v microbatches=8 optimizer=adamw",
              1300000),
}


def lower(zbc_opt, model, options, out):
    begin = time.perf_counter()
    subprocess.run([zbc_opt, model, f"--zb-lower-to-program={options}", "-o",
                    out], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    seconds = time.perf_counter() - begin
    with open(out) as f:
        text = f.read()
    found = (re.findall(r"activation_budget = (\d+)", text),
             re.findall(r"peak_bytes = (\d+)", text))
    return seconds, found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    parser.add_argument("--base", default=None)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cases", default="llama8b,gptsmall")
    parser.add_argument("--smoke", action="store_true",
                        help="one run of the smallest case: checks that it "
                        "runs")
    args = parser.parse_args()
    if args.smoke:
        args.runs, args.cases = 1, "smoke"
    bins = [("this", args.bin)] + ([("base", args.base)] if args.base else [])
    work = tempfile.mkdtemp(prefix="zbc-fit-time-")
    models = {"gptsmall": os.path.join(ROOT, "examples", "gpt-small.mlir")}
    for case, dsl in (("llama8b", LLAMA8B), ("smoke", SMOKE_LLAMA)):
        if case not in args.cases.split(","):
            continue
        models[case] = os.path.join(work, f"{case}.mlir")
        with open(models[case], "w") as f:
            subprocess.run([os.path.join(args.bin, "zbc-dsl-llama"), *dsl],
                           check=True, stdout=f)
    print(f"{'case':10} {'binary':6} {'no limit s':>11} {'limit s':>9} "
          f"{'ratio':>6}")
    for case in args.cases.split(","):
        options, limit = CASES[case]
        seconds = {(name, lim): [] for name, _ in bins for lim in (0, limit)}
        results = {}
        for _ in range(args.runs):
            for name, directory in bins:
                for lim in (0, limit):
                    s, found = lower(os.path.join(directory, "zbc-opt"),
                                     models[case],
                                     f"{options} memory-limit={lim}",
                                     os.path.join(work, f"{case}-lowered.mlir"))
                    seconds[(name, lim)].append(s)
                    results.setdefault(lim, {})[name] = found
        for lim, found in results.items():
            if not all(peaks for _, peaks in found.values()):
                sys.exit(f"FAILED: {case} at memory-limit={lim}: no peak_bytes "
                         "in the lowered program")
            if len({repr(v) for v in found.values()}) != 1:
                sys.exit(f"FAILED: {case} at memory-limit={lim}: the binaries "
                         f"disagree on the budget and peaks: {found}")
        for name, _ in bins:
            free = statistics.median(seconds[(name, 0)])
            bound = statistics.median(seconds[(name, limit)])
            print(f"{case:10} {name:6} {free:11.2f} {bound:9.2f} "
                  f"{bound / free:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
