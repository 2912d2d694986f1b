"""The e2e mode of activation offload as scheduled copies (driven by
e2e.py).

  offload-equivalence  every registered schedule, p in {2, 4}, the example
                  GPT and Llama (one block or layer per stage), m = 2p, SGD,
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
"""
import os
import re
import sys

from recompute import _source, train_against_same_order, without_ops
from zbc_e2e import fresh_dir, run
from zbc_models import schedules

# Bytes per unit of schedule time: any positive speed gives the same order
# of copies under --offload full; a fast one keeps the planned makespan near
# the plain order's.
COPY_BANDWIDTH = "1e12"


def _copies(reports):
    return sum(rep["profile"]["copies"] for rep in reports)


def equivalence(args):
    zbc = os.path.join(args.bin, "zbc")
    reference = os.path.join(args.bin, "zbc-reference")
    cases = [(name, v, p, model) for name, v in schedules(zbc)
             for p in (2, 4) for model in ("gpt", "llama")]
    tensors = 0
    for name, v, p, model in cases:
        case = f"{name}-p{p}-{model}"
        work = fresh_dir(args.work, case)
        source = os.path.join(work, "model.mlir")
        with open(source, "w") as f:
            f.write(_source(args, model, v * p))
        m = 2 * p
        full = os.path.join(work, "full")
        run([zbc, "compile", source, "--ranks", str(p), "--microbatches",
             str(m), "--schedule", name, "--offload", "full",
             "--copy-bandwidth", COPY_BANDWIDTH, "-o", full])
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
        for r, rep in enumerate(reports_full):
            if rep["measured_host_peak_bytes"] != rep["predicted_host_peak_bytes"]:
                sys.exit(f"FAILED: {case} rank {r}: measured host peak "
                         f"{rep['measured_host_peak_bytes']} bytes, predicted "
                         f"{rep['predicted_host_peak_bytes']}")
        tensors += int(re.search(r"(\d+) parameters", summary).group(1))
        device = [rep["measured_peak_bytes"] for rep in reports_full]
        host = [rep["measured_host_peak_bytes"] for rep in reports_full]
        device_plain = [rep["measured_peak_bytes"] for rep in reports_plain]
        print(f"ok {case}: {copies} copies; bitwise equal to the order "
              f"without them; device peaks {device} vs {device_plain}, host "
              f"peaks {host}; {summary}", flush=True)
    print(f"{len(cases)} of {len(cases)} offloading pipelines train bitwise "
          f"as their orders without copies ({tensors} tensors against the "
          f"reference); measured device and host peaks = predicted on every "
          f"rank")


MODES = {"offload-equivalence": equivalence}
