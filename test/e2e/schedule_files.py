"""The e2e mode of schedules of one's own (driven by e2e.py).

  schedule-files  `zbc compile --schedule-file` on the example GPT (4
                  stages), p in {2, 4}, 2p microbatches, each schedule
                  written here as a user would write it:
                    - a compute-only PyTorch CSV: 1F1B with the backward
                      split and every W deferred to the cool-down (p = 4,
                      linear), and on p = 2 the interleaved placement (two
                      stages per rank, read from the cells) in a GPipe-like
                      order per stage;
                    - a compute+comms CSV of the same order with the
                      transfers in the user's own order: each RECV just
                      before the compute that needs it, each SEND just
                      after the compute that made it (as PyTorch's
                      runtime would run them);
                    - a hand-written zb.program (GPipe with fused BW, the
                      same-rank dependences spelled out), trained with the
                      AdamW its attributes name;
                  then one step on the ranks: every parameter equals
                  zbc-reference's single-process step to 1e-5 relative,
                  and the banner, report.json and schedule.svg name the
                  file and its format. PyTorch's newer actions:
                  DualPipeV as zbc writes it (OVERLAP_F_B cells), with a
                  REDUCE_GRAD cell per rank, in both formats (the
                  compute+comms one with each overlap's recvs before it
                  and sends after it). Then every CSV that PyTorch itself
                  wrote (test/zbc/Inputs/torch: 1F1B, interleaved 1F1B, ZB1P,
                  ZBV, DualPipeV and the V-shaped test schedule, both
                  formats; the placement read from the cells) compiles
                  onto a model of its stage count and trains as the
                  reference does.
"""
import glob
import json
import os
import re
import shutil
import sys

from zbc_e2e import fresh_dir, run
from zbc_models import gpt, mlp

STAGES = 4
# AdamW's eps: its first update is lr * g / (|g| + eps), which carries a
# gradient's float32 rounding (relative 1e-6, more where a sum cancels) into
# the weights most where |g| is near eps, against the zero-initialised
# biases' lr-sized scale after one step; and gradients that are zero in
# exact arithmetic (the key bias: softmax ignores a shift) are rounding
# noise in both the ranks and the reference. eps 1e-2 (as training-bf16)
# keeps both far under 1e-5 of the scale; 1e-4 measured 3e-5, 1e-3 1.0e-5.
ADAMW_EPS = "1e-2"


def placement(p):
    """Stage -> rank: linear for p = STAGES, interleaved otherwise."""
    return [s % p for s in range(STAGES)]


def deferred_w_1f1b(p, m):
    """Per rank, 1F1B over a linear placement with B split into I and W and
    every W deferred to the end: [(kind, stage, microbatch)]."""
    rows = []
    for r in range(p):
        warmup = min(p - r - 1, m)
        row = [("F", r, j) for j in range(warmup)]
        f, i = warmup, 0
        while i < m:
            if f < m:
                row.append(("F", r, f))
                f += 1
            row.append(("I", r, i))
            i += 1
        row += [("W", r, j) for j in range(m)]
        rows.append(row)
    return rows


def gpipe_per_stage(p, m, fused=False):
    """Per rank: every F of its stages (ascending), then every backward of
    them (descending), each over all microbatches."""
    rows = []
    for r in range(p):
        mine = [s for s in range(STAGES) if placement(p)[s] == r]
        row = [("F", s, j) for s in mine for j in range(m)]
        for s in reversed(mine):
            if fused:
                row += [("BW", s, j) for j in range(m)]
            else:
                row += [("I", s, j) for j in range(m)]
                row += [("W", s, j) for j in range(m)]
        rows.append(row)
    return rows


def compute_order(p, m):
    return deferred_w_1f1b(p, m) if p == STAGES else gpipe_per_stage(p, m)


CSV_KIND = {"F": "F", "I": "I", "W": "W", "BW": "B"}


def csv_compute_only(rows):
    return "".join(",".join(f"{s}{CSV_KIND[k]}{j}" for k, s, j in row) + "\n"
                   for row in rows)


def csv_compute_comms(rows, p):
    """The same computes; a RECV just before the compute that needs it, a
    SEND just after the compute that made it (when the peer stage is on
    another rank)."""
    rank_of = placement(p)
    lines = []
    for r, row in enumerate(rows):
        cells = []
        for k, s, j in row:
            if k == "F" and s > 0 and rank_of[s - 1] != r:
                cells.append(f"{s}RECV_F{j}")
            if k in ("I", "BW") and s + 1 < STAGES and rank_of[s + 1] != r:
                cells.append(f"{s}RECV_B{j}")
            cells.append(f"{s}{CSV_KIND[k]}{j}")
            if k == "F" and s + 1 < STAGES and rank_of[s + 1] != r:
                cells.append(f"{s}SEND_F{j}")
            if k in ("I", "BW") and s > 0 and rank_of[s - 1] != r:
                cells.append(f"{s}SEND_B{j}")
        lines.append(",".join(cells) + "\n")
    return "".join(lines)


def handwritten_program(p, m):
    """GPipe with fused backwards as a zb.program, by hand: each compute
    after the same-rank computes it needs."""
    rank_of = placement(p)
    text = [f"zb.program @handwritten microbatches({m}) placement "
            f"[{', '.join(map(str, rank_of))}] attributes "
            '{optimizer = "adamw"} {']
    for r, row in enumerate(gpipe_per_stage(p, m, fused=True)):
        text.append(f"  zb.rank {r} {{")
        token = {}
        for k, s, j in row:
            deps = []
            if k == "F" and s > 0 and ("F", s - 1, j) in token:
                deps.append(token[("F", s - 1, j)])
            if k == "BW":
                deps.append(token[("F", s, j)])
                if ("BW", s + 1, j) in token:
                    deps.append(token[("BW", s + 1, j)])
            name = f"%{k.lower()}{s}_{j}"
            token[(k, s, j)] = name
            after = f" after({', '.join(deps)})" if deps else ""
            text.append(f"    {name} = zb.compute {k} stage {s} mb {j}{after}")
        text.append("  }")
    text.append("}")
    return "\n".join(text) + "\n"


TORCH_CSVS = os.path.join(os.path.dirname(__file__), "..", "zbc", "Inputs",
                          "torch")


def stages_of(csv_text):
    """One past the largest stage a CSV's cells name."""
    return 1 + max(int(m.group(1)) for m in re.finditer(
        r"(?:^|[,;(])(\d+)(?:F|I|W|B|SEND_F|RECV_F|SEND_B|RECV_B)\d+",
        csv_text, re.M))


def train_against_reference(args, case, model_text, schedule, options=()):
    """Compiles `schedule` (a file) onto the model, one step on the ranks,
    the reference's step; returns the banner and the reference's summary."""
    zbc = os.path.join(args.bin, "zbc")
    reference = os.path.join(args.bin, "zbc-reference")
    work = os.path.dirname(schedule)
    model = os.path.join(work, "model.mlir")
    with open(model, "w") as f:
        f.write(model_text)
    out = os.path.join(work, "out")
    said = run([zbc, "compile", model, "--schedule-file", schedule, "-o",
                out]).stdout
    saved = os.path.join(work, "saved")
    run([os.path.join(out, "launch.sh"), "--steps", "1", "--quiet", "--save",
         saved, *options])
    result = run([reference, os.path.join(out, "program.mlir"), "--steps",
                  "1", "--compare", saved, *options])
    summary = result.stdout.strip().splitlines()[-1]
    if not re.search(r" 0 over tolerance", summary):
        sys.exit(f"FAILED: {case}: {summary}")
    return said.splitlines()[0], summary, out


def torch_csvs(args):
    for path in sorted(glob.glob(os.path.join(TORCH_CSVS, "*.csv"))):
        name = os.path.basename(path)
        work = fresh_dir(args.work, "torch-" + os.path.splitext(name)[0])
        schedule = os.path.join(work, name)
        shutil.copy(path, schedule)
        with open(path) as f:
            stages = stages_of(f.read())
        model_text = (gpt(os.path.join(args.bin, "zbc-dsl-gpt"), stages)
                      if stages > 2 else mlp(stages))
        banner, summary, _ = train_against_reference(
            args, name, model_text, schedule)
        print(f"ok {name} (PyTorch's): {banner.split(' under ')[1]}; "
              f"{summary}", flush=True)
        shutil.rmtree(work, ignore_errors=True)


KIND_OF = {"F": "F", "I": "I", "W": "W", "B": "BW"}


def comms_from_compute_csv(text, rank_of):
    """A compute-only CSV's rows with the transfers added around each cell:
    the recvs of every compute in it before it, the sends after it (an
    OVERLAP_F_B cell is one cell); other cells (REDUCE_GRAD) as they are."""
    stages = len(rank_of)
    rows = []
    for r, line in enumerate(text.strip().splitlines()):
        out = []
        for cell in line.split(","):
            overlap = re.fullmatch(r"\((.*)\)OVERLAP_F_B", cell)
            parts = overlap.group(1).split(";") if overlap else [cell]
            actions = [re.fullmatch(r"(\d+)([FIWB])(\d+)", a) for a in parts]
            if not all(actions):
                out.append(cell)  # REDUCE_GRAD and the like
                continue
            before, after = [], []
            for m in actions:
                s, k, j = int(m.group(1)), KIND_OF[m.group(2)], m.group(3)
                if k == "F" and s > 0 and rank_of[s - 1] != r:
                    before.append(f"{s}RECV_F{j}")
                if k == "F" and s + 1 < stages and rank_of[s + 1] != r:
                    after.append(f"{s}SEND_F{j}")
                if k in ("I", "BW") and s + 1 < stages and rank_of[s + 1] != r:
                    before.append(f"{s}RECV_B{j}")
                if k in ("I", "BW") and s > 0 and rank_of[s - 1] != r:
                    after.append(f"{s}SEND_B{j}")
            out += before + [cell] + after
        rows.append(",".join(out))
    return "\n".join(rows) + "\n"


def overlapped_csvs(args):
    """DualPipeV's OVERLAP_F_B cells and a REDUCE_GRAD per rank, both
    formats, p = 2 (the V: stage s on rank min(s, 3 - s))."""
    zbc = os.path.join(args.bin, "zbc")
    text = run([zbc, "schedule", "--schedule", "dualpipe-v", "--ranks", "2",
                "--virtual", "2", "--microbatches", "4", "--format",
                "csv"]).stdout
    if "OVERLAP_F_B" not in text:
        sys.exit(f"FAILED: zbc's dualpipe-v CSV has no OVERLAP_F_B:\n{text}")
    text = "".join(f"{row},{r}REDUCE_GRAD\n"
                   for r, row in enumerate(text.strip().splitlines()))
    rank_of = [0, 1, 1, 0]
    for name, csv in (("dualpipev-overlap.csv", text),
                      ("dualpipev-overlap-comms.csv",
                       comms_from_compute_csv(text, rank_of))):
        work = fresh_dir(args.work, os.path.splitext(name)[0])
        schedule = os.path.join(work, name)
        with open(schedule, "w") as f:
            f.write(csv)
        banner, summary, _ = train_against_reference(
            args, name, gpt(os.path.join(args.bin, "zbc-dsl-gpt"), STAGES),
            schedule)
        print(f"ok {name}: {banner.split(' under ')[1]}; {summary}",
              flush=True)
        shutil.rmtree(work, ignore_errors=True)


def schedule_files(args):
    overlapped_csvs(args)
    for p in (2, 4):
        m = 2 * p
        rows = compute_order(p, m)
        cases = [("compute-only.csv", csv_compute_only(rows),
                  "PyTorch CSV, compute only", []),
                 ("compute-comms.csv", csv_compute_comms(rows, p),
                  "PyTorch CSV, compute+comms", []),
                 ("handwritten.mlir", handwritten_program(p, m), "zb.program",
                  ["--eps", ADAMW_EPS])]
        for name, text, format_name, options in cases:
            case = f"{os.path.splitext(name)[0]}-p{p}"
            work = fresh_dir(args.work, case)
            schedule = os.path.join(work, name)
            with open(schedule, "w") as f:
                f.write(text)
            banner, summary, out = train_against_reference(
                args, case, gpt(os.path.join(args.bin, "zbc-dsl-gpt"), STAGES),
                schedule, options)
            want = (f"under the schedule of {format_name} '{schedule}' "
                    f"({m} microbatches, "
                    f"{'adamw' if name.endswith('.mlir') else 'sgd'})")
            if want not in banner:
                sys.exit(f"FAILED: {case}: the banner '{banner}' does not "
                         f"say '{want}'")
            with open(os.path.join(out, "report.json")) as f:
                report = json.load(f)
            if (report["schedule_file"] != schedule or
                    report["schedule_format"] != format_name or
                    report["ranks"] != p or report["microbatches"] != m):
                sys.exit(f"FAILED: {case}: report.json says {report}")
            with open(os.path.join(out, "schedule.svg")) as f:
                picture = f.read()
            if f"{format_name} '{schedule}': {p} ranks" not in picture:
                sys.exit(f"FAILED: {case}: schedule.svg's caption does not "
                         f"name {format_name} '{schedule}'")
            print(f"ok {case}: {banner.split(' under ')[1]}; {summary}",
                  flush=True)
            shutil.rmtree(work, ignore_errors=True)
    torch_csvs(args)


MODES = {"schedule-files": schedule_files}
