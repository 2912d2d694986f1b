#!/usr/bin/env python3
"""Makespan against the activation budget, with and without the memory levers.

For each input and each budget from a quarter of 1F1B's activation memory
(p M_B, rank 0's peak) up to twice it, runs `zbc schedule` for
  zb-auto and zb-v with `--recompute auto` and with `--offload auto` (zbc's
  schedules with the levers, one at a time), and with `--recompute auto`
  on the costs of the cheap selective policy (Note [Selective
  recomputation]: R rebuilds only the element-wise and normalisation
  results, F keeps the rest; zbc compile's `--recompute auto` tries both
  policies and keeps the shorter, the better of the +R and +S columns),
  1F1B with `--recompute full` (what frameworks offer: checkpoint every stage),
  V-Min and V-Half (the lowest-memory zero-bubble orders without it),
  zb-auto and zb-v without it,
and prints the makespan of each (blank where it does not fit the budget).
The last columns compare the best schedule with a lever against the best
of the others: "=" where they tie, "better" where the lever is strictly
shorter, "WORSE" where it loses, "only" where nothing else fits.

Inputs: four rows of the Zero Bubble paper's measured costs (Qi et al., ICLR
2024, Table 3: one per model size), with M_B = 34h + 5as (s = 1024), M_W =
32h and M_keep = 2h (the stage's input, one layer's worth, in the same
units: bytes per token); and seeded uneven stages as bench/uneven_stages.py
draws them, with M_keep = M_B / 8. R takes F's time (full recomputation).
Offload copies over an H200-like host link, 50 GB/s each way (PCIe Gen5
x16 as measured, not its 64 GB/s peak): in the paper rows' units that is
50e9 B/s over the tokens and layers of a stage's microbatch (s b L / p
bytes per unit; L and b below: the layer counts of the paper's models and
the microbatch sizes their F times imply at s = 1024); on the uneven
inputs a stash copies in the mean F's time.
V schedules get every stage cut into two equal chunks (2p stages, costs
halved), so that all columns run the same model.
Selective recomputation's costs: on the paper rows the cheap policy rebuilds
a block's two layer-norm outputs and its GELU output, 12h of the 34h + 5as
(Korthikanti et al.'s accounting), so M_keep = M_B - 12h; on the uneven
inputs 40% of M_B (what it rebuilds of the example GPT block's stash). Its R
takes a tenth of F's time: the element-wise kernels are memory-bound, and
their FLOPs (a few per element) would say less; an assumption, not a
measurement.

Usage: bench/memory_levers.py [--zbc build/bin/zbc] [--seeds 2] [--smoke]
(--smoke: the first paper row's costs and one uneven input, both at p = 4,
m = 8, at one budget: a check that it runs, as ctest's bench family runs it.)
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# model, p, m, T_F, T_B, T_W, T_comm, h, a (bench/schedules.py's rows),
# then the layers L and the microbatch size b (see above)
PAPER_ROWS = [
    ("1.5B", 8, 24, 18.522, 18.086, 9.337, 0.601, 2304, 24, 22, 6),
    ("6.2B", 8, 32, 29.802, 29.428, 19.530, 0.577, 4096, 32, 30, 3),
    ("14.6B", 16, 48, 11.347, 11.248, 8.132, 0.377, 5120, 40, 46, 1),
    ("28.3B", 32, 96, 10.419, 10.207, 7.715, 0.408, 6144, 48, 62, 1),
]
SEQUENCE = 1024
LINK_BYTES_PER_MS = 50e9 / 1000

FRACTIONS = [0.25, 0.375, 0.5, 0.625, 0.75, 1.0, 1.25, 1.5, 2.0]
# --smoke's budgets (here and in bench/levers_mixed.py).
SMOKE_FRACTIONS = [1.0]

# R under the selective policy, as a share of F's time (see above).
SELECTIVE_R = 0.1
# In a column's options: schedule with the selective policy's costs.
SELECTIVE = "selective-costs"

# label, schedule, V placement, lever options, uses a lever
COLUMNS = [
    ("zb-auto+R", "zb-auto", False, ["--recompute", "auto"], True),
    ("zb-v+R", "zb-v", True, ["--recompute", "auto"], True),
    ("zb-auto+S", "zb-auto", False, ["--recompute", "auto", SELECTIVE], True),
    ("zb-v+S", "zb-v", True, ["--recompute", "auto", SELECTIVE], True),
    ("zb-auto+O", "zb-auto", False, ["--offload", "auto"], True),
    ("zb-v+O", "zb-v", True, ["--offload", "auto"], True),
    ("1f1b full R", "1f1b", False, ["--recompute", "full"], False),
    ("v-min", "v-min", True, [], False),
    ("v-half", "v-half", True, [], False),
    ("zb-auto", "zb-auto", False, [], False),
    ("zb-v", "zb-v", True, [], False),
]


def paper_input(p, m, tf, tb, tw, comm, h, a, layers, b):
    mb = 34 * h + 5 * a * SEQUENCE
    tokens_per_unit = SEQUENCE * b * layers / p
    return {"ranks": p, "microbatches": m, "comm": comm, "F": [tf] * p,
            "B": [tb] * p, "W": [tw] * p, "M_B": [mb] * p,
            "M_W": [32 * h] * p, "M_keep": [2 * h] * p,
            "copy_bandwidth": LINK_BYTES_PER_MS / tokens_per_unit,
            "rebuilt": 12 * h / mb}


def uneven_input(p, m, seed):
    # bench/uneven_stages.py's generator, with M_keep = M_B / 8.
    rng = random.Random(seed * 1000003 + p * 101 + m)

    def spread(c):
        return [round(c * rng.uniform(1.0, 2.0), 3) for _ in range(p)]

    tf, tb, tw, mb = spread(1.0), spread(1.0), spread(0.5), spread(1.0)
    return {"ranks": p, "microbatches": m, "comm": 0.05, "F": tf, "B": tb,
            "W": tw, "M_B": mb, "M_W": [round(x / 2, 4) for x in mb],
            "M_keep": [round(x / 8, 4) for x in mb],
            "copy_bandwidth": round(sum(mb) / sum(tf), 4), "rebuilt": 0.4}


def smoke_row(row):
    """A paper row's costs at --smoke's size, p = 4 and m = 8 (its own p
    and m take minutes under the levers)."""
    model, _, _, *costs = row
    return (model, 4, 8, *costs)


def selective(cost):
    """The costs under the cheap policy: F keeps all but the rebuilt share
    of its stash, and R takes SELECTIVE_R of F's time."""
    return dict(cost, M_keep=[b * (1 - cost["rebuilt"]) for b in cost["M_B"]],
                R=[f * SELECTIVE_R for f in cost["F"]])


def as_v(cost):
    """The same model cut into 2p chunks: chunk 2i and 2i+1 are halves of
    stage i (M_keep stays: each chunk keeps its own input)."""
    v = dict(cost, virtual=2)
    for key in ("F", "B", "W", "M_B", "M_W"):
        v[key] = [x / 2 for x in cost[key] for _ in range(2)]
    v["M_keep"] = [min(k, b / 2) for k, b in zip(
        (x for x in cost["M_keep"] for _ in range(2)), v["M_B"])]
    return v


def run(zbc, cost, schedule, lever, budget):
    if SELECTIVE in lever:
        cost = selective(cost)
        lever = [x for x in lever if x != SELECTIVE]
    cost = {k: v for k, v in cost.items() if k != "rebuilt"}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(cost, f)
        path = f.name
    cmd = [zbc, "schedule", "--schedule", schedule, "--cost-file", path,
           "--activation-budget", repr(budget), "--format", "json"] + lever
    out = subprocess.run(cmd, capture_output=True, text=True)
    os.unlink(path)
    if out.returncode != 0:
        return None
    result = json.loads(out.stdout)
    assert max(result["peak_memory"]) <= budget * (1 + 1e-9), cmd
    return result["makespan"]


def rows(zbc, name, cost, fractions=FRACTIONS):
    v_cost = as_v(cost)
    one_f1b = cost["ranks"] * max(cost["M_B"])
    for fraction in fractions:
        budget = fraction * one_f1b
        spans = [run(zbc, v_cost if v else cost, schedule, lever, budget)
                 for _, schedule, v, lever, _ in COLUMNS]
        lever = [s for s, c in zip(spans, COLUMNS) if c[4] and s is not None]
        other = [s for s, c in zip(spans, COLUMNS)
                 if not c[4] and s is not None]
        best_lever = min(lever) if lever else None
        best_other = min(other) if other else None
        if best_lever is None:
            verdict = "none fits" if best_other is None else "WORSE"
        elif best_other is None:
            verdict = "only"
        elif best_lever < best_other * (1 - 1e-9):
            verdict = f"better ({best_other / best_lever:.3f}x)"
        elif best_lever <= best_other * (1 + 1e-9):
            verdict = "="
        else:
            verdict = f"WORSE ({best_lever / best_other:.3f}x)"
        cells = ["" if s is None else f"{s:.6g}" for s in spans]
        yield f"| {name} | {fraction:g} | " + " | ".join(cells) + f" | {verdict} |"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--zbc", default=os.path.join(ROOT, "build", "bin", "zbc"))
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--smoke", action="store_true",
                        help="two small inputs, one budget: checks that it "
                        "runs")
    args = parser.parse_args()
    fractions, paper_rows, sizes = FRACTIONS, PAPER_ROWS, (4, 8)
    if args.smoke:
        args.seeds, fractions, sizes = 1, SMOKE_FRACTIONS, (4,)
        paper_rows = [smoke_row(PAPER_ROWS[0])]
    print("| input | budget / 1F1B's | " + " | ".join(c[0] for c in COLUMNS)
          + " | lever vs rest |")
    print("|---|---|" + "---|" * len(COLUMNS) + "---|")
    lines = []
    for model, p, m, *costs in paper_rows:
        for line in rows(args.zbc, f"{model} p={p} m={m}",
                         paper_input(p, m, *costs), fractions):
            print(line, flush=True)
            lines.append(line)
    for p in sizes:
        for seed in range(args.seeds):
            for line in rows(args.zbc, f"uneven p={p} m={2 * p} seed {seed}",
                             uneven_input(p, 2 * p, seed), fractions):
                print(line, flush=True)
                lines.append(line)
    # At 1F1B's memory every column fits: a blank cell is a failed run.
    if args.smoke and any("|  |" in line for line in lines):
        sys.exit("memory_levers.py --smoke: a schedule failed at 1F1B's memory")


if __name__ == "__main__":
    main()
