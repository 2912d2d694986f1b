"""The e2e modes of recomputation as scheduled R ops (driven by e2e.py).

  recompute-equivalence  (the cases that --cases asks for, chosen_cases
                  below: all of them by hand, CI a covering and the
                  representative cases) every registered schedule, p in
                  {2, 4}, the example GPT and Llama (one block or layer
                  per stage), m = 2p, SGD, compiled with --recompute full: every
                  microbatch's F keeps only its inputs and a zb.compute R
                  before its backward runs it again (Note [Recomputation in
                  the IR]). The same order with its R ops taken out is
                  compiled as a schedule file of one's own. After one step
                  every parameter on every rank is bitwise equal between
                  the two, and equals zbc-reference's single-process result
                  to 1e-5 relative; on every rank of both the measured peak
                  live bytes equal the verifier's prediction, and the
                  recomputed run ran an R for every (stage, microbatch).
  recompute-selective-equivalence  the same with --recompute selective:
                  every stage states what its R rebuilds (the cheap part of
                  its stash, Note [Selective recomputation]), each R runs
                  fewer ops than its F, and the F keeps the rest.
  recompute-limit  gpt-small's six blocks at the example GPT's sizes
                  (zbc-dsl-gpt --layers 6 --no-cuts) on 4 ranks, zb-auto,
                  m = 8: the least
                  --mem-limit it fits without recomputation (to 5%,
                  searched upwards), then 5% above it: with --recompute auto the planned
                  makespan is strictly shorter than without, and it
                  compiles, proves, trains one step as the reference does,
                  every rank's measured peak the predicted one, within the
                  limit. Below that least limit (5% under it) neither the
                  plain order nor --recompute full compiles (a rank holds
                  the stash of the microbatch whose backward runs,
                  recomputed or not), --recompute auto compiles by
                  checkpointing the backward, and --recompute checkpoint:
                  it proves, trains one step as the reference does, every
                  rank's measured peak the predicted one, within the limit.
"""
import array
import json
import os
import re
import struct
import sys

from zbc_e2e import fresh_dir, run, schedule_only
from zbc_models import gpt, llama, schedules


def without_ops(program_text, ops):
    """The program with the ops `ops` spells taken out ("compute R",
    "offload|reload"), and the tokens naming them, and each rank's memory
    plan dropped: the same order of F, B and W. Returns it and the number of
    ops taken out."""
    pattern = re.compile(r"^\s*(%[\w.]+) = zb\.(?:" + ops +
                         r") stage (\d+) mb (\d+).*$", re.M)
    tokens = pattern.findall(program_text)
    text = pattern.sub("", program_text)
    for token, _, _ in tokens:
        text = re.sub(re.escape(token) + r"(?![\w.])(, )?", "", text)
    text = re.sub(r", \)", ")", text)
    text = text.replace(" after()", "")
    text = re.sub(r"(zb\.rank \d+) attributes \{.*\} \{", r"\1 {", text)
    return text, len(tokens)


def without_recompute(program_text):
    """The program with its R ops taken out: the same order of F, B and W."""
    return without_ops(program_text, "compute R")


def case_model(args, case, model, stages):
    """A fresh work folder for `case` holding the example `model` ("gpt" or
    "llama") cut into `stages`: returns the folder and the model's path."""
    work = fresh_dir(args.work, case)
    source = os.path.join(work, "model.mlir")
    with open(source, "w") as f:
        f.write(_source(args, model, stages))
    return work, source


def _source(args, model, stages):
    if model == "gpt":
        return gpt(os.path.join(args.bin, "zbc-dsl-gpt"), stages)
    return llama(os.path.join(args.bin, "zbc-dsl-llama"), stages)


def _train(out, work, name):
    """One step of the compiled ranks: the saved parameters' directory and
    each rank's report."""
    saved = os.path.join(work, f"saved-{name}")
    report = os.path.join(work, f"report-{name}")
    run([os.path.join(out, "launch.sh"), "--steps", "1", "--quiet", "--save",
         saved, "--report", report])
    reports = []
    for r in range(len(os.listdir(report))):
        with open(os.path.join(report, f"rank{r}.json")) as f:
            rep = json.load(f)
        if rep["measured_peak_bytes"] != rep["predicted_peak_bytes"]:
            sys.exit(f"FAILED: {work} ({name}) rank {r}: measured peak "
                     f"{rep['measured_peak_bytes']} bytes, predicted "
                     f"{rep['predicted_peak_bytes']}")
        reports.append(rep)
    return saved, reports


def _tensors(path):
    """Each tensor's bytes in a safetensors file (its metadata, which names
    the schedule, apart)."""
    with open(path, "rb") as f:
        data = f.read()
    size = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + size])
    body = data[8 + size:]
    return {name: body[entry["data_offsets"][0]:entry["data_offsets"][1]]
            for name, entry in header.items() if name != "__metadata__"}


def _largest_relative_error(saved_a, saved_b, ranks):
    """The largest difference of one f32 parameter between two saved
    steps, relative to the largest magnitude of its tensor."""
    largest = 0.0
    for r in range(ranks):
        a = _tensors(os.path.join(saved_a, f"rank{r}.safetensors"))
        b = _tensors(os.path.join(saved_b, f"rank{r}.safetensors"))
        if a.keys() != b.keys():
            sys.exit(f"FAILED: rank {r} saved {sorted(a)} and {sorted(b)}")
        for name in a:
            x, y = array.array("f", a[name]), array.array("f", b[name])
            scale = max(max(abs(v) for v in y), 1e-12)
            largest = max(largest, max(abs(u - v) for u, v in zip(x, y)) / scale)
    return largest


def train_against_same_order(zbc, reference, full, work, p, plain_text,
                             levers):
    """Compiles `plain_text` (the order of `full`'s program without its
    `levers`), trains one step of each, and checks that every parameter on
    every rank is bitwise equal between the two and that `full` agrees with
    zbc-reference. Returns both runs' reports and the reference's summary."""
    plain_program = os.path.join(work, "same-order.mlir")
    with open(plain_program, "w") as f:
        f.write(plain_text)
    plain = os.path.join(work, "plain")
    run([zbc, "compile", plain_program, "--ranks", str(p), "-o", plain])
    saved_full, reports_full = _train(full, work, "full")
    saved_plain, reports_plain = _train(plain, work, "plain")
    for r in range(p):
        a = _tensors(os.path.join(saved_full, f"rank{r}.safetensors"))
        b = _tensors(os.path.join(saved_plain, f"rank{r}.safetensors"))
        differ = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
        if not a or differ:
            sys.exit(f"FAILED: {work} rank {r}: after a step {differ} "
                     f"differ from the same order without {levers}")
    result = run([reference, os.path.join(full, "program.mlir"),
                  "--steps", "1", "--compare", saved_full])
    return reports_full, reports_plain, result.stdout.strip().splitlines()[-1]


# Which lever cases run (e2e.py's --cases; every case is a registered
# schedule, p in {2, 4} and the example GPT or Llama):
#   all             every case: each schedule at both p with both models
#                   (40 per lever; by hand, as a thorough check);
#   representative  the lever's one case in REPRESENTATIVE: among the
#                   levers a linear, an interleaved and a V schedule, both
#                   models and both p (e2e-levers-quick: the quick loop and
#                   the sanitizer run);
#   covering        half of `all`, as CI's lever tests run it: each schedule
#                   at p = 2 with one model and at p = 4 with the other,
#                   alternating with the schedule and the lever's `turn`, so
#                   that each lever meets every schedule at both p and with
#                   both models, and every (p, model) pair; the two levers
#                   of each turn together run every case of `all` (recompute
#                   full and selective; checkpoint and offload). Less the
#                   lever's representative case, which e2e-levers-quick runs.
REPRESENTATIVE = {"recompute-full": ("zb-h1", 4, "gpt"),
                  "recompute-selective": ("interleaved-1f1b", 2, "llama"),
                  "checkpoint": ("zb-v", 4, "llama"),
                  "offload-full": ("interleaved-1f1b", 4, "gpt"),
                  "mixed": ("zb-v", 4, "llama")}
_HALVES = (((2, "gpt"), (4, "llama")), ((2, "llama"), (4, "gpt")))


def chosen_cases(args, cases, key, lever, turn=None):
    """The cases of `cases` (all of them) that e2e.py's --cases asks for;
    key(case) is its (schedule, p, model), `lever` names its representative
    case in REPRESENTATIVE; `turn` (0 or 1) chooses the covering's half,
    None all but the representative case."""
    which = getattr(args, "cases", "all")
    if which == "all":
        return cases
    representative = REPRESENTATIVE[lever]
    if which == "representative":
        picked = [c for c in cases if key(c) == representative]
        if len(picked) != 1:
            sys.exit(f"FAILED: the representative case {representative} of "
                     f"{lever} is not among its cases")
        return picked
    order = list(dict.fromkeys(key(c)[0] for c in cases))
    return [c for c in cases if key(c) != representative and
            (turn is None or key(c)[1:] in
             _HALVES[(order.index(key(c)[0]) + turn) % 2])]


def each_lever_case(args, lever, lever_name, turn):
    """The cases of the lever equivalence tests that e2e.py's --cases asks
    for (chosen_cases: `lever_name` names it in REPRESENTATIVE, `turn`
    chooses the covering's half): registered schedules, p in {2, 4}, the
    example GPT and Llama (one block or layer per stage), m = 2p, each
    compiled with the options `lever` into `full`. Yields (case, p, work,
    full, source, stages) after the compile: the model source it wrote and
    its stages."""
    zbc = os.path.join(args.bin, "zbc")
    cases = chosen_cases(args, [(name, v, p, model)
                                for name, v in schedules(zbc)
                                for p in (2, 4) for model in ("gpt", "llama")],
                         lambda c: (c[0], c[2], c[3]), lever_name, turn)
    for name, v, p, model in cases:
        case = f"{name}-p{p}-{model}"
        work, source = case_model(args, case, model, v * p)
        full = os.path.join(work, "full")
        run([zbc, "compile", source, "--ranks", str(p), "--microbatches",
             str(2 * p), "--schedule", name, *lever, "-o", full])
        yield case, p, work, full, source, v * p


def _recomputes(reports):
    return sum(c["count"] for rep in reports
               for c in rep["profile"]["computes"] if c["kind"] == "R")


def _selective_policy(out, case):
    """Checks that `out` (compiled with --recompute selective) states a
    policy on every stage and that each R runs fewer ops than its F (Note
    [Selective recomputation]): returns the (R ops, F ops) pairs."""
    with open(os.path.join(out, "program.mlir")) as f:
        program = f.read()
    stages = len(re.findall(r"^\s*zb\.stage \d+", program, re.M))
    policies = re.findall(r"zb\.stage \d+ attributes \{[^\n]*rebuilt = \[", program)
    if len(policies) != stages:
        sys.exit(f"FAILED: {case}: {len(policies)} of {stages} stages state "
                 f"what their R rebuilds")
    counts = []
    src = os.path.join(out, "src")
    for name in sorted(os.listdir(src)):
        with open(os.path.join(src, name)) as f:
            code = f.read()
        forward = dict(re.findall(r"^// F of stage (\d+): (\d+) ops", code, re.M))
        for stage, ops in re.findall(r"^// R of stage (\d+)[^:]*: (\d+) ops",
                                     code, re.M):
            counts.append((int(ops), int(forward[stage])))
    if not counts or any(r >= f for r, f in counts):
        sys.exit(f"FAILED: {case}: the R and F ops per stage are {counts}; a "
                 f"selective R runs fewer than its F")
    return counts


def equivalence(args, mode="full"):
    zbc = os.path.join(args.bin, "zbc")
    reference = os.path.join(args.bin, "zbc-reference")
    tensors, lower, cases = 0, 0, 0
    for case, p, work, full, _, stages in each_lever_case(
            args, ["--recompute", mode], f"recompute-{mode}",
            0 if mode == "full" else 1):
        cases += 1
        ops = ""
        if mode == "selective":
            counts = _selective_policy(full, case)
            ops = (f"R/F ops {sum(r for r, _ in counts)}/"
                   f"{sum(f for _, f in counts)}; ")
        with open(os.path.join(full, "program.mlir")) as f:
            plain_text, recomputed = without_recompute(f.read())
        if recomputed != stages * 2 * p:
            sys.exit(f"FAILED: {case}: {recomputed} R ops, want one per "
                     f"(stage, microbatch), {stages * 2 * p}")
        reports_full, reports_plain, summary = train_against_same_order(
            zbc, reference, full, work, p, plain_text, "R")
        if _recomputes(reports_full) != recomputed or _recomputes(reports_plain):
            sys.exit(f"FAILED: {case}: the ranks ran "
                     f"{_recomputes(reports_full)} R ops, want {recomputed}; "
                     f"without them {_recomputes(reports_plain)}")
        tensors += int(re.search(r"(\d+) parameters", summary).group(1))
        peaks_full = [rep["measured_peak_bytes"] for rep in reports_full]
        peaks_plain = [rep["measured_peak_bytes"] for rep in reports_plain]
        lower += max(peaks_full) < max(peaks_plain)
        print(f"ok {case}: {recomputed} R; {ops}bitwise equal to the order "
              f"without them; peaks {peaks_full} vs {peaks_plain}; {summary}",
              flush=True)
    print(f"{cases} of {cases} pipelines recomputed ({mode}) train bitwise "
          f"as their orders without R ({tensors} tensors against the "
          f"reference); measured peak = predicted on every rank; the largest "
          f"rank peak lower in {lower} of {cases}")


def _train_within(out, work, name, limit_bytes):
    """One step of the program compiled in `out`: every rank's measured
    peak must be the one report.json predicts, and within `limit_bytes`.
    Returns the saved parameters, the ranks' reports and the peaks."""
    with open(os.path.join(out, "report.json")) as f:
        predicted = [r["peak_bytes"] for r in json.load(f)["memory"]]
    saved, reports = _train(out, work, name)
    measured = [rep["measured_peak_bytes"] for rep in reports]
    if measured != predicted or max(measured) > limit_bytes:
        sys.exit(f"FAILED: {name}: measured peaks {measured}, predicted "
                 f"{predicted}, limit {limit_bytes}")
    return saved, reports, measured


def limit(args):
    zbc = os.path.join(args.bin, "zbc")
    reference = os.path.join(args.bin, "zbc-reference")
    # gpt-small's six blocks at the example GPT's sizes (hidden 64,
    # sequences of 32): zbc-reference's step of gpt-small itself took two
    # minutes, of this one a second.
    os.makedirs(args.work, exist_ok=True)
    model = os.path.join(args.work, "gpt-6.mlir")
    with open(model, "w") as f:
        f.write(run([os.path.join(args.bin, "zbc-dsl-gpt"), "--layers", "6",
                     "--no-cuts"]).stdout)
    shape = ["--ranks", "4", "--microbatches", "8", "--schedule", "zb-auto"]
    out = os.path.join(args.work, "probe")

    last_compile = [""]  # what the last compile said

    def compiles(limit_bytes, mode, train=False):
        """The predicted makespan of `mode` at `limit_bytes`, or None if it
        does not compile; the rank executables are built only to `train`."""
        fresh_dir(out)
        result = run([zbc, "compile", model, *shape, "--mem-limit",
                      str(limit_bytes), "--recompute", mode, "-o", out],
                     check=False, env=None if train else schedule_only())
        last_compile[0] = result.stdout + result.stderr
        if result.returncode != 0:
            return None
        with open(os.path.join(out, "report.json")) as f:
            return json.load(f)["predicted_makespan"]

    # The least limit zb-auto fits without recomputation, to 5%, searched
    # upwards from half of what 1F1B with full recomputation holds: below
    # it neither fits (a rank holds one microbatch's stash while its
    # backward runs, recomputed or not), and just above it the plain order
    # has the fewest microbatches in flight.
    fresh_dir(out)
    run([zbc, "compile", model, "--ranks", "4", "--microbatches", "8",
         "--schedule", "1f1b", "--recompute", "full", "-o", out],
        env=schedule_only())
    with open(os.path.join(out, "report.json")) as f:
        high = max(r["peak_bytes"] for r in json.load(f)["memory"]) // 2
    while compiles(high, "none") is None:
        high = int(high * 1.05)
    bytes_limit = int(high * 1.05)
    plain = compiles(bytes_limit, "none")
    recomputed = compiles(bytes_limit, "auto", train=True)
    if plain is None or recomputed is None or not recomputed < plain:
        sys.exit(f"FAILED: at --mem-limit {bytes_limit} the predicted makespan "
                 f"is {recomputed} with --recompute auto, {plain} without")
    saved, reports, measured = _train_within(out, args.work, "auto",
                                             bytes_limit)
    result = run([reference, os.path.join(out, "program.mlir"), "--steps",
                  "1", "--compare", saved])
    print(f"ok: zb-auto fits no less than {high} bytes per rank; at "
          f"{bytes_limit} it plans a makespan of {plain:.4g} without "
          f"recomputation and {recomputed:.4g} ({plain / recomputed:.2f}x "
          f"shorter) with --recompute auto, which trains with "
          f"{_recomputes(reports)} R ops within the limit: measured peaks "
          f"{measured} (= predicted); "
          + result.stdout.strip().splitlines()[-1])

    # Below that least limit no order fits, with R ops or without; the
    # checkpointed backward (Note [Checkpointed backward]) holds one
    # segment of the microbatch at its backward, not its stash, and fits,
    # and --recompute auto takes it there.
    below = int(high / 1.05)
    for mode in ("none", "full"):
        if compiles(below, mode) is not None:
            sys.exit(f"FAILED: --mem-limit {below} compiles with --recompute "
                     f"{mode}: it is not below every plain order's")
    if compiles(below, "auto") is None or "the backward is checkpointed" \
            not in last_compile[0]:
        sys.exit(f"FAILED: --mem-limit {below} with --recompute auto does "
                 f"not compile checkpointed: {last_compile[0]}")
    checkpointed = compiles(below, "checkpoint", train=True)
    if checkpointed is None:
        sys.exit(f"FAILED: --mem-limit {below} does not compile with "
                 f"--recompute checkpoint")
    saved_checkpointed, _, measured = _train_within(out, args.work,
                                                    "checkpoint", below)
    # Against the step above, which the reference checked: another order
    # sums the microbatches' gradients in another order, so to rounding.
    # (The reference interpreter would rebuild every segment op by op,
    # minutes here; e2e-checkpoint-equivalence holds checkpoints to it.)
    error = _largest_relative_error(saved, saved_checkpointed, 4)
    if error > 1e-5:
        sys.exit(f"FAILED: checkpointed, the parameters after a step differ "
                 f"from the recomputed run's by {error:.3g} relative")
    print(f"ok: at {below} bytes per rank, below every order without "
          f"checkpoints (none and --recompute full refused, auto "
          f"checkpoints), --recompute "
          f"checkpoint plans a makespan of {checkpointed:.4g} and trains "
          f"within the limit: measured peaks {measured} (= predicted); "
          f"parameters within {error:.2g} relative of the run above")


MODES = {"recompute-equivalence": equivalence,
         "recompute-selective-equivalence":
             lambda args: equivalence(args, "selective"),
         "recompute-limit": limit}
