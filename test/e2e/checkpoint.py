"""The e2e mode of the checkpointed backward (driven by e2e.py).

  checkpoint-equivalence  (the cases --cases asks for, as
                  recompute-equivalence) every registered schedule, p in
                  {2, 4}, the example GPT and Llama (one block or layer
                  per stage), m = 2p, SGD, compiled with --recompute checkpoint: each
                  stage's F keeps only its checkpoints and its backward
                  phases rebuild the rest (Note [Checkpointed backward] in
                  CheckpointBackward.cpp). The same order is compiled for
                  the pipeline without checkpoints (zbc-opt --zb-backward,
                  the program's ranks as a schedule file of one's own).
                  After one step every parameter on every rank is bitwise
                  equal between the two, and equals zbc-reference's
                  single-process result to 1e-5 relative; on every rank of
                  both the measured peak live bytes equal the verifier's
                  prediction, and the checkpointed pipelines stash fewer
                  F.I than the plain ones.
(Below the least limit of every plain order, a six-block GPT at p = 4: the
mode recompute-limit in recompute.py.)
"""
import os
import re
import sys

from zbc_e2e import run
from recompute import (_recomputes, each_lever_case, train_against_same_order,
                       without_ops)


def stash_keys(program_text):
    """The F.I keys the F phases yield, over every stage."""
    return sum(len(re.findall(r'"F\.\d+" = ', line))
               for line in program_text.splitlines()
               if "zb.yield" in line and '"F.' in line)


def plain_pipeline_with_order(zbc_opt, source, stages, checkpointed_text):
    """The pipeline of `source` without checkpoints, with the zb.program of
    `checkpointed_text` (its ranks' memory plans dropped: they are the
    checkpointed pipeline's): the same order for the plain stages."""
    plain = run([zbc_opt, f"--zb-backward=stages={stages}", source]).stdout
    program, _ = without_ops(checkpointed_text, "compute R")
    start = program.index("  zb.program @")
    body = program[start:program.rstrip().rindex("}")]
    end = plain.rstrip().rindex("}")
    return plain[:end] + body + "}\n"


def equivalence(args):
    zbc = os.path.join(args.bin, "zbc")
    zbc_opt = os.path.join(args.bin, "zbc-opt")
    reference = os.path.join(args.bin, "zbc-reference")
    tensors, lower, cases = 0, 0, 0
    for case, p, work, full, source, stages in each_lever_case(
            args, ["--recompute", "checkpoint"], "checkpoint", 0):
        cases += 1
        with open(os.path.join(full, "program.mlir")) as f:
            checkpointed = f.read()
        plain_text = plain_pipeline_with_order(zbc_opt, source, stages,
                                               checkpointed)
        kept, stashed = stash_keys(checkpointed), stash_keys(plain_text)
        if not kept < stashed:
            sys.exit(f"FAILED: {case}: the checkpointed F phases stash "
                     f"{kept} F.I, the plain ones {stashed}")
        reports_full, reports_plain, summary = train_against_same_order(
            zbc, reference, full, work, p, plain_text, "checkpoints")
        if _recomputes(reports_full):
            sys.exit(f"FAILED: {case}: a checkpointed backward ran R ops")
        tensors += int(re.search(r"(\d+) parameters", summary).group(1))
        peaks_full = [rep["measured_peak_bytes"] for rep in reports_full]
        peaks_plain = [rep["measured_peak_bytes"] for rep in reports_plain]
        lower += max(peaks_full) < max(peaks_plain)
        print(f"ok {case}: F.I {kept} of {stashed}; bitwise equal to the "
              f"order without checkpoints; peaks {peaks_full} vs "
              f"{peaks_plain}; {summary}", flush=True)
    print(f"{cases} of {cases} checkpointed pipelines train bitwise "
          f"as the same orders without checkpoints ({tensors} tensors against "
          f"the reference); measured peak = predicted on every rank; the "
          f"largest rank peak lower in {lower} of {cases}")


MODES = {"checkpoint-equivalence": equivalence}
