#!/usr/bin/env python3
"""V-Half and V-Min of the reference implementation, timed by zbc.

Runs the reference implementation's own Python code (sail-sg's
zero-bubble-pipeline-parallelism, megatron/core/pipeline_parallel/zerobubble/
scheduler/), unchanged, for the controllable-memory V schedules, and times
each order it returns with zbc's simulator (`zbc schedule --import`), so the
reference and zbc are measured by one rule. Two of its schedulers build them:

  zbv_greedy.py        the fixed V-Half / V-Min patterns (the offsets zbc's
                       VShapes.cpp uses) with its greedy reordering of the
                       warm-up and cool-down: what its training runtime runs
                       for --zero-bubble-v-schedule-mem-setup half|min;
  v_auto_schedule.py   the general search (building blocks with searched
                       offsets, then repeat, squeeze and reorder) under a
                       memory limit: run here at each pattern's own peak,
                       2 ((p+2)//2) and 2 ((p+4)//3) chunk activations.

The two files need only the standard library (and graph.py beside them);
bench/reference.py loads them unchanged.

For every case (p in {4, 8, 16}, m in {2p, 4p}, F = B = 1 and W in {1, 0.5},
comm 0) it prints the bubble of both and the best, each order's peak in
chunk M_B under two accountings (M_W = M_B, the reference's own, and
M_W = M_B / 2), beside zbc's v-half / v-min, as a markdown table, and
writes everything as JSON (--json FILE). The general search takes minutes at
p = 16: the whole grid takes about half an hour on 2 cores, nearly all of it
there (--no-search skips it, --p picks the pipeline sizes).

With --between it instead runs the reference's search at limits between
V-Min's memory and 1F1B's (2p chunk activations) against zb-v at the same
limit: there no fixed pattern is the answer, and zb-v's building blocks
(VShapes.cpp) compete with the reference's search over the same family.

Usage: bench/v_reference.py --ref GITDIR_OR_CHECKOUT [--zbc build/bin/zbc]
           [--json out.json] [--p 4,8,16] [--between "8:32:0.5:9,11;..."]
           [--smoke]
--smoke: p = 4, m = 8 only, a check that the script runs, as ctest's bench
family runs it. --ref may then be left out (ctest has no checkout of the
reference): a stand-in, each rank's phase order (every F, f, B, b, W, w in
turn, a valid V order), takes the place of zbv_greedy's orders and the
search is skipped, so everything but the reference's own code runs (zbc's
v-half and v-min, the simulation of imported V orders, the table), and the
comparison means nothing.
The reference: `git clone https://github.com/sail-sg/zero-bubble-pipeline-parallelism`
(measured at its commit 39f2c186).
"""
import argparse
import contextlib
import io
import json
import os
import tempfile

import reference

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_reference(ref):
    """The reference's zbv_greedy and v_auto_schedule (bench/reference.py)."""
    zbv_greedy, v_auto_schedule = reference.load(ref, ["graph", "zbv_greedy", "v_auto_schedule"])[1:]
    return zbv_greedy, v_auto_schedule


# A rank's order as (letter, microbatch); the letters are the reference's:
# F f = chunk-0 / chunk-1 forward, B b = chunk-1 / chunk-0 backward (input
# gradient), W w = chunk-1 / chunk-0 weight gradient.
def csv_cell(p, rank, letter, mb):
    chunk1 = letter in "fBW"
    stage = 2 * p - 1 - rank if chunk1 else rank
    kind = {"F": "F", "B": "I", "W": "W"}[letter.upper()]
    return f"{stage}{kind}{mb}"


def greedy_order(zbv_greedy, p, m, mode, f, b, w):
    """zbv_greedy's V-Half ("half") or V-Min ("min"), per rank."""
    graph = zbv_greedy.PipelineGraph(p, m, mode, f, b, w, 0)
    pattern = {"half": graph.stable_pattern_v_half, "min": graph.stable_pattern_v_min}[mode](p)
    # Its cost list per type F f B b W w (create_schedule's).
    cost = [f, f, b, b, w, w]
    _, _, stage_order = graph.schedule_from_pattern(pattern, m, cost, do_reorder=True)
    return [[("FfBbWw"[t], mb) for t, mb in order] for order in stage_order]


def stand_in_order(p, m):
    """--smoke without --ref: each rank's phase order, in place of
    zbv_greedy's (valid: each phase waits only on earlier phases or on its
    neighbour in the same phase)."""
    return [[(letter, mb) for letter in "FfBbWw" for mb in range(m)]
            for _ in range(p)]


def letter_of(node_type, chunk):
    """v_auto's (type, chunk) as the reference's letter (see csv_cell)."""
    return {("F", 0): "F", ("F", 1): "f", ("B", 1): "B", ("B", 0): "b",
            ("W", 1): "W", ("W", 0): "w"}[(node_type, int(chunk))]


def search_order_letters(v_auto, p, m, f, b, w, max_mem):
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            nodes = v_auto.schedule(p, m, (f, b, w, 0), max_mem)
        except TypeError:  # it found no schedule (transform_schedule(None))
            return None
    return [[(letter_of(n.type, n.chunk), n.minibatch)
             for n in sorted(rank, key=lambda n: (n.start_time, n.completion_time))]
            for rank in nodes]


def zbc_run(zbc, p, m, w, mem_w, schedule=None, orders=None, limit=None):
    """zbc's simulation (bubble, peak in chunk M_B) of `orders` or of a schedule
    (built within `limit` chunk M_B, if given)."""
    args = [zbc, "schedule", "--ranks", str(p), "--microbatches", str(m), "--virtual", "2",
            "--cost", f"F=1,B=1,W={w},comm=0", "--mem", f"B=1,W={mem_w}", "--format", "json"]
    if limit is not None:
        args += ["--activation-budget", str(limit)]
    if orders is not None:
        text = "\n".join(",".join(csv_cell(p, r, l, mb) for l, mb in order)
                         for r, order in enumerate(orders)) + "\n"
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
            f.write(text)
        args += ["--import", f.name, "--placement", "v"]
    else:
        args += ["--schedule", schedule]
    out = reference.run_retrying(args)
    if orders is not None:
        os.unlink(f.name)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip())
    result = json.loads(out.stdout)
    return result["bubble_rate"], max(result["peak_memory"])


def print_row(row):
    """One line of the table: both bubbles, the better one's peaks, zbc's."""
    greedy, search, zbc = row["greedy"], row.get("search"), row["zbc"]
    best = search if search and search[1][0] < greedy[1][0] else greedy
    cells = [row["schedule"], row["p"], row["m"], row["W"], f"{greedy[1][0]:.4f}",
             f"{search[1][0]:.4f}" if search else "-", f"{best[1][0]:.4f}",
             f"{best[1][1]:g} / {best[0.5][1]:g}", f"{zbc[1][0]:.4f}",
             f"{zbc[1][1]:g} / {zbc[0.5][1]:g}"]
    print("| " + " | ".join(str(c) for c in cells) + " |", flush=True)


def between(args, v_auto):
    """--between: the reference's search against zb-v at limits between V-Min's
    and 1F1B's memory (2p chunk activations), where no fixed pattern is
    the answer; each limit in chunk M_B, the reference's own accounting
    (M_W = M_B), so its order fits zbc's limit under either."""
    results = []
    print("| p | m | W | limit | reference search | zbc zb-v (M_W = M_B) | zbc zb-v (M_W = M_B/2) |")
    print("|---|---|---|---|---|---|---|")
    for case in args.between.split(";"):
        p, m, w, limits = case.split(":")
        p, m, w = int(p), int(m), float(w)
        for limit in (int(x) for x in limits.split(",")):
            order = search_order_letters(v_auto, p, m, 2, 2, int(2 * w), limit)
            ref = None if order is None else zbc_run(args.zbc, p, m, w, 1, orders=order)
            zbv = {k: zbc_run(args.zbc, p, m, w, k, schedule="zb-v", limit=limit)
                   for k in (1, 0.5)}
            results.append({"p": p, "m": m, "W": w, "limit": limit, "reference": ref,
                            "zbv": zbv})
            print(f"| {p} | {m} | {w:g} | {limit} | "
                  + (f"{ref[0]:.4f} (peak {ref[1]:g})" if ref else "none") + " | "
                  + " | ".join(f"{zbv[k][0]:.4f} (peak {zbv[k][1]:g})" for k in (1, 0.5))
                  + " |", flush=True)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", help="reference checkout or bare git dir")
    parser.add_argument("--zbc", default=os.path.join(ROOT, "build", "bin", "zbc"))
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--p", default="4,8,16")
    parser.add_argument("--no-search", action="store_true",
                        help="skip v_auto_schedule (the slow general search)")
    parser.add_argument("--between", metavar="P:M:W:L1,L2,..;...",
                        help="instead: the reference's search against zb-v at these limits")
    parser.add_argument("--smoke", action="store_true",
                        help="p = 4, m = 8: checks that it runs (without --ref, "
                        "on a stand-in for the reference)")
    args = parser.parse_args()
    if not args.ref and not args.smoke:
        parser.error("--ref is required (only --smoke runs without it)")
    if args.smoke:
        args.p = "4"
    if args.ref:
        zbv_greedy, v_auto = load_reference(args.ref)
    else:
        if args.between:
            parser.error("--between needs --ref")
        print("--smoke without --ref: zbv_greedy's orders replaced by a stand-in, "
              "no search; the comparison means nothing\n")
        zbv_greedy, v_auto = None, None
        args.no_search = True
    if args.between:
        results = between(args, v_auto)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=1)
        return

    results = []
    print("| schedule | p | m | W | greedy bubble | search bubble | reference (best) | "
          "ref peak M_W=1 / 0.5 | zbc bubble | zbc peak M_W=1 / 0.5 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for p in [int(x) for x in args.p.split(",")]:
        for m in (2 * p,) if args.smoke else (2 * p, 4 * p):
            for w in (1.0, 0.5):
                for name, mode, bound in (("v-half", "half", (p + 2) // 2),
                                          ("v-min", "min", (p + 4) // 3)):
                    row = {"schedule": name, "p": p, "m": m, "F": 1, "B": 1, "W": w}
                    # The reference's costs must be numbers its %d prints: scale by 2.
                    greedy = (greedy_order(zbv_greedy, p, m, mode, 2, 2, int(2 * w))
                              if zbv_greedy else stand_in_order(p, m))
                    row["greedy"] = {k: zbc_run(args.zbc, p, m, w, k, orders=greedy)
                                     for k in (1, 0.5)}
                    if not args.no_search:
                        search = search_order_letters(v_auto, p, m, 2, 2, int(2 * w), 2 * bound)
                        row["search"] = None if search is None else {
                            k: zbc_run(args.zbc, p, m, w, k, orders=search) for k in (1, 0.5)}
                    row["zbc"] = {k: zbc_run(args.zbc, p, m, w, k, schedule=name)
                                  for k in (1, 0.5)}
                    results.append(row)
                    print_row(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
