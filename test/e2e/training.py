"""The e2e modes of training as users run it (driven by e2e.py).

  training-equivalence  the GPT on text data (GPL-3, byte tokens) with AdamW,
                        global-norm clipping and a warm-up + cosine learning
                        rate, p in {2, 4}, a V schedule and 2 data-parallel
                        replicas (the optimizer and gradients sharded:
                        --zero 2), evaluating on the held-out tenth after
                        steps 2 and 3, and the MLP with SGD (clipped; and
                        with 2 replicas): after 3 steps every parameter
                        equals zbc-reference's single-process training on
                        the whole batch to 1e-5 relative. AdamW runs with eps 1e-4: some
                        gradients are zero in exact arithmetic (the key bias
                        of attention: softmax ignores a shift), so their
                        rounding noise decides the sign of AdamW's first
                        update, lr * g / (|g| + eps), in any two
                        implementations; a larger eps damps that noise and
                        keeps every real gradient's update.
  training-resume       20 steps equal 10 steps, a checkpoint, --resume and
                        10 more, bit for bit (losses and parameters); a
                        truncated, a bit-flipped, a cut-short and a mismatched
                        checkpoint are each refused, naming the file and
                        what is wrong, before any step.
  training-lost-rank    SIGKILL of one rank mid-step, p in {2, 4}: every rank
                        exits within 30 s, zbc run names the lost rank and
                        the last checkpoint.
  training-tied         every registered schedule on an MLP whose stages 1
                        and 2 share a weight and on the GPT with its head
                        tied to the token embedding (SGD, clipping): every
                        parameter equals the single-process training, and
                        the copies on two ranks stay bitwise equal.
  training-zero         --zero 0, 1 and 2 on data parallel 2 x pipeline 2
                        and 4 (the tied GPT in f32 under every schedule, a
                        Llama in f32 and bf16; --cases covering and
                        representative: fewer): losses, norms and
                        parameters bitwise equal, measured peaks the
                        predicted, lower; a sharded checkpoint resumes bit
                        for bit under --zero 1 and 2, and --zero 0 refuses
                        it.
  training-profile      zbc profile writes a cost file of the model's stages
                        (and of its copies' and all-reduces' bandwidth)
                        that zbc run compiles with, and the run's ranks'
                        timelines merge into one trace (a computes and a
                        transfers track per rank) and a picture.
  training-bf16         the GPT in bf16 (Note [bf16]: f32 master weights,
                        gradients and state), p in {2, 4}: 3 SGD steps and
                        one AdamW step (eps 1e-2) equal zbc-reference's bf16 training
                        to 2e-2 relative (a bf16 rounding that the CPU's
                        and the interpreter's fp32 sums put on either side
                        of a tie moves a value by 2^-8); --save writes the
                        f32 masters; the measured peak is the predicted one;
                        the loss falls over 30 steps.
  training-bad-input    an empty, unreadable or too short text file, keys
                        that text cannot fill, --eval-every without a token
                        stream, a cost file for another model and replicas
                        that do not divide the batch; token streams with an
                        id outside the vocabulary, of a float dtype, of two
                        dimensions, empty, shorter than two windows, and
                        --data-dtype on a .npy: clear errors (the position
                        or size named) before any rank starts.
"""
import json
import re
import os
import struct
import shutil
import signal
import subprocess
import sys
import time

from zbc_e2e import EXAMPLES, fresh_dir, run
from zbc_models import gpt, llama, mlp, schedules, tied_mlp

TEXT = "/usr/share/common-licenses/GPL-3"
ADAMW = ["--optimizer", "adamw", "--lr", "3e-3", "--eps", "1e-4",
         "--clip-norm", "0.5", "--warmup", "2", "--decay-steps", "3"]


def _model(args, work, kind, stages):
    os.makedirs(work, exist_ok=True)
    source = os.path.join(work, f"{kind}{stages}.mlir")
    with open(source, "w") as f:
        f.write(mlp(stages) if kind == "mlp"
                else gpt(os.path.join(args.bin, "zbc-dsl-gpt"), stages))
    return source


def _rank_options(options):
    """zbc run's training options as zbc-reference takes them (no
    --optimizer: the program says; no evaluation; one replica holds
    everything)."""
    out, i = [], 0
    while i < len(options):
        if options[i] in ("--optimizer", "--eval-every", "--zero"):
            i += 2
            continue
        out.append(options[i])
        i += 1
    return out


def equivalence(args):
    zbc = os.path.join(args.bin, "zbc")
    reference = os.path.join(args.bin, "zbc-reference")
    # (model, schedule, stages per rank, ranks, replicas, options)
    # The GPT evaluates after steps 2 and 3: evaluation changes nothing.
    text = ["--data", TEXT, "--eval-every", "2"] + ADAMW
    cases = [("gpt", "zb-h1", 1, 2, 1, text),
             ("gpt", "zb-h1", 1, 4, 1, text),
             ("gpt", "zb-v", 2, 2, 1, text),
             # Sharded gradients and optimizer (Note [Sharded gradients]).
             ("gpt", "zb-h1", 1, 2, 2, text + ["--zero", "2"]),
             ("mlp", "1f1b", 1, 2, 1, ["--clip-norm", "0.05", "--warmup", "2"]),
             ("mlp", "1f1b", 1, 2, 2, [])]
    for kind, schedule, v, p, d, options in cases:
        case = f"{kind}-{schedule}-p{p}-d{d}" + (
            "-zero2" if "--zero" in options else "")
        work = os.path.join(args.work, case)
        shutil.rmtree(work, ignore_errors=True)
        source = _model(args, work, kind, v * p)
        out, saved = os.path.join(work, "out"), os.path.join(work, "saved")
        # --microbatches is the job's batch: each replica runs 2p of it.
        result = run([zbc, "run", source, "--ranks", str(p), "--microbatches",
                      str(2 * p * d), "--data-parallel", str(d), "--schedule",
                      schedule, "--steps", "3", "--save", saved, "-o", out]
                     + options)
        # The banner says what the ranks train with; SGD's defaults are
        # PyTorch's (momentum 0), the reference's too.
        said = ("trains with adamw: lr 3e-3, betas 0.9 0.999, eps 1e-4, "
                "weight decay 0.01" if "--optimizer" in options else
                "trains with sgd: lr 0.01, momentum 0, weight decay 0")
        if said not in result.stdout:
            sys.exit(f"FAILED: {case}: the banner does not say '{said}':\n"
                     f"{result.stdout}")
        if "--clip-norm" in options and "norm" not in result.stdout:
            sys.exit(f"FAILED: {case}: no gradient norm in the progress "
                     f"lines:\n{result.stdout}")
        if "--eval-every" in options and "eval after step 3" not in result.stdout:
            sys.exit(f"FAILED: {case}: no held-out loss:\n{result.stdout}")
        check = run([reference, os.path.join(out, "program.mlir"), "--steps",
                     "3", "--data-parallel", str(d), "--compare", saved]
                    + _rank_options(options))
        print(f"ok {case}: {check.stdout.strip().splitlines()[-1]}", flush=True)


def _losses(report):
    with open(report) as f:
        return json.load(f)["losses"]


def _tensor_bytes(path):
    """name -> raw bytes of each tensor of a safetensors file."""
    with open(path, "rb") as f:
        data = f.read()
    length = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + length])
    base = 8 + length
    return {name: data[base + t["data_offsets"][0]:base + t["data_offsets"][1]]
            for name, t in header.items() if name != "__metadata__"}


def _metadata(path):
    """The __metadata__ of a safetensors file."""
    with open(path, "rb") as f:
        length = int.from_bytes(f.read(8), "little")
        return json.loads(f.read(length)).get("__metadata__", {})


def _expect_refusal(cmd, message, what):
    result = run(cmd, check=False, timeout=120)
    text = result.stdout + result.stderr
    if result.returncode == 0 or message not in text or "step 1/" in text:
        sys.exit(f"FAILED: {what} was not refused with '{message}' before any "
                 f"step (exit {result.returncode}):\n{text}")
    line = next(l for l in text.splitlines() if message in l)
    print(f"ok: {what} refused: {line.strip()}", flush=True)


def resume(args):
    zbc = os.path.join(args.bin, "zbc")
    work = os.path.join(args.work, "resume")
    shutil.rmtree(work, ignore_errors=True)
    source = _model(args, work, "gpt", 2)
    out = os.path.join(work, "out")
    run([zbc, "compile", source, "--ranks", "2", "--microbatches", "4",
         "--optimizer", "adamw", "-o", out])
    launch = os.path.join(out, "launch.sh")
    train = ["--data", TEXT, "--lr", "3e-3", "--clip-norm", "1", "--warmup",
             "5", "--decay-steps", "20", "--quiet"]
    # One run of 20 steps, and 10 + 10 through a checkpoint.
    whole, half = os.path.join(work, "whole"), os.path.join(work, "half")
    checkpoints = os.path.join(work, "checkpoints")
    run([launch, "--steps", "20", "--report", whole, "--save", whole] + train)
    run([launch, "--steps", "10", "--checkpoint-every", "10",
         "--checkpoint-dir", checkpoints] + train)
    run([launch, "--steps", "20", "--resume", checkpoints, "--report", half,
         "--save", half] + train)
    losses_whole = _losses(os.path.join(whole, "rank1.json"))
    losses_half = _losses(os.path.join(half, "rank1.json"))
    if losses_whole[10:] != losses_half or len(losses_half) != 10:
        sys.exit(f"FAILED: the losses after resuming differ:\n{losses_whole}\n"
                 f"{losses_half}")
    tensors = 0
    for r in range(2):
        a = _tensor_bytes(os.path.join(whole, f"rank{r}.safetensors"))
        b = _tensor_bytes(os.path.join(half, f"rank{r}.safetensors"))
        if a != b:
            differ = [n for n in a if a[n] != b.get(n)]
            sys.exit(f"FAILED: rank {r}: parameters after resuming differ "
                     f"from the uninterrupted run's: {differ[:5]}")
        tensors += len(a)
        # The resumed run's file says what it holds as the whole run's does.
        steps = [_metadata(os.path.join(d, f"rank{r}.safetensors")).get("step")
                 for d in (whole, half)]
        if steps != ["20", "20"]:
            sys.exit(f"FAILED: rank {r}: the saved step (uninterrupted, "
                     f"resumed) is {steps}, not 20")
    print(f"ok: 20 steps = 10 + resume + 10, bitwise: 10 losses, {tensors} "
          "parameter tensors, both saved at step 20", flush=True)

    step10 = os.path.join(checkpoints, "step-10")
    resume_from = [launch, "--steps", "20", "--quiet", "--data", TEXT,
                   "--resume"]

    def damaged(name, damage):
        copy = os.path.join(work, name)
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(step10, copy)
        damage(copy)
        return copy

    def truncate(d):
        path = os.path.join(d, "rank1.safetensors")
        os.truncate(path, os.path.getsize(path) // 2)

    def flip(d):
        path = os.path.join(d, "rank0.safetensors")
        with open(path, "r+b") as f:
            f.seek(os.path.getsize(path) - 100)
            byte = f.read(1)
            f.seek(-1, 1)
            f.write(bytes([byte[0] ^ 0x10]))

    _expect_refusal(resume_from + [damaged("truncated", truncate)],
                    "rank1.safetensors' has", "a truncated checkpoint")
    _expect_refusal(resume_from + [damaged("flipped", flip)],
                    "rank0.safetensors' fails its checksum",
                    "a bit-flipped checkpoint")
    _expect_refusal(
        resume_from + [damaged("cut-short", lambda d: os.remove(
            os.path.join(d, "manifest.json")))],
        "holds no checkpoint", "a checkpoint without its manifest")
    # The same model under another schedule, and another model.
    other = os.path.join(work, "other")
    run([zbc, "compile", source, "--ranks", "2", "--microbatches", "4",
         "--optimizer", "adamw", "--schedule", "1f1b", "-o", other])
    _expect_refusal([os.path.join(other, "launch.sh"), "--steps", "20",
                     "--data", TEXT, "--resume", step10],
                    "was trained under zb-h1 on 2 ranks",
                    "a checkpoint of another schedule")
    wider = os.path.join(work, "wider.mlir")
    with open(wider, "w") as f:
        f.write(gpt(os.path.join(args.bin, "zbc-dsl-gpt"), 2, "--hidden", "32"))
    run([zbc, "compile", wider, "--ranks", "2", "--microbatches", "4",
         "--optimizer", "adamw", "-o", os.path.join(work, "wider")])
    _expect_refusal([os.path.join(work, "wider", "launch.sh"), "--steps", "20",
                     "--data", TEXT, "--resume", step10],
                    "is a checkpoint of model 'gpt' (IR hash",
                    "a checkpoint of another model")


def lost_rank(args):
    zbc = os.path.join(args.bin, "zbc")
    for p in (2, 4):
        work = os.path.join(args.work, f"lost-p{p}")
        shutil.rmtree(work, ignore_errors=True)
        source = _model(args, work, "gpt", p)
        out = os.path.join(work, "out")
        victim = p - 1
        cmd = [zbc, "run", source, "--ranks", str(p), "--microbatches",
               str(2 * p), "--steps", "1000000", "--data", TEXT,
               "--checkpoint-every", "20", "-o", out]
        job = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
        # Wait for the first checkpoint, then kill one rank mid-step.
        deadline = time.time() + 120
        manifest = os.path.join(out, "checkpoints", "step-20", "manifest.json")
        while not os.path.exists(manifest):
            if time.time() > deadline or job.poll() is not None:
                job.kill()
                sys.exit(f"FAILED: p={p}: no checkpoint to start from:\n"
                         f"{job.communicate()[0]}")
            time.sleep(0.2)
        time.sleep(0.5)
        pids = subprocess.run(["pgrep", "-f", f"^{out}/rank{victim} "],
                              text=True, capture_output=True).stdout.split()
        if len(pids) != 1:
            job.kill()
            sys.exit(f"FAILED: p={p}: cannot find rank {victim}: {pids}")
        killed = time.time()
        os.kill(int(pids[0]), signal.SIGKILL)
        try:
            text, _ = job.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            job.kill()
            sys.exit(f"FAILED: p={p}: the job outlived its killed rank by "
                     "30 s (a hang)")
        seconds = time.time() - killed
        left = subprocess.run(["pgrep", "-f", f"^{out}/rank"], text=True,
                              capture_output=True).stdout.split()
        said = [f"zbc rank {r}: error:" in text for r in range(p) if r != victim]
        if (job.returncode == 0 or left or not all(said) or
                f"rank {victim} was lost" not in text or
                "the last checkpoint is" not in text):
            sys.exit(f"FAILED: p={p}: after SIGKILL of rank {victim}: exit "
                     f"{job.returncode}, ranks left {left}, a message from "
                     f"every other rank {said}:\n{text}")
        print(f"ok: p={p}: rank {victim} killed; every rank gone after "
              f"{seconds:.1f} s, each with a message; zbc run: "
              + next(l for l in text.splitlines()
                     if f"rank {victim} was lost" in l),
              flush=True)


def write_npy(path, descr, ids, shape=None):
    """`ids` as a .npy array (format 1.0) of dtype `descr` ('<u2', ...)."""
    code = {"<u2": "H", "<u4": "I", "<i4": "i", "<i8": "q", "<f4": "f"}[descr]
    shape = shape or f"({len(ids)},)"
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}"
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
        f.write(header.encode() + struct.pack(f"<{len(ids)}{code}", *ids))


def bad_input(args):
    zbc = os.path.join(args.bin, "zbc")
    work = os.path.join(args.work, "bad-input")
    shutil.rmtree(work, ignore_errors=True)
    gpt_source = _model(args, work, "gpt", 2)
    mlp_source = _model(args, work, "mlp", 2)
    empty = os.path.join(work, "empty.txt")
    open(empty, "w").close()
    short = os.path.join(work, "short.txt")
    with open(short, "w") as f:
        f.write("a few words, far fewer than two windows of 32 tokens\n")
    stream = [(i * 7) % 256 for i in range(2000)]
    out_of_range = os.path.join(work, "out-of-range.npy")
    write_npy(out_of_range, "<i8", stream[:1234] + [256] + stream[1235:])
    floats = os.path.join(work, "floats.npy")
    write_npy(floats, "<f4", stream)
    matrix = os.path.join(work, "matrix.npy")
    write_npy(matrix, "<u2", stream, "(20, 100)")
    empty_bin = os.path.join(work, "empty.bin")
    open(empty_bin, "w").close()
    short_bin = os.path.join(work, "short.bin")
    with open(short_bin, "wb") as f:
        f.write(struct.pack("<40H", *stream[:40]))
    tokens = os.path.join(work, "tokens.npy")
    write_npy(tokens, "<u2", stream)
    tokens500 = os.path.join(work, "tokens500.npy")
    write_npy(tokens500, "<u2", stream[:500])
    costs = os.path.join(work, "costs.json")
    with open(costs, "w") as f:
        json.dump({"model": "other", "model_hash": "0123456789abcdef",
                   "F": [1, 1], "B": [1, 1], "W": [1, 1]}, f)
    base = ["--ranks", "2", "--microbatches", "4", "--steps", "2"]
    cases = [
        (gpt_source, ["--data", empty], "is empty"),
        (gpt_source, ["--data", os.path.join(work, "missing.txt")],
         "cannot read the data file"),
        (gpt_source, ["--data", short], "too short for windows of 32 tokens"),
        (mlp_source, ["--data", TEXT], "the model also reads 'input.x'"),
        (gpt_source, ["--eval-every", "5"], "--eval-every needs held-out data"),
        # 500 tokens: 50 held out, 1 window of 32, under a microbatch of 2.
        (gpt_source, ["--data", tokens500, "--eval-every", "5"],
         "holds 1 window of 32 tokens, fewer than one microbatch of 2"),
        (gpt_source, ["--cost-file", costs], "was measured on model 'other'"),
        (gpt_source, ["--data-parallel", "3"],
         "--data-parallel 3 does not divide the batch of 4 microbatches"),
        (gpt_source, ["--data", out_of_range],
         "token id 256 at position 1234 (counting from 0) is outside the "
         "model's vocabulary [0, 256)"),
        (gpt_source, ["--data", floats], "its dtype is '<f4'"),
        (gpt_source, ["--data", matrix], "its shape is (20, 100)"),
        (gpt_source, ["--data", empty_bin], "empty.bin' is empty"),
        (gpt_source, ["--data", short_bin],
         "has 40 tokens: too short for windows of 32 tokens"),
        (gpt_source, ["--data", tokens, "--data-dtype", "uint32"],
         "--data-dtype names the ids of a .bin file"),
        (gpt_source, ["--data", short_bin, "--data-dtype", "int8"],
         "--data-dtype needs uint16 or uint32"),
    ]
    for source, options, message in cases:
        out = os.path.join(work, "out")
        shutil.rmtree(out, ignore_errors=True)
        result = run([zbc, "run", source, *base, *options, "-o", out],
                     check=False, timeout=120)
        text = result.stdout + result.stderr
        started = os.path.exists(os.path.join(out, "status"))
        if result.returncode == 0 or message not in text or started:
            sys.exit(f"FAILED: {' '.join(options)}: want '{message}' before "
                     f"any rank starts (exit {result.returncode}, ranks "
                     f"started: {started}):\n{text}")
        print(f"ok: {' '.join(options)}: "
              f"{next(l for l in text.splitlines() if message in l).strip()}",
              flush=True)


def profile(args):
    zbc = os.path.join(args.bin, "zbc")
    work = os.path.join(args.work, "profile")
    shutil.rmtree(work, ignore_errors=True)
    source = _model(args, work, "gpt", 2)
    costs = os.path.join(work, "costs.json")
    run([zbc, "profile", source, "--stages", "2", "--steps", "3", "--data",
         TEXT, "-o", costs])
    with open(costs) as f:
        measured = json.load(f)
    if (len(measured["F"]) != 2 or min(measured["F"]) <= 0 or
            len(measured["M_B"]) != 2 or not measured.get("model_hash") or
            not measured.get("copy_bandwidth", 0) > 0 or
            not measured.get("collective_bandwidth", 0) > 0):
        sys.exit(f"FAILED: the profile is not a cost file of 2 stages:\n"
                 f"{measured}")
    # The profile names the microbatches it measured, and its lists the
    # stages: `zbc schedule --cost-file` needs no sizes.
    scheduled = run([zbc, "schedule", "--cost-file", costs, "--format",
                     "json"])
    shape = json.loads(scheduled.stdout)
    if (measured.get("microbatches") != 4 or shape["ranks"] != 2 or
            shape["microbatches"] != 4):
        sys.exit(f"FAILED: zbc schedule --cost-file did not take the "
                 f"profile's sizes (profile {measured}, schedule ranks "
                 f"{shape['ranks']}, microbatches {shape['microbatches']})")
    out = os.path.join(work, "out")
    result = run([zbc, "run", source, "--ranks", "2", "--microbatches", "4",
                  "--steps", "4", "--cost-file", costs, "--data", TEXT, "-o",
                  out])
    # zbc runs the job itself: its banner does not tell the user to.
    if "launch.sh --steps N" in result.stdout:
        sys.exit(f"FAILED: zbc run's banner says to run launch.sh:\n"
                 f"{result.stdout}")
    bubble = next((l for l in result.stdout.splitlines()
                   if "measured (mean of" in l), None)
    with open(os.path.join(out, "trace.json")) as f:
        events = [e for e in json.load(f)["traceEvents"] if e["ph"] == "X"]
    tracks = {(e["pid"], e["tid"]) for e in events}
    if (bubble is None or tracks != {(0, 0), (0, 1), (1, 0), (1, 1)} or
            not os.path.exists(os.path.join(out, "timeline.svg"))):
        sys.exit(f"FAILED: no measured timeline beside the predicted one "
                 f"(tracks {sorted(tracks)}):\n{result.stdout}")
    # The measured copy bandwidth schedules offload (no --copy-bandwidth),
    # and the copies have a track of their own.
    offloaded = os.path.join(work, "offloaded")
    run([zbc, "run", source, "--ranks", "2", "--microbatches", "4", "--steps",
         "2", "--cost-file", costs, "--offload", "full", "--data", TEXT, "-o",
         offloaded])
    with open(os.path.join(offloaded, "trace.json")) as f:
        copies = {(e["pid"], e["tid"]) for e in json.load(f)["traceEvents"]
                  if e["ph"] == "X" and e["cat"] in ("offload", "reload")}
    if copies != {(0, 2), (1, 2)}:
        sys.exit(f"FAILED: the offloading run's copies are on tracks "
                 f"{sorted(copies)}, not each rank's copy track")
    print(f"ok: profiled F {measured['F']} ms, copies "
          f"{measured['copy_bandwidth']} bytes/ms, all-reduces "
          f"{measured['collective_bandwidth']} bytes/ms; {len(events)} events on "
          f"{len(tracks)} tracks;{bubble.split('bubble rate')[1]}; the copies "
          f"of an offloading run on their own track", flush=True)
    _measured_levers(args, source, costs, work)


def _lowered(args, source, options):
    """The zb.program attributes of `source` lowered with `options` (as
    zbc compile lowers it), or the error."""
    result = subprocess.run(
        [os.path.join(args.bin, "zbc-opt"), source,
         f"--zb-lower-to-program=stages=2 schedule=zb-h1 microbatches=4 "
         f"{options}", "-o", "-"], capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        return None, result.stderr
    # MLIR prints a float's exponent as "E-16": a bubble rate of round-off
    # read without it would be 1.198.
    span = re.search(r"predicted_makespan = ([0-9.eE+-]+)", result.stdout)
    bubble = re.search(r"predicted_bubble_rate = ([0-9.eE+-]+)",
                       result.stdout)
    levers = re.search(r"levers = \{([^}]*)\}", result.stdout)
    return (float(span.group(1)), float(bubble.group(1)),
            levers.group(1)), result.stderr


def _measured_levers(args, source, costs, work):
    """A profile's cost file under every memory lever (Note [Measured
    costs]): each compiles (the file's model hash is checked on the model
    as profiled, not as a lever rewrote it), plans in the file's unit (the
    lever-free makespan is zbc schedule's on the file; the others within a
    small factor of it, where R in FLOPs made them 10^5 times longer), and
    under --recompute auto fits the least limit that fits without it."""
    out = subprocess.run(
        [os.path.join(args.bin, "zbc"), "schedule", "--cost-file", costs,
         "--schedule", "zb-h1", "--ranks", "2", "--microbatches", "4"],
        capture_output=True, text=True, timeout=60, check=True).stdout
    expected = float(re.search(r"makespan ([0-9.eE+-]+)", out).group(1))
    plain, _ = _lowered(args, source, f"cost-file={costs}")
    if plain is None or abs(plain[0] - expected) > 1e-3 * expected:
        sys.exit(f"FAILED: with the profile, zbc compile plans a makespan "
                 f"of {plain and plain[0]}; zbc schedule on the file says "
                 f"{expected}")
    levers = [(recompute, "none") for recompute in
              ("none", "full", "selective", "checkpoint", "auto")]
    levers += [("none", "full"), ("none", "auto"), ("auto", "auto")]
    for recompute, offload in levers:
        options = (f"cost-file={costs} recompute={recompute} "
                   f"offload={offload}")
        lowered, error = _lowered(args, source, options)
        if lowered is None:
            sys.exit(f"FAILED: {options} refused:\n{error}")
        span, rate, _ = lowered
        if not (0.5 * expected < span < 3 * expected and rate < 0.9):
            sys.exit(f"FAILED: {options} plans a makespan of {span} "
                     f"(bubble rate {rate}) against {expected} without "
                     f"levers: not in the file's unit")
    # The least limit --recompute auto fits without the cost file (a
    # bisection), and the cost file fits it too.
    low, high = 1, 1 << 34
    while high - low > max(4096, low // 200):
        middle = (low + high) // 2
        fitted, _ = _lowered(args, source,
                             f"recompute=auto memory-limit={middle}")
        if fitted is None:
            low = middle
        else:
            high, chosen = middle, fitted[2]
    fitted, error = _lowered(
        args, source, f"recompute=auto memory-limit={high} cost-file={costs}")
    if fitted is None:
        sys.exit(f"FAILED: --recompute auto fits {high} bytes per rank "
                 f"without the profile ({chosen}), not with it:\n{error}")
    print(f"ok: the profile under {len(levers)} lever pairs, in its unit (makespan "
          f"{expected:.4g} ms without levers); --recompute auto fits "
          f"{high} bytes with and without it ({fitted[2]})", flush=True)


def tied(args):
    """Every registered schedule on the MLP whose stages 1 and 2 share a
    weight, and on the GPT whose head is its token embedding transposed
    (GPT-2's tying: stages 0 and 3): linear placements at p = 4 and interleaved ones at p = 2 hold
    it on two ranks (a copy each, the gradient all-reduced between them), V
    placements at p = 2 on one rank (one copy, both stages accumulating into
    it); both kinds must occur. --cases representative (the sanitizer
    run's): ZB-H1 and ZB-V, one of each kind."""
    zbc = os.path.join(args.bin, "zbc")
    reference = os.path.join(args.bin, "zbc-reference")
    kinds = set()
    cases = [(name, v, model) for name, v in schedules(zbc)
             for model in ("mlp", "gpt")
             if args.cases != "representative" or name in ("zb-h1", "zb-v")]
    for name, v, model in cases:
        p = 4 // v
        case = f"tied-{model}-{name}-p{p}"
        work = fresh_dir(args.work, case)
        source = os.path.join(work, "tied.mlir")
        with open(source, "w") as f:
            f.write(tied_mlp() if model == "mlp" else
                    gpt(os.path.join(args.bin, "zbc-dsl-gpt"), 4, "--tied"))
        out, saved = os.path.join(work, "out"), os.path.join(work, "saved")
        # SGD: AdamW's first steps amplify the rounding noise of gradients
        # near zero (see training-equivalence), which is not what this
        # tests; clipping is on (the tied gradient counts once in the norm).
        options = ["--clip-norm", "0.5"]
        run([zbc, "run", source, "--ranks", str(p), "--virtual", str(v),
             "--microbatches", str(2 * p), "--schedule", name, "--steps", "3",
             "--save", saved, "-o", out] + options)
        check = run([reference, os.path.join(out, "program.mlir"), "--steps",
                     "3", "--compare", saved] + _rank_options(options))
        tied_name = "fc1.weight" if model == "mlp" else "wte"
        copies = [_tensor_bytes(os.path.join(saved, f"rank{r}.safetensors"))
                  .get(tied_name) for r in range(p)]
        copies = [c for c in copies if c is not None]
        if len(copies) not in (1, 2) or len(set(copies)) != 1:
            sys.exit(f"FAILED: {case}: {len(copies)} copies of the tied "
                     f"weight, {len(set(copies))} distinct")
        kinds.add(len(copies))
        print(f"ok {case}: {len(copies)} bitwise-equal copies; "
              f"{check.stdout.strip().splitlines()[-1]}", flush=True)
    if kinds != {1, 2}:
        sys.exit(f"FAILED: the tied weight was held by {kinds} ranks; the "
                 "suite needs both one and two")


def bf16(args):
    zbc = os.path.join(args.bin, "zbc")
    reference = os.path.join(args.bin, "zbc-reference")
    sgd = ["--data", TEXT, "--lr", "0.1"]
    # AdamW's first step is lr * g / (|g| + eps): where a gradient is a sum
    # of terms that cancel, bf16's rounding of the terms (2^-8, not f32's
    # 2^-24) decides its sign near eps; eps 1e-2 keeps such noise below the
    # tolerance (1e-4 gives 3.3e-2 on the position embedding).
    adamw = ["--data", TEXT, "--optimizer", "adamw", "--lr", "3e-3", "--eps",
             "1e-2"]
    for p, steps, options in [(2, 3, sgd), (4, 3, sgd), (2, 1, adamw)]:
        case = f"gpt-bf16-p{p}-{options[-1]}"
        work = fresh_dir(args.work, case)
        source = os.path.join(work, "gpt.mlir")
        with open(source, "w") as f:
            f.write(gpt(os.path.join(args.bin, "zbc-dsl-gpt"), p, "--bf16"))
        out, saved = os.path.join(work, "out"), os.path.join(work, "saved")
        result = run([zbc, "run", source, "--ranks", str(p), "--microbatches",
                      str(2 * p), "--schedule", "zb-h1", "--steps", str(steps),
                      "--save", saved, "-o", out] + options)
        for line in result.stdout.splitlines():
            if "bytes measured" in line:
                measured, predicted = line.split("peak ")[1].split(
                    " bytes measured, ")
                if measured != predicted.split(" ")[0]:
                    sys.exit(f"FAILED: {case}: {line.strip()}")
        with open(os.path.join(saved, "rank0.safetensors"), "rb") as f:
            header = f.read(8 + int.from_bytes(f.read(8), "little"))
        if b'"BF16"' in header or b'"F32"' not in header:
            sys.exit(f"FAILED: {case}: --save did not write the f32 masters")
        check = run([reference, os.path.join(out, "program.mlir"), "--steps",
                     str(steps), "--compare", saved, "--tolerance", "2e-2"]
                    + _rank_options(options))
        print(f"ok {case}: {check.stdout.strip().splitlines()[-1]}", flush=True)
    # It trains: the loss falls.
    work = os.path.join(args.work, "falls")
    source = os.path.join(args.work, "gpt-bf16-p2-0.1", "gpt.mlir")
    adamw[-1] = "1e-8"
    result = run([zbc, "run", source, "--ranks", "2", "--microbatches", "4",
                  "--steps", "30", "-o", work] + adamw)
    losses = [float(l.split("loss ")[1].split()[0])
              for l in result.stdout.splitlines() if l.startswith("step ")]
    if not losses or losses[-1] > losses[0] - 1.0:
        sys.exit(f"FAILED: the bf16 GPT's loss did not fall: {losses}")
    print(f"ok the bf16 GPT trains: loss {losses[0]} -> {losses[-1]}")


def _bf16(values):
    """f32 values (bytes) rounded to bf16 to nearest even, widened back."""
    words = struct.unpack(f"<{len(values) // 4}I", values)
    rounded = [((w + 0x7FFF + ((w >> 16) & 1)) & 0xFFFF0000) for w in words]
    return struct.pack(f"<{len(rounded)}I", *rounded)


def _zero_cases(zbc, which):
    """training-zero's cases, (model, schedule, v, p, the --zero values,
    the replicas d); every one at d = 2 but one at d = 3, where no
    parameter of the GPT divides into shards and each is padded (Note
    [Sharded optimizer]):
    "all" runs each under 0, 1 and 2. "covering" (CI's normal run) takes
    every schedule at P = 2 and ZB-H1 at P = 4, with --zero 1 under one
    schedule of each placement (linear, interleaved, V, DualPipe's two-way
    V): what --zero 1 does apart from 2 (the sum in place, the whole
    gradient kept) does not depend on the order, and --zero 2 runs every
    collective of --zero 1. *Why not every schedule at P = 4 in CI:* those
    runs are 8 processes each on CI's 2 cores, about a minute of the suite
    between them and the load they put on the tests beside them; the
    orders at P = 4 are the P = 2 orders' kind, and --cases all runs them
    (docs/benchmarks.md, "Test suite timing"). "representative" (the
    sanitizer run): a linear and a V schedule, in f32 and bf16."""
    every = ("0", "1", "2")
    padded = [("gpt", "zb-h1", 1, 2, every, 3)]
    if which == "representative":
        return [("gpt", "zb-h1", 1, 2, every, 2), ("gpt", "zb-v", 2, 2, every, 2),
                ("llama", "zb-v", 2, 2, every, 2)] + padded
    llama = [("llama-f32", "zb-h1", 1, 2), ("llama", "zb-v", 2, 2),
             ("llama", "zb-h1", 1, 4)]
    if which == "all":
        return [("gpt", name, v, p, every, 2) for p in (2, 4)
                for name, v in schedules(zbc)] + [
                    c + (every, 2) for c in llama] + padded
    one_per_placement = ("zb-h1", "interleaved-1f1b", "zb-v", "dualpipe-v")
    cases = [("gpt", name, v, 2,
              every if name in one_per_placement else ("0", "2"), 2)
             for name, v in schedules(zbc)]
    return cases + [("gpt", "zb-h1", 1, 4, ("0", "2"), 2),
                    ("llama-f32", "zb-h1", 1, 2, ("0", "2"), 2),
                    ("llama", "zb-v", 2, 2, every, 2)] + padded


def zero(args):
    """Note [Sharded optimizer] and Note [Sharded gradients]: the same
    training under --zero 0, 1 and 2 on data parallel 2 x pipeline P (the
    GPT with its tied head in f32, a Llama in bf16 and in f32, AdamW with
    clipping, 3 steps). The parameters after them are bitwise equal, and so
    are the losses: with two replicas every sum, whole or a shard's, in
    place or into a shard, adds the same two numbers, and the clip norm's
    partial sums only regroup squares of the same gradients (the printed
    norms agree too). The one case at d = 3 is bitwise too because Open
    MPI's all-reduce and reduce-scatter of three processes on one host add
    in the same order; a build that does not would fail it here first. The cases (_zero_cases): all of them, every
    registered schedule on the GPT at P = 2 and 4 and the Llama under ZB-H1
    (f32) and ZB-V (bf16) at P = 2 and ZB-H1 (bf16) at P = 4, each under
    the three; CI's covering, every schedule at P = 2 and ZB-H1 at P = 4;
    the sanitizer run's representative three. A
    bf16 model's --save writes, when sharded, its gathered working copies
    (no replica holds a whole f32 master): the masters of --zero 0 rounded
    to bf16. Each rank's measured peak is the predicted one; --zero 1
    lowers the largest, and --zero 2 never raises it (in a pipeline the
    whole gradient lives from a stage's first W to its sum, where the peak
    usually is)."""
    zbc = os.path.join(args.bin, "zbc")
    for model, schedule, v, p, zeros, d in _zero_cases(zbc, args.cases):
        case = f"zero-{model}-{schedule}-p{p}" + (f"-d{d}" if d != 2 else "")
        work = fresh_dir(args.work, case)
        source = os.path.join(work, "model.mlir")
        with open(source, "w") as f:
            f.write(gpt(os.path.join(args.bin, "zbc-dsl-gpt"), v * p, "--tied")
                    if model == "gpt" else
                    llama(os.path.join(args.bin, "zbc-dsl-llama"), v * p,
                          *([] if model == "llama-f32" else ["--bf16"])))
        runs = {}
        for z in zeros:
            out, saved = os.path.join(work, f"out{z}"), os.path.join(
                work, f"saved{z}")
            result = run([zbc, "run", source, "--ranks", str(p), "--virtual",
                          str(v), "--data-parallel", str(d), "--microbatches",
                          str(2 * d * p), "--schedule", schedule, "--steps", "3",
                          "--zero", z, "--data", TEXT, "--save", saved, "-o",
                          out] + ADAMW)
            steps = [l.split("lr")[0] + l.split("norm")[1].split()[0]
                     for l in result.stdout.splitlines()
                     if l.startswith("step ")]
            peaks = []
            report = os.path.join(out, "run")
            for name in sorted(os.listdir(report)):
                with open(os.path.join(report, name)) as f:
                    rep = json.load(f)
                if rep["measured_peak_bytes"] != rep["predicted_peak_bytes"]:
                    sys.exit(f"FAILED: {case} --zero {z}: rank {rep['rank']} "
                             f"measured {rep['measured_peak_bytes']} bytes, "
                             f"predicted {rep['predicted_peak_bytes']}")
                peaks.append(rep["measured_peak_bytes"])
            params = {r: _tensor_bytes(os.path.join(saved,
                                                    f"rank{r}.safetensors"))
                      for r in range(p)}
            runs[z] = (steps, max(peaks), params)
        steps0, peak0, params0 = runs["0"]
        if len(steps0) != 3:
            sys.exit(f"FAILED: {case}: {len(steps0)} steps printed")
        for z in zeros[1:]:
            steps, _, params = runs[z]
            if steps != steps0:
                sys.exit(f"FAILED: {case}: losses and norms differ under "
                         f"--zero {z}:\n{steps0}\n{steps}")
            for r in range(p):
                for name, whole in params0[r].items():
                    expected = whole if model != "llama" else _bf16(whole)
                    if params[r].get(name) != expected:
                        sys.exit(f"FAILED: {case}: rank {r}'s '{name}' after "
                                 f"3 steps differs under --zero {z}")
        peaks = [runs[z][1] for z in zeros]
        # Sharding lowers the largest peak; --zero 2 never raises it.
        if not (peaks[0] > peaks[1] and peaks[-1] <= peaks[1]):
            sys.exit(f"FAILED: {case}: the largest peaks under --zero "
                     f"{', '.join(zeros)} are {peaks} bytes")
        print(f"ok {case}: losses, norms and parameters equal under --zero "
              f"{', '.join(zeros)}; largest peak "
              f"{' -> '.join(map(str, peaks))} bytes", flush=True)
    _zero_resume(args)


def _zero_resume(args):
    """A sharded checkpoint (a file per rank and replica) resumes bit for
    bit, and a program sharded otherwise refuses it."""
    zbc = os.path.join(args.bin, "zbc")
    work = fresh_dir(args.work, "zero-resume")
    source = os.path.join(work, "gpt.mlir")
    with open(source, "w") as f:
        f.write(gpt(os.path.join(args.bin, "zbc-dsl-gpt"), 2, "--tied"))
    shape = ["--ranks", "2", "--data-parallel", "2", "--microbatches", "8",
             "--schedule", "zb-h1", "--data", TEXT] + ADAMW
    checkpoints = os.path.join(work, "checkpoints")
    run([zbc, "run", source, *shape, "--zero", "1", "--steps", "4", "--save",
         os.path.join(work, "straight"), "-o", os.path.join(work, "a")])
    run([zbc, "run", source, *shape, "--zero", "1", "--steps", "2",
         "--checkpoint-every", "2", "--checkpoint-dir", checkpoints, "-o",
         os.path.join(work, "b")])
    files = sorted(os.listdir(os.path.join(checkpoints, "step-2")))
    if files != ["manifest.json", "rank0.shard0.safetensors",
                 "rank0.shard1.safetensors", "rank1.shard0.safetensors",
                 "rank1.shard1.safetensors"]:
        sys.exit(f"FAILED: zero-resume: the checkpoint holds {files}")
    # --zero 1 and 2 shard the state alike: a checkpoint holds no gradient.
    run([zbc, "run", source, *shape, "--zero", "2", "--steps", "4",
         "--resume", checkpoints, "--save", os.path.join(work, "resumed"),
         "-o", os.path.join(work, "c")])
    for r in (0, 1):
        name = f"rank{r}.safetensors"
        if (_tensor_bytes(os.path.join(work, "straight", name)) !=
                _tensor_bytes(os.path.join(work, "resumed", name))):
            sys.exit(f"FAILED: zero-resume: rank {r}'s parameters after 2 + "
                     f"2 steps differ from 4 steps")
    refused = subprocess.run(
        [zbc, "run", source, *shape, "--zero", "0", "--steps", "4",
         "--resume", checkpoints, "-o", os.path.join(work, "d")],
        capture_output=True, text=True, timeout=120)
    said = ("holds an optimizer sharded over 2 replicas; this program's is "
            "whole (--zero 0)")
    if refused.returncode == 0 or said not in refused.stdout + refused.stderr:
        sys.exit(f"FAILED: zero-resume: --zero 0 resumed a sharded "
                 f"checkpoint:\n{refused.stdout}{refused.stderr}")
    print("ok zero-resume: a file per rank and replica; 2 steps under "
          "--zero 1 and 2 under --zero 2 equal 4 bit for bit; --zero 0 "
          "refuses it", flush=True)


MODES = {"training-bf16": bf16, "training-equivalence": equivalence, "training-resume": resume,
         "training-lost-rank": lost_rank, "training-bad-input": bad_input,
         "training-profile": profile, "training-tied": tied,
         "training-zero": zero}
