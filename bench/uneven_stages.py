#!/usr/bin/env python3
"""zb-auto on uneven stages: makespan against its lower bound.

A seeded generator of linear-placement problems whose stages differ: per
stage, T_F, T_B and T_W are each drawn uniformly from [c, 2c] around the
paper's 1.5B ratios (c_F = 1, c_B = 1, c_W = 0.5) and M_B from [1, 2]
(M_W = M_B / 2), with comm 0.05; p in {4, 8, 16}, m in {2p, 4p}; two limits
per problem, p M_B and 2p M_B of the heaviest stage (ZB-1p's and ZB-2p's).
For each input it runs `zbc schedule --schedule zb-auto` and records the
makespan, zb-auto's lower bound (its note: the larger of the per-rank work
and the critical-path bounds, lowerBound in ZBAuto/LowerBound.cpp) and the gap
(makespan / bound - 1). With --exact S it also runs the exact mode and
records its wall-clock seconds (the acceptance: every run within S + 1).

Usage: bench/uneven_stages.py [--zbc build/bin/zbc] [--seeds 10]
       [--exact SECONDS] [--json out.json] [--smoke]
(--smoke: one seed of p = 4, m = 8 at both limits, a check that it runs.)
Prints a markdown table (one row per p, m, limit: mean and worst gap) and
the overall mean and worst.
"""
import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def problem(p, m, seed):
    """Per-stage costs and memory of one seeded input."""
    rng = random.Random(seed * 1000003 + p * 101 + m)

    def spread(c):
        return [round(c * rng.uniform(1.0, 2.0), 3) for _ in range(p)]

    mem_b = spread(1.0)
    return {"ranks": p, "microbatches": m, "F": spread(1.0), "B": spread(1.0),
            "W": spread(0.5), "M_B": mem_b,
            "M_W": [round(x / 2, 4) for x in mem_b], "comm": 0.05}


LOWER = re.compile(r"makespan ([0-9.e+-]+), lower bound ([0-9.e+-]+)")


def run(zbc, cost, limit, exact):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(cost, f)
        path = f.name
    cmd = [zbc, "schedule", "--schedule", "zb-auto", "--cost-file", path,
           "--activation-budget", repr(limit), "--format", "json"]
    if exact:
        cmd += ["--exact", str(exact)]
    begin = time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.monotonic() - begin
    os.unlink(path)
    if out.returncode:
        sys.exit(f"uneven_stages.py: {' '.join(cmd)} failed:\n{out.stderr}")
    makespan = json.loads(out.stdout)["makespan"]
    match = LOWER.search(out.stderr)
    if not match:
        sys.exit(f"uneven_stages.py: no lower bound in the notes:\n{out.stderr}")
    return makespan, float(match.group(2)), seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zbc", default=os.path.join(ROOT, "build", "bin", "zbc"))
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--exact", type=float, default=0)
    parser.add_argument("--json")
    parser.add_argument("--smoke", action="store_true",
                        help="one seed of p = 4, m = 8: checks that it runs")
    args = parser.parse_args()
    if args.smoke:
        args.seeds = 1
    rows, records = [], []
    for p in (4,) if args.smoke else (4, 8, 16):
        for m in (2 * p,) if args.smoke else (2 * p, 4 * p):
            for factor, label in ((1, "p M_B"), (2, "2p M_B")):
                gaps, slowest = [], 0.0
                for seed in range(args.seeds):
                    cost = problem(p, m, seed)
                    limit = factor * p * max(cost["M_B"])
                    makespan, bound, seconds = run(args.zbc, cost, limit,
                                                   args.exact)
                    gap = makespan / bound - 1
                    gaps.append(gap)
                    slowest = max(slowest, seconds)
                    records.append({"p": p, "m": m, "limit": label,
                                    "seed": seed, "makespan": makespan,
                                    "bound": bound, "gap": gap,
                                    "seconds": seconds})
                rows.append((p, m, label, statistics.mean(gaps), max(gaps),
                             slowest))
    print("| p | m | limit | mean gap | worst gap | slowest run (s) |")
    print("|---|---|---|---|---|---|")
    for p, m, label, mean, worst, slowest in rows:
        print(f"| {p} | {m} | {label} | {mean * 100:.2f}% | {worst * 100:.2f}% "
              f"| {slowest:.2f} |")
    gaps = [r["gap"] for r in records]
    print(f"\n{len(records)} inputs: mean gap {statistics.mean(gaps) * 100:.2f}%, "
          f"worst {max(gaps) * 100:.2f}%, slowest run "
          f"{max(r['seconds'] for r in records):.2f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=1)


if __name__ == "__main__":
    main()
