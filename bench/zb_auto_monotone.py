#!/usr/bin/env python3
"""zb-auto's makespan along a ladder of memory limits: where it inverts.

Note [zb-auto monotone] (passes/lib/Schedule/Builders/ZBAuto/ZBAuto.h) searches below
the limit on instances of up to 10k ops, so more memory never gives a longer
schedule there (ZBAutoBoundsTest holds it). This measures the larger
instances the rule leaves out: bench/uneven_stages.py's inputs at p = 32,
m = 128 and p = 64, m = 256, each at limits p M_B x (1, 1.02, ..., 1.22) of
its heaviest stage, and prints every step up the ladder whose makespan is
longer than the step before.

Usage: bench/zb_auto_monotone.py [--zbc build/bin/zbc] [--smoke]
(--smoke: p = 4, m = 8, three steps of the ladder: a check that it runs.)
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import uneven_stages  # noqa: E402 (the generator and the runner)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zbc", default=os.path.join(ROOT, "build", "bin", "zbc"))
    parser.add_argument("--smoke", action="store_true",
                        help="one small input, three steps: checks that it runs")
    args = parser.parse_args()
    steps = inversions = 0
    worst = 0.0
    cases = ((4, 8, 1),) if args.smoke else \
        ((32, 128, 1), (32, 128, 2), (64, 256, 1))
    for p, m, seed in cases:
        cost = uneven_stages.problem(p, m, seed)
        base = p * max(cost["M_B"])
        previous = None
        for k in range(3 if args.smoke else 12):
            limit = base * (1 + 0.02 * k)
            makespan, _, _ = uneven_stages.run(args.zbc, cost, limit, 0)
            if previous:
                steps += 1
                if makespan > previous[1] * (1 + 1e-12):
                    inversions += 1
                    worst = max(worst, makespan / previous[1] - 1)
                    print(f"p={p} m={m} seed {seed}: limit {previous[0]:.4f} gives "
                          f"{previous[1]}, the larger {limit:.4f} gives {makespan}")
            previous = (limit, makespan)
    print(f"{steps} steps up the ladder: {inversions} longer, by up to {worst * 100:.2f}%")


if __name__ == "__main__":
    main()
