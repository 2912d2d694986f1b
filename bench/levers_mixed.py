#!/usr/bin/env python3
"""What both memory levers in one schedule buy over each alone.

For each input and budget of bench/memory_levers.py (the Zero Bubble
paper's measured rows and the seeded uneven stages, budgets from a quarter
of 1F1B's activation memory to twice it), runs `zbc schedule` for zb-auto
and zb-v with `--recompute auto` (R alone: whole stages or microbatches
recomputed, R taking F's time), `--offload auto` (copies alone) and both
(`--recompute auto --offload auto`: each microbatch kept, offloaded or
recomputed, Note "Both levers in one schedule" in dialect/docs/ZB.md), and
prints the makespans and how the mix compares with the better lever alone:
"=" where it ties, "better (x)" where it is strictly shorter, "WORSE" where
it loses (it must not: the mix is one more candidate beside each lever's).

--link-scale scales every input's copy bandwidth: 1 is memory_levers.py's
H200-like link (50 GB/s each way), where copies mostly hide and offload
alone is hard to beat; below 1 copies stall and R has to share the work.

Usage: bench/levers_mixed.py [--zbc build/bin/zbc] [--seeds 2]
                             [--link-scale 1] [--paper/--no-paper] [--smoke]
(--smoke: the first paper row's costs and one uneven input, both at p = 4,
m = 8, at one budget: a check that it runs, as ctest's bench family runs it;
--seeds 1 alone still takes minutes.)
"""
import argparse
import os
import sys

from memory_levers import (FRACTIONS, PAPER_ROWS, ROOT, SMOKE_FRACTIONS, as_v,
                           paper_input, run, smoke_row, uneven_input)

LEVERS = [("R", ["--recompute", "auto"]), ("O", ["--offload", "auto"]),
          ("R+O", ["--recompute", "auto", "--offload", "auto"])]
SCHEDULES = [("zb-auto", False), ("zb-v", True)]


def rows(zbc, name, cost, tally, fractions=FRACTIONS):
    v_cost = as_v(cost)
    one_f1b = cost["ranks"] * max(cost["M_B"])
    for fraction in fractions:
        budget = fraction * one_f1b
        cells, verdicts = [], []
        for schedule, v in SCHEDULES:
            spans = [run(zbc, v_cost if v else cost, schedule, lever, budget)
                     for _, lever in LEVERS]
            cells += ["" if s is None else f"{s:.6g}" for s in spans]
            alone = [s for s in spans[:2] if s is not None]
            both = spans[2]
            if both is None:
                verdict = "none fits" if not alone else "WORSE"
            elif not alone:
                verdict = "only"
            elif both < min(alone) * (1 - 1e-9):
                verdict = f"better ({min(alone) / both:.3f}x)"
            elif both <= min(alone) * (1 + 1e-9):
                verdict = "="
            else:
                verdict = f"WORSE ({both / min(alone):.3f}x)"
            tally[verdict.split()[0]] = tally.get(verdict.split()[0], 0) + 1
            verdicts.append(verdict)
        yield (f"| {name} | {fraction:g} | " + " | ".join(cells) + " | " +
               " | ".join(verdicts) + " |")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--zbc", default=os.path.join(ROOT, "build", "bin", "zbc"))
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--link-scale", type=float, default=1.0)
    parser.add_argument("--paper", action=argparse.BooleanOptionalAction,
                        default=True)
    parser.add_argument("--smoke", action="store_true",
                        help="two small inputs, one budget: checks that it "
                        "runs")
    args = parser.parse_args()
    paper_rows, sizes, fractions = PAPER_ROWS, (4, 8), FRACTIONS
    if args.smoke:
        paper_rows = [smoke_row(PAPER_ROWS[0])]
        args.seeds, sizes, fractions = 1, (4,), SMOKE_FRACTIONS
    header = [f"{s}{'' if l == 'R' else ''} {l}" for s, _ in SCHEDULES
              for l, _ in LEVERS]
    print("| input | budget / 1F1B's | " + " | ".join(header) +
          " | zb-auto mix vs alone | zb-v mix vs alone |")
    print("|---|---|" + "---|" * (len(header) + 2))
    inputs = []
    if args.paper:
        inputs += [(f"{model} p={p} m={m}", paper_input(p, m, *costs))
                   for model, p, m, *costs in paper_rows]
    inputs += [(f"uneven p={p} m={2 * p} seed {seed}",
                uneven_input(p, 2 * p, seed))
               for p in sizes for seed in range(args.seeds)]
    tally = {}
    for name, cost in inputs:
        cost = dict(cost, copy_bandwidth=cost["copy_bandwidth"] * args.link_scale)
        for line in rows(args.zbc, name, cost, tally, fractions):
            print(line, flush=True)
            # At 1F1B's memory every lever fits: a blank cell is a failed run.
            if args.smoke and "|  |" in line:
                sys.exit("levers_mixed.py --smoke: a schedule failed at "
                         "1F1B's memory")
    print()
    print("mix against the better lever alone: " +
          ", ".join(f"{k} {v}" for k, v in sorted(tally.items())))


if __name__ == "__main__":
    main()
