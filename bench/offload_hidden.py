#!/usr/bin/env python3
"""How much activation memory offload removes for less than 1% of makespan.

PipeOffload (ICML 2025) claims that in a suitable schedule at least half of
the activations can go to host memory at negligible cost. This measures the
claim on zbc's schedules: for each of the Zero Bubble paper's models
(bench/memory_levers.py's rows: measured times in ms, stashes in bytes) and
each schedule (1F1B; zb-auto and zb-v at their default budgets, 2p M_B
per rank: without one they put every W last and hold p M_W more, which
offload, moving only what F stashes for B, cannot touch), it takes the
makespan T and device peak P without offload, then lowers the
activation budget in steps of 5% of P with `--offload auto` and reports the
lowest budget whose makespan stays within 1% of T, and the device peak
measured there. Copies run over an H200-like host link, 50 GB/s each way.

Two activation sizes per model, since the answer hangs on the bytes per
FLOP: the paper's M_B = s b (34h + 5as) per layer (attention scores
stored), and s b 34h (a fused attention kernel keeps no scores: what
FlashAttention-style training stores).

Usage: bench/offload_hidden.py [--zbc build/bin/zbc] [--jobs 2] [--smoke]
(--smoke: the first model's costs at p = 4, m = 8, the paper's stash only,
budgets down to 85%: a check that it runs, as ctest's bench family runs it.)
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from memory_levers import (LINK_BYTES_PER_MS, PAPER_ROWS, SEQUENCE,  # noqa: E402
                           smoke_row)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEPS = [round(1 - 0.05 * i, 2) for i in range(1, 20)]  # 0.95 .. 0.05
TOLERANCE = 1.01


def cost_of(p, m, tf, tb, tw, comm, h, a, layers, b, scores):
    per_layer = SEQUENCE * b * (34 * h + (5 * a * SEQUENCE if scores else 0))
    stash = per_layer * layers / p
    return {"ranks": p, "microbatches": m, "comm": comm, "F": tf, "B": tb,
            "W": tw, "M_B": stash,
            "M_W": SEQUENCE * b * 32 * h * layers / p,
            "copy_bandwidth": LINK_BYTES_PER_MS}


def as_v(cost):
    v = dict(cost, virtual=2)
    for key in ("F", "B", "W", "M_B", "M_W"):
        v[key] = cost[key] / 2
    return v


def run(zbc, cost, schedule, budget, offload):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(cost, f)
        path = f.name
    cmd = [zbc, "schedule", "--schedule", schedule, "--cost-file", path,
           "--activation-budget", budget, "--offload", offload,
           "--format", "json"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    os.unlink(path)
    if out.returncode != 0:
        return None
    result = json.loads(out.stdout)
    if budget != "default":
        assert max(result["peak_memory"]) <= float(budget) * (1 + 1e-9), cmd
    return result


def measure(zbc, cost, schedule, steps=STEPS):
    plain = run(zbc, cost, schedule, "default", "none")
    t0, p0 = plain["makespan"], max(plain["peak_memory"])
    best = None
    misses = 0
    for step in steps:
        result = run(zbc, cost, schedule, repr(step * p0), "auto")
        if result and result["makespan"] <= TOLERANCE * t0:
            best, misses = (step, result), 0
        else:
            misses += 1
            if misses == 3:  # the makespan only grows as the budget shrinks
                break
    return t0, p0, best


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--zbc", default=os.path.join(ROOT, "build", "bin", "zbc"))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--smoke", action="store_true",
                        help="one small input, three budgets: checks that it "
                        "runs")
    args = parser.parse_args()
    rows, stashes, steps = PAPER_ROWS, (True, False), STEPS
    if args.smoke:
        rows, stashes, steps = [smoke_row(PAPER_ROWS[0])], (True,), STEPS[:3]
    cases = []
    for model, p, m, *costs in rows:
        for scores in stashes:
            cost = cost_of(p, m, *costs, scores)
            copy_ms = cost["M_B"] / LINK_BYTES_PER_MS
            for schedule in ("1f1b", "zb-auto", "zb-v"):
                name = (f"{model} p={p} m={m}", "s b (34h + 5as)" if scores
                        else "s b 34h", f"{copy_ms / costs[0]:.2f}", schedule)
                cases.append((name, as_v(cost) if schedule == "zb-v" else cost,
                              schedule))
    print("| model | stash per layer | copy / T_F | schedule | makespan | "
          "device peak (GB) | lowest budget within 1% | makespan there | "
          "device peak there (GB) | host peak there (GB) | removed |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(measure, args.zbc, cost, schedule, steps)
                   for _, cost, schedule in cases]
        for (name, _, _), future in zip(cases, futures):
            t0, p0, best = future.result()
            cells = list(name) + [f"{t0:.6g}", f"{p0 / 1e9:.3f}"]
            if best is None:
                cells += ["above 95%", "", "", "", "0%"]
            else:
                step, result = best
                peak = max(result["peak_memory"])
                host = max(result.get("peak_host_memory", [0]))
                cells += [f"{step:.0%}", f"{result['makespan']:.6g}",
                          f"{peak / 1e9:.3f}", f"{host / 1e9:.3f}",
                          f"{1 - peak / p0:.0%}"]
            print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
