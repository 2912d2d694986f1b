"""The e2e mode of activation offload as scheduled copies (driven by
e2e.py).

  offload-equivalence  (the cases --cases asks for, as
                  recompute-equivalence) every registered schedule, p in
                  {2, 4}, the example GPT and Llama (one block or layer
                  per stage), m = 2p, SGD,
                  compiled with --offload full: every microbatch's stash
                  goes to the host arena after its F (a zb.offload on the
                  rank's copy queue) and comes back before its backward (a
                  zb.reload into a buffer of its own; Note [Offload in the
                  IR]). The same order with its copies taken out is compiled
                  as a schedule file of one's own. After one step every
                  parameter on every rank is bitwise equal between the two,
                  and equals zbc-reference's single-process result to 1e-5
                  relative; on every rank the measured device and host peak
                  live bytes equal the verifier's, and the ranks ran every
                  copy.

  levers-mixed-equivalence  (--cases covering: all but the representative
                  zb-v Llama) both levers in one schedule: zb-auto, 1F1B and
                  zb-v, p = 4, the example GPT and Llama, m = 8, compiled
                  with --recompute auto --offload auto on a cost file whose
                  R costs an F and whose copies take about one (so neither
                  lever is free) and the least activation budget, of 0.5 MB
                  to 1.6 MB, under which zb-schedule keeps some microbatches recomputed
                  and others offloaded (fitByLevers). The same order without
                  its R ops and copies trains bitwise equal; measured device
                  and host peaks equal the verifier's; the ranks ran every R
                  and every copy, and report.json counts them per rank.
"""
import json
import os
import re
import sys

from recompute import (_recomputes, case_model, chosen_cases,
                       each_lever_case, train_against_same_order, without_ops)
from zbc_e2e import fresh_dir, run, schedule_only

# Bytes per unit of schedule time: any positive speed gives the same order
# of copies under --offload full; a fast one keeps the planned makespan near
# the plain order's.
COPY_BANDWIDTH = "1e12"


def _copies(reports):
    return sum(rep["profile"]["copies"] for rep in reports)


def equivalence(args):
    zbc = os.path.join(args.bin, "zbc")
    reference = os.path.join(args.bin, "zbc-reference")
    tensors, cases = 0, 0
    for case, p, work, full, _, _ in each_lever_case(
            args, ["--offload", "full", "--copy-bandwidth", COPY_BANDWIDTH],
            "offload-full", 1):
        cases += 1
        with open(os.path.join(full, "program.mlir")) as f:
            plain_text, copies = without_ops(f.read(), "offload|reload")
        if copies == 0 or copies % 2:
            sys.exit(f"FAILED: {case}: {copies} copies, want an offload and "
                     "a reload per offloaded (stage, microbatch)")
        reports_full, reports_plain, summary = train_against_same_order(
            zbc, reference, full, work, p, plain_text, "copies")
        if _copies(reports_full) != copies or _copies(reports_plain):
            sys.exit(f"FAILED: {case}: the ranks ran {_copies(reports_full)} "
                     f"copies, want {copies}; without them "
                     f"{_copies(reports_plain)}")
        _check_host_peaks(case, reports_full)
        tensors += int(re.search(r"(\d+) parameters", summary).group(1))
        device = [rep["measured_peak_bytes"] for rep in reports_full]
        host = [rep["measured_host_peak_bytes"] for rep in reports_full]
        device_plain = [rep["measured_peak_bytes"] for rep in reports_plain]
        print(f"ok {case}: {copies} copies; bitwise equal to the order "
              f"without them; device peaks {device} vs {device_plain}, host "
              f"peaks {host}; {summary}", flush=True)
    print(f"{cases} of {cases} offloading pipelines train bitwise "
          f"as their orders without copies ({tensors} tensors against the "
          f"reference); measured device and host peaks = predicted on every "
          f"rank")


def _check_host_peaks(case, reports):
    for r, rep in enumerate(reports):
        if rep["measured_host_peak_bytes"] != rep["predicted_host_peak_bytes"]:
            sys.exit(f"FAILED: {case} rank {r}: measured host peak "
                     f"{rep['measured_host_peak_bytes']} bytes, predicted "
                     f"{rep['predicted_host_peak_bytes']}")


# Unit times with an R as long as an F (full recomputation's price), and a
# copy speed in bytes per unit: a stage's stash of the example models
# (a few hundred KB) then copies in about an F's time. Recompute auto also
# weighs each stage's cheap policy, whose R is that stage's cheap FLOPs at
# F's rate (Note [Measured costs]): where it makes every relief an R, a
# faster copy queue is tried.
MIXED_COSTS = {"F": [1], "B": [1], "W": [1], "R": [1], "comm": 0}
MIXED_BANDWIDTHS = [140000, 280000]
# Activation budgets tried in turn, in bytes: the least first.
MIXED_BUDGETS = [500000 + 100000 * k for k in range(12)]


def mixed_equivalence(args):
    zbc = os.path.join(args.bin, "zbc")
    reference = os.path.join(args.bin, "zbc-reference")
    # p = 4: at p = 2 a rank holds at most two microbatches in flight, and
    # one relief, which ever lever is cheaper for it, is all a budget needs.
    p = 4
    cases = chosen_cases(args, [(name, v, model)
                                for name, v in (("zb-auto", 1), ("1f1b", 1),
                                                ("zb-v", 2))
                                for model in ("gpt", "llama")],
                         lambda c: (c[0], p, c[2]), "mixed")
    for name, v, model in cases:
        case = f"{name}-p{p}-{model}"
        work, source = case_model(args, case, model, v * p)
        costs = os.path.join(work, "costs.json")
        out = os.path.join(work, "mixed")

        def compile_at(budget, env=None):
            fresh_dir(out)
            return run([zbc, "compile", source, "--ranks", str(p),
                        "--microbatches", str(2 * p), "--schedule", name,
                        "--cost-file", costs, "--activation-budget",
                        str(budget), "--recompute", "auto", "--offload",
                        "auto", "-o", out], check=False, env=env).returncode

        # The budgets are probed without building executables, then the
        # one found is compiled whole.
        def probe():
            for bandwidth in MIXED_BANDWIDTHS:
                with open(costs, "w") as f:
                    json.dump({**MIXED_COSTS, "copy_bandwidth": bandwidth}, f)
                for budget in MIXED_BUDGETS:
                    if compile_at(budget, schedule_only()):
                        continue  # below one microbatch's stash
                    with open(os.path.join(out, "program.mlir")) as f:
                        text = f.read()
                    _, rebuilt = without_ops(text, "compute R")
                    _, copies = without_ops(text, "offload|reload")
                    if rebuilt and copies:
                        return budget, text, rebuilt, copies
            return None
        found = probe()
        if found is None:
            sys.exit(f"FAILED: {case}: no budget of {MIXED_BUDGETS} at copy "
                     f"bandwidths {MIXED_BANDWIDTHS} gave a schedule with "
                     "both R ops and copies")
        budget, text, rebuilt, copies = found
        if compile_at(budget):
            sys.exit(f"FAILED: {case}: activation budget {budget} compiled "
                     "as a probe, not whole")
        with open(os.path.join(out, "program.mlir")) as f:
            if f.read() != text:
                sys.exit(f"FAILED: {case}: the program at activation budget "
                         f"{budget} differs between two compiles")
        # report.json names each rank's levers: an R per recomputed
        # microbatch, an offload and a reload per offloaded one.
        with open(os.path.join(out, "report.json")) as f:
            memory = json.load(f)["memory"]
        reported = (sum(r.get("recomputed", 0) for r in memory),
                    2 * sum(r.get("offloaded", 0) for r in memory))
        if reported != (rebuilt, copies):
            sys.exit(f"FAILED: {case}: report.json names {reported[0]} "
                     f"recomputed and {reported[1] // 2} offloaded; the "
                     f"program has {rebuilt} R and {copies} copies")
        plain_text, _ = without_ops(text, "compute R|offload|reload")
        reports, reports_plain, summary = train_against_same_order(
            zbc, reference, out, work, p, plain_text, "R ops and copies")
        if (_recomputes(reports) != rebuilt or _copies(reports) != copies or
                _recomputes(reports_plain) or _copies(reports_plain)):
            sys.exit(f"FAILED: {case}: the ranks ran {_recomputes(reports)} "
                     f"R and {_copies(reports)} copies, want {rebuilt} and "
                     f"{copies}")
        _check_host_peaks(case, reports)
        device = [rep["measured_peak_bytes"] for rep in reports]
        device_plain = [rep["measured_peak_bytes"] for rep in reports_plain]
        print(f"ok {case}: activation budget {budget}: {rebuilt} R and "
              f"{copies} copies in one schedule; bitwise equal to the order "
              f"without them; device peaks {device} vs {device_plain}; "
              f"{summary}", flush=True)
    print(f"{len(cases)} of {len(cases)} pipelines with both levers train "
          f"bitwise as their orders without them; measured device and host "
          f"peaks = predicted on every rank")


MODES = {"offload-equivalence": equivalence,
         "levers-mixed-equivalence": mixed_equivalence}
