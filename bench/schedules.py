#!/usr/bin/env python3
"""Schedules on the Zero Bubble paper's measured inputs.

Runs `zbc schedule` for every registered schedule on every row of the Zero
Bubble paper's table of measured costs (Qi et al., ICLR 2024), and prints a
markdown table of the bubble rate and the peak activation memory (the
largest rank's, in units of one full stage's M_B), beside the paper's
published bubble rates where it gives them. The schedulers' speed is
bench/schedule_speed.cpp's (zbc-bench-schedules).

Usage: bench/schedules.py [path/to/zbc | --zbc path/to/zbc] [--smoke]
       (after ./scripts/test.sh built it; --smoke: the first row only, and
       any cell's error fails the run: ctest's bench family checks that the
       script runs, not the numbers)
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ZBC = os.path.join(ROOT, "build", "bin", "zbc")

# model, p, m, T_F, T_B, T_W, T_comm, h, a
ROWS = [
    ("1.5B", 8, 24, 18.522, 18.086, 9.337, 0.601, 2304, 24),
    ("1.5B", 8, 32, 18.513, 18.086, 9.331, 0.626, 2304, 24),
    ("1.5B", 8, 64, 18.546, 18.097, 9.321, 0.762, 2304, 24),
    ("6.2B", 8, 24, 29.718, 29.444, 19.927, 0.527, 4096, 32),
    ("6.2B", 8, 32, 29.802, 29.428, 19.530, 0.577, 4096, 32),
    ("6.2B", 8, 64, 29.935, 29.621, 19.388, 0.535, 4096, 32),
    ("14.6B", 16, 48, 11.347, 11.248, 8.132, 0.377, 5120, 40),
    ("14.6B", 16, 64, 11.307, 11.254, 8.101, 0.379, 5120, 40),
    ("14.6B", 16, 128, 11.325, 11.308, 8.109, 0.378, 5120, 40),
    ("28.3B", 32, 96, 10.419, 10.207, 7.715, 0.408, 6144, 48),
    ("28.3B", 32, 128, 10.408, 10.204, 7.703, 0.408, 6144, 48),
    ("28.3B", 32, 256, 10.402, 10.248, 7.698, 0.460, 6144, 48),
]

# The paper's published bubble rates (Table 3), (model, m) -> schedule -> rate.
PAPER = {
    ("1.5B", 24): {"1f1b": 0.2431, "zb-h1": 0.1585, "zb-h2": 0.1083,
                   "ZB-1p": 0.1585, "ZB-2p": 0.0433},
    ("28.3B", 96): {"1f1b": 0.2646, "zb-h1": 0.1421, "zb-h2": 0.0641,
                    "ZB-1p": 0.1421, "ZB-2p": 0.0038},
}

# Column: (label, schedule, virtual stages per rank, limit in full-stage M_B
# per rank as a function of p, or None).
COLUMNS = [
    ("gpipe", "gpipe", 1, None),
    ("1f1b", "1f1b", 1, None),
    ("zb-h1", "zb-h1", 1, None),
    ("zb-h2", "zb-h2", 1, None),
    ("ZB-1p", "zb-auto", 1, lambda p: p),
    ("ZB-2p", "zb-auto", 1, lambda p: 2 * p),
    ("interleaved v=2", "interleaved-1f1b", 2, None),
    ("zb-v", "zb-v", 2, lambda p: p),
    ("v-half", "v-half", 2, None),
    ("v-min", "v-min", 2, None),
    ("dualpipe-v", "dualpipe-v", 2, None),
]


def run(schedule, p, m, v, tf, tb, tw, comm, mb, mw, limit):
    """Runs zbc schedule; returns its JSON, or the error line."""
    # With v stages per rank each stage is 1/v of a rank's layers.
    args = [ZBC, "schedule", "--schedule", schedule, "--ranks", str(p),
            "--microbatches", str(m), "--virtual", str(v),
            "--cost", f"F={tf / v},B={tb / v},W={tw / v},comm={comm}",
            "--mem", f"B={mb / v},W={mw / v}", "--format", "json"]
    if limit is not None:
        args += ["--activation-budget", str(limit * mb)]
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        return out.stderr.strip().splitlines()[-1]
    return json.loads(out.stdout)


def main():
    global ZBC
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("zbc", nargs="?", default=ZBC)
    parser.add_argument("--zbc", dest="zbc_option",
                        help="the same as the positional path")
    parser.add_argument("--smoke", action="store_true",
                        help="the first row only; errors fail the run")
    args = parser.parse_args()
    ZBC = args.zbc_option or args.zbc
    print("| model | p | m | " + " | ".join(c[0] for c in COLUMNS) + " |")
    print("|---|---|---|" + "---|" * len(COLUMNS))
    errors = []
    for model, p, m, tf, tb, tw, comm, h, a in ROWS[:1] if args.smoke else ROWS:
        mb = 34 * h + 5 * a * 1024
        mw = 32 * h
        cells = []
        for label, schedule, v, limit in COLUMNS:
            result = run(schedule, p, m, v, tf, tb, tw, comm, mb, mw,
                         limit(p) if limit else None)
            if isinstance(result, str):
                cells.append("error")
                errors.append(f"{model} m={m} {label}: {result}")
                continue
            peak = max(result["peak_memory"]) / mb
            cell = f"{result['bubble_rate']:.4f} / {peak:.2f}"
            paper = PAPER.get((model, m), {}).get(label)
            if paper is not None:
                cell += f" (paper {paper:.4f})"
            cells.append(cell)
        print(f"| {model} | {p} | {m} | " + " | ".join(cells) + " |")
    for e in errors:
        print(f"\nerror: {e}")
    return 1 if args.smoke and errors else 0


if __name__ == "__main__":
    sys.exit(main())
