#!/usr/bin/env python3
"""zb-auto against the reference implementation's ZB heuristic on uneven stages.

Runs the Zero Bubble reference implementation's own automatic schedule
(sail-sg's zero-bubble-pipeline-parallelism, scheduler/zb.py: Graph.
manual_order under its eight binary choices, initial_solution, which is what
its training runtime builds for --zero-bubble-v-schedule off), unchanged, on
bench/uneven_stages.py's inputs at the same two limits, and times each order
it returns with zbc's simulator (`zbc schedule --import`), so the reference
and zbc are measured by one rule. Its memory model is the paper's: F adds
M_B, B adds M_W - M_B, W frees M_W, the limit per stage.

On stages of uneven cost the reference heuristic can plan an F before the
stage above has produced its input (ZB.md, "zb-auto"): a variant that
does so fails its own final asserts and is skipped, and an order that zbc's
simulator finds over the limit counts as no schedule. The best of the
variants that pass is the reference's result, as in initial_solution.

For each input it records both makespans, zb-auto's lower bound and each
one's gap to it, and prints a table per row (mean and worst gap of each,
and how many inputs each is shorter on).

Usage: bench/zb_reference.py --ref GITDIR_OR_CHECKOUT [--zbc build/bin/zbc]
           [--seeds 10] [--json out.json] [--smoke]

--smoke: one seed of p = 4, m = 8 at both limits, a check that the script
runs, as ctest's bench family runs it. --ref may then be left out (ctest has
no checkout of the reference): a stand-in, each rank's GPipe order (every F,
then every B, then every W), takes the place of the reference's orders, so
everything but the reference's own code runs (zbc's schedules, the
simulation of imported orders, the table), and the comparison means nothing.
"""
import argparse
import json
import os
import statistics
import tempfile

import reference
import uneven_stages

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def reference_orders(zb, graph_mod, cost, limit):
    """Each variant of the reference's heuristic that passes its own asserts:
    per rank, (kind, microbatch) in execution order."""
    p, m = cost["ranks"], cost["microbatches"]
    config = graph_mod.GraphConfig(
        mem_f=list(cost["M_B"]),
        mem_b=[w - b for b, w in zip(cost["M_B"], cost["M_W"])],
        mem_w=[-w for w in cost["M_W"]],
        max_mem=[limit] * p,
        cost_f=[float(x) for x in cost["F"]],
        cost_b=[float(x) for x in cost["B"]],
        cost_w=[float(x) for x in cost["W"]],
        cost_comm=float(cost["comm"]),
        n_stages=p, n_micro=m)
    graph = zb.Graph.build_graph(p, m, config)
    orders = []
    for allow_bubble in (True, False):
        for prioritize_b in (True, False):
            for no_bubble_greedy in (True, False):
                try:
                    _, end, _ = graph.manual_order(
                        allow_bubble_before_first_b=allow_bubble,
                        prioritize_b=prioritize_b, no_bubble_greedy=no_bubble_greedy)
                except (AssertionError, ValueError):
                    continue  # an F planned before its input, or memory
                # Each stage runs its ops by their planned ends
                # (create_scheduled_nodes, what its runtime executes).
                ranks = [[] for _ in range(p)]
                for node, t in enumerate(end):
                    kind, stage, mb = node // (p * m), (node // m) % p, node % m
                    ranks[stage].append((t, kind, mb))
                orders.append([[("FIW"[k], mb) for _, k, mb in sorted(r)] for r in ranks])
    return orders


def stand_in_orders(cost):
    """--smoke without --ref: each rank's GPipe order, in place of the
    reference's variants."""
    m = cost["microbatches"]
    return [[[(k, mb) for k in "FIW" for mb in range(m)]
             for _ in range(cost["ranks"])]]


def simulate(zbc, cost, limit, order):
    """zbc's makespan of `order`, or None if it breaks the limit."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(cost, f)
        cost_path = f.name
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        f.write("\n".join(",".join(f"{r}{k}{mb}" for k, mb in ops)
                          for r, ops in enumerate(order)) + "\n")
        csv_path = f.name
    out = reference.run_retrying([zbc, "schedule", "--import", csv_path, "--cost-file",
                                  cost_path, "--format", "json"])
    os.unlink(cost_path)
    os.unlink(csv_path)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip())
    result = json.loads(out.stdout)
    if max(result["peak_memory"]) > limit * (1 + 1e-9):
        return None
    return result["makespan"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", help="reference checkout or bare git dir")
    parser.add_argument("--zbc", default=os.path.join(ROOT, "build", "bin", "zbc"))
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--json")
    parser.add_argument("--smoke", action="store_true",
                        help="one seed of p = 4, m = 8: checks that it runs "
                        "(without --ref, on a stand-in for the reference)")
    args = parser.parse_args()
    if not args.ref and not args.smoke:
        parser.error("--ref is required (only --smoke runs without it)")
    if args.ref:
        graph_mod, zb = reference.load(args.ref, ["graph", "zb"], stand_ins={"torch": {"Tensor": object}, "pulp": {}})
        orders_of = lambda cost, limit: reference_orders(zb, graph_mod, cost, limit)
    else:
        print("--smoke without --ref: the reference's orders replaced by a "
              "GPipe stand-in; the comparison means nothing\n")
        orders_of = lambda cost, limit: stand_in_orders(cost)
    if args.smoke:
        args.seeds = 1

    records, rows = [], []
    for p in (4,) if args.smoke else (4, 8, 16):
        for m in (2 * p,) if args.smoke else (2 * p, 4 * p):
            for factor, label in ((1, "p M_B"), (2, "2p M_B")):
                row = []
                for seed in range(args.seeds):
                    cost = uneven_stages.problem(p, m, seed)
                    limit = factor * p * max(cost["M_B"])
                    zbc_makespan, bound, _ = uneven_stages.run(args.zbc, cost, limit, 0)
                    made = [simulate(args.zbc, cost, limit, order)
                            for order in orders_of(cost, limit)]
                    made = [x for x in made if x is not None]
                    ref = min(made) if made else None
                    record = {"p": p, "m": m, "limit": label, "seed": seed,
                              "zbc": zbc_makespan, "reference": ref, "bound": bound,
                              "variants": len(made)}
                    records.append(record)
                    row.append(record)
                rows.append((p, m, label, row))

    print("| p | m | limit | reference: mean gap | worst | zb-auto: mean gap | worst "
          "| zb-auto shorter / longer | reference has no schedule |")
    print("|---|---|---|---|---|---|---|---|---|")
    for p, m, label, row in rows:
        done = [r for r in row if r["reference"] is not None]
        ref_gap = [r["reference"] / r["bound"] - 1 for r in done]
        zbc_gap = [r["zbc"] / r["bound"] - 1 for r in row]
        shorter = sum(r["zbc"] < r["reference"] * (1 - 1e-9) for r in done)
        longer = sum(r["zbc"] > r["reference"] * (1 + 1e-9) for r in done)
        print(f"| {p} | {m} | {label} | "
              + (f"{statistics.mean(ref_gap) * 100:.2f}% | {max(ref_gap) * 100:.2f}%"
                 if done else "- | -")
              + f" | {statistics.mean(zbc_gap) * 100:.2f}% | {max(zbc_gap) * 100:.2f}%"
              f" | {shorter} / {longer} | {len(row) - len(done)} |")
    done = [r for r in records if r["reference"] is not None]
    worse = [r for r in done if r["zbc"] > r["reference"] * (1 + 1e-9)]
    print(f"\n{len(records)} inputs; the reference has a schedule on {len(done)}: "
          f"zb-auto is shorter on {sum(r['zbc'] < r['reference'] * (1 - 1e-9) for r in done)}, "
          f"longer on {len(worse)}"
          + (f" (by up to {max(r['zbc'] / r['reference'] - 1 for r in worse) * 100:.2f}%)"
             if worse else ""))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=1)


if __name__ == "__main__":
    main()
