"""The e2e modes of failures handled (driven by e2e.py): nothing lost, nothing
silent, no orphans or hangs (issue 22's reproductions, each a check).

  failures-checkpoints  resume without --seed continues bit for bit; the
                        manifest's own checksum; one history per checkpoint
                        directory (a second run into the same -o, a rewind
                        over later checkpoints); the fallback to the newest
                        loadable step; no staging directory left behind; two
                        runs on one -o or one checkpoint directory; outputs
                        that cannot be written, found before any step;
                        --save-init with replicas; "step" in --save's metadata.
  failures-kill-loop    20 SIGKILLs of a random rank at random moments of a
                        run that checkpoints every step, each followed by a
                        --resume of the directory: the end equals an
                        uninterrupted run bitwise.
  failures-silent       a non-finite loss or parameter stops every rank before
                        a checkpoint of it; float data checked for NaN; data
                        keys whose sample counts differ; a directory, a FIFO,
                        /dev/zero and a sparse 1.5 GB file as data; options
                        the ranks would refuse, refused by zbc run (and a rank
                        that refuses them not called lost); --timeout 1e10;
                        a file-size limit; zbc profile -o DIR; reports that
                        are strict JSON.
  failures-hangs        SIGTERM to zbc run stops every rank; SIGTERM to one
                        rank names it; a rank frozen at
                        start-up ends the job within its --timeout; a rank
                        frozen mid-step is the one named; kill -9 of mpirun
                        is said to be the launcher's death.
  every-cut             every cut the partitioner can make, at once, in the
                        example MLP and GPT: compiled, trained one step equal
                        to the reference, measured peak = predicted.
"""
import json
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import time

from zbc_e2e import EXAMPLES, fresh_dir, run
from zbc_models import gpt, mlp

TEXT = "/usr/share/common-licenses/GPL-3"


def _fail(what, text=""):
    sys.exit(f"FAILED: {what}" + (f":\n{text}" if text else ""))


def _tensors(path):
    """name -> raw bytes of each tensor of a safetensors file, and its
    metadata."""
    with open(path, "rb") as f:
        data = f.read()
    length = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + length])
    base = 8 + length
    tensors = {n: data[base + t["data_offsets"][0]:base + t["data_offsets"][1]]
               for n, t in header.items() if n != "__metadata__"}
    return tensors, header.get("__metadata__", {})


def _same_parameters(a, b, ranks):
    for r in range(ranks):
        ta, _ = _tensors(os.path.join(a, f"rank{r}.safetensors"))
        tb, _ = _tensors(os.path.join(b, f"rank{r}.safetensors"))
        if ta != tb:
            return [n for n in ta if ta[n] != tb.get(n)]
    return []


def _strict_json(path):
    """JSON as the standard has it: NaN and Infinity are not numbers."""
    def reject(token):
        raise ValueError(f"{path}: {token} is not JSON")
    with open(path) as f:
        return json.loads(f.read(), parse_constant=reject)


def _refused(cmd, message, what, before_steps=True, timeout=120, **kw):
    """`cmd` exits non-zero saying `message` (and, with before_steps, before
    any step ran)."""
    begin = time.time()
    result = run(cmd, check=False, timeout=timeout, **kw)
    text = result.stdout + result.stderr
    if result.returncode == 0 or message not in text or (
            before_steps and re.search(r"^step 1/", text, re.M)):
        _fail(f"{what}: want a refusal with '{message}'"
              f"{' before any step' if before_steps else ''} (exit "
              f"{result.returncode})", text)
    line = next(l for l in text.splitlines() if message in l)
    print(f"ok: {what} ({time.time() - begin:.1f} s): {line.strip()}",
          flush=True)
    return text


def _model(args, work, kind, stages):
    source = os.path.join(work, f"{kind}{stages}.mlir")
    with open(source, "w") as f:
        f.write(mlp(stages) if kind == "mlp"
                else gpt(os.path.join(args.bin, "zbc-dsl-gpt"), stages))
    return source


def _compiled(args, work, kind, extra=()):
    zbc = os.path.join(args.bin, "zbc")
    source = _model(args, work, kind, 2)
    out = os.path.join(work, f"{kind}-out")
    run([zbc, "compile", source, "--ranks", "2", "--microbatches", "4", "-o",
         out, *extra])
    return source, os.path.join(out, "launch.sh")


def _write_safetensors(path, tensors):
    """tensors: name -> (dtype, shape, raw bytes)."""
    header, offset, data = {}, 0, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        data += raw
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text + data)


def _mlp_data(path, x_samples, y_samples, nan_at=None):
    """A data file for the example MLP (input.x [N, 8, 16] f32, label.y
    [N, 8] i64)."""
    import struct
    rng = random.Random(5)
    x = [rng.uniform(-1, 1) for _ in range(x_samples * 8 * 16)]
    if nan_at is not None:
        x[nan_at] = float("nan")
    y = [rng.randrange(8) for _ in range(y_samples * 8)]
    _write_safetensors(path, {
        "input.x": ("F32", [x_samples, 8, 16], struct.pack(f"<{len(x)}f", *x)),
        "label.y": ("I64", [y_samples, 8], struct.pack(f"<{len(y)}q", *y))})


#===----------------------------------------------------------------------===#
# failures-checkpoints
#===----------------------------------------------------------------------===#

def checkpoints(args):
    zbc = os.path.join(args.bin, "zbc")
    work = fresh_dir(args.work, "checkpoints")
    source, launch = _compiled(args, work, "gpt", ["--optimizer", "adamw"])
    train = ["--data", TEXT, "--quiet"]

    # 1, 11: --seed 7 for 6 steps, and 4 + resume (without --seed) + 2: the
    # same parameters bitwise, and "step" 6 in both files' metadata.
    whole, half = os.path.join(work, "whole"), os.path.join(work, "half")
    ck = os.path.join(work, "ck")
    run([launch, "--steps", "6", "--seed", "7", "--save", whole] + train)
    run([launch, "--steps", "4", "--seed", "7", "--checkpoint-every", "2",
         "--checkpoint-dir", ck] + train)
    run([launch, "--steps", "6", "--resume", ck, "--save", half,
         "--save-init", os.path.join(work, "half-init")] + train)
    differ = _same_parameters(whole, half, 2)
    if differ:
        _fail(f"resuming without --seed did not continue bit for bit: {differ[:4]}")
    steps = [_tensors(os.path.join(d, "rank0.safetensors"))[1].get("step")
             for d in (whole, half, os.path.join(work, "half-init"))]
    if steps != ["6", "6", "4"]:
        _fail(f"--save's 'step' is {steps[:2]} after 6 steps, --save-init's "
              f"{steps[2]} after resuming at 4 (want 6, 6, 4)")
    print("ok: --seed 7, 4 steps, --resume without --seed, 2 more: bitwise the "
          "6 uninterrupted steps; 'step' 6 in both, 4 in --save-init", flush=True)
    if any(n.startswith(".") and n.startswith(".step-") for n in os.listdir(ck)):
        _fail(f"a staging directory was left in {ck}: {os.listdir(ck)}")

    # 2: a digit of the manifest's "step" changed.
    edited = os.path.join(work, "edited")
    shutil.copytree(os.path.join(ck, "step-4"), edited)
    manifest = os.path.join(edited, "manifest.json")
    with open(manifest) as f:
        text = f.read()
    with open(manifest, "w") as f:
        f.write(text.replace('"step": 4', '"step": 5'))
    _refused([launch, "--steps", "8", "--resume", edited] + train,
             "fails its own checksum", "a manifest whose step was edited")

    # 4: the latest checkpoint damaged: the newest loadable one is used, and
    # said; the run then ends as the uninterrupted one.
    fallback = os.path.join(work, "fallback")
    shutil.copytree(ck, fallback)
    rank1 = os.path.join(fallback, "step-4", "rank1.safetensors")
    with open(rank1, "r+b") as f:
        f.seek(os.path.getsize(rank1) - 64)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0x01]))
    again = os.path.join(work, "again")
    result = run([launch, "--steps", "6", "--resume", fallback, "--save", again,
                  "--data", TEXT])
    said = result.stdout + result.stderr
    if ("resuming from" not in said or "step-2' after step 2" not in said or
            "fails its checksum" not in said):
        _fail("a damaged latest checkpoint: no fallback to step-2 said", said)
    differ = _same_parameters(whole, again, 2)
    if differ:
        _fail(f"after falling back to step-2 the run differs: {differ[:4]}")
    print("ok: step-4 damaged: " + next(l for l in said.splitlines()
                                        if "resuming from" in l), flush=True)

    # 3: a second run into the same directory of checkpoints, by zbc run
    # (another -o run with another learning rate) and by launch.sh; and a
    # rewind that would write over later checkpoints.
    out = os.path.join(work, "run")
    run([zbc, "run", source, "--ranks", "2", "--microbatches", "4",
         "--optimizer", "adamw", "--steps", "4", "--checkpoint-every", "2",
         "-o", out] + train[:2])
    first = _tensors(os.path.join(out, "checkpoints", "step-4",
                                  "rank0.safetensors"))
    _refused([zbc, "run", source, "--ranks", "2", "--microbatches", "4",
              "--optimizer", "adamw", "--steps", "3", "--lr", "0.5",
              "--checkpoint-every", "2", "-o", out] + train[:2],
             "already holds the checkpoints of another run",
             "zbc run into an -o with another run's checkpoints")
    _refused([launch, "--steps", "3", "--checkpoint-every", "1",
              "--checkpoint-dir", ck] + train,
             "already holds the checkpoints of another run",
             "a fresh job writing beside another run's checkpoints")
    _refused([launch, "--steps", "6", "--resume", os.path.join(ck, "step-2"),
              "--checkpoint-every", "2", "--checkpoint-dir", ck] + train,
             "would write over the later checkpoints",
             "a rewind to step-2 over step-4")
    if _tensors(os.path.join(out, "checkpoints", "step-4",
                             "rank0.safetensors")) != first:
        _fail("the first run's checkpoint changed")

    # 5: two zbc run on one -o at once; two jobs on one checkpoint directory.
    busy = os.path.join(work, "busy")
    long_run = subprocess.Popen(
        [zbc, "run", source, "--ranks", "2", "--microbatches", "4", "--steps",
         "100000", "--checkpoint-every", "1000", "-o", busy],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not os.path.exists(os.path.join(busy, "status", "rank1.status")):
        if time.time() > deadline or long_run.poll() is not None:
            long_run.kill()
            _fail("the first run did not start")
        time.sleep(0.1)
    _refused([zbc, "run", source, "--ranks", "2", "--microbatches", "4",
              "--steps", "2", "-o", busy], "is in use by another run",
             "a second zbc run on the same -o")
    _refused([launch, "--steps", "2", "--checkpoint-every", "1",
              "--checkpoint-dir", os.path.join(busy, "checkpoints"),
              "--quiet"], "is in use by another run",
             "a second job writing into the same checkpoint directory")
    long_run.send_signal(signal.SIGTERM)
    long_run.communicate(timeout=60)

    # 6: results that cannot be written, found before any step (a path
    # under a file: no directory can be made there, even as root).
    blocker = os.path.join(work, "a-file")
    open(blocker, "w").close()
    for option in ("--save", "--save-init", "--report", "--checkpoint-dir"):
        extra = ["--checkpoint-every", "1"] if option == "--checkpoint-dir" else []
        _refused([launch, "--steps", "2", option,
                  os.path.join(blocker, "out"), *extra] + train,
                 f"{option}: cannot make", f"{option} into an unwritable place")
    _refused([zbc, "run", source, "--ranks", "2", "--microbatches", "4",
              "--steps", "2", "--save", os.path.join(blocker, "out"), "-o",
              os.path.join(work, "unwritable")],
             "--save: cannot make", "zbc run --save into an unwritable place")

    # 9: --save-init with replicas: the first replica writes for all.
    replicated = os.path.join(work, "replicated")
    run([zbc, "run", source, "--ranks", "2", "--microbatches", "8",
         "--data-parallel", "2", "--steps", "1", "--save-init",
         os.path.join(work, "init-dp"), "-o", replicated])
    print("ok: --save-init with 2 replicas: "
          f"{sorted(os.listdir(os.path.join(work, 'init-dp')))}", flush=True)


#===----------------------------------------------------------------------===#
# failures-kill-loop
#===----------------------------------------------------------------------===#

def kill_loop(args):
    """Item 4's acceptance: kills at random moments (many during a
    checkpoint: one is written after every step), each followed by a resume
    of the directory, end as one uninterrupted run."""
    work = fresh_dir(args.work, "kill-loop")
    _, launch = _compiled(args, work, "mlp", ["--optimizer", "adamw"])
    out = os.path.dirname(launch)
    steps = 8000  # about 4 ms a step with its checkpoint: 20 kills land first
    train = ["--steps", str(steps), "--seed", "3", "--quiet"]
    whole = os.path.join(work, "whole")
    run([launch, "--save", whole] + train)
    ck = os.path.join(work, "ck")
    rng = random.Random(22)
    kills, runs, resumed_at = 0, 0, []  # resumed_at: the latest step kept
    while kills < 20:
        runs += 1
        if runs > 80:
            _fail(f"only {kills} kills landed in {runs} runs")
        started = os.path.isdir(ck) and any(n.startswith("step-")
                                            for n in os.listdir(ck))
        resume = ["--resume", ck] if started else []
        job = subprocess.Popen([launch, "--checkpoint-every", "1",
                                "--checkpoint-dir", ck] + resume + train,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
        time.sleep(rng.uniform(0.4, 1.4))
        pids = subprocess.run(["pgrep", "-f", f"^{out}/rank{rng.randrange(2)} "],
                              text=True, capture_output=True).stdout.split()
        if job.poll() is None and pids:
            os.kill(int(pids[0]), signal.SIGKILL)
            kills += 1
        try:
            text, _ = job.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            job.kill()
            _fail("a job outlived its killed rank by 60 s")
        if "holds no checkpoint" in text or "fails its" in text:
            _fail("a kill left a checkpoint that does not load", text)
        steps_kept = [int(n[5:]) for n in os.listdir(ck) if n.startswith("step-")] \
            if os.path.isdir(ck) else []
        resumed_at.append(max(steps_kept, default=0))
        if job.returncode == 0:
            _fail(f"the run ended after {kills} kills: make it longer", text)
    # The last run resumes and finishes without checkpoints of its own: it
    # is not killed, and writing one after each of its thousands of steps
    # took minutes on a loaded machine (and once the whole timeout).
    final = os.path.join(work, "final")
    result = run([launch, "--resume", ck, "--save", final] + train)
    differ = _same_parameters(whole, final, 2)
    if differ:
        _fail(f"after {kills} kills and resumes the parameters differ from "
              f"the uninterrupted run's: {differ[:4]}")
    if resumed_at != sorted(resumed_at):
        _fail(f"the latest checkpoint went back in time: {resumed_at}")
    print(f"ok: {kills} SIGKILLs in {runs} runs, each followed by --resume "
          f"(the latest checkpoint after each: {resumed_at}); the end equals "
          f"the uninterrupted {steps} steps bitwise", flush=True)


#===----------------------------------------------------------------------===#
# failures-silent
#===----------------------------------------------------------------------===#

def silent(args):
    zbc = os.path.join(args.bin, "zbc")
    work = fresh_dir(args.work, "silent")
    gpt_source, gpt_launch = _compiled(args, work, "gpt")
    mlp_source, mlp_launch = _compiled(args, work, "mlp")

    # 7: a learning rate that blows the weights up: every rank stops at the
    # step, naming it, itself and what; no checkpoint of that state.
    out = os.path.join(work, "nan")
    text = _refused([zbc, "run", gpt_source, "--ranks", "2",
                     "--microbatches", "4", "--steps", "5", "--lr", "1e30",
                     "--data", TEXT, "--checkpoint-every", "1", "-o", out],
                    "is not finite", "--lr 1e30", before_steps=False)
    stopped = re.findall(r"zbc rank (\d): error: step (\d+)", text)
    step = {s for _, s in stopped}
    if {r for r, _ in stopped} != {"0", "1"} or len(step) != 1:
        _fail("not every rank stopped at one step, naming it", text)
    kept = sorted(n for n in os.listdir(os.path.join(out, "checkpoints"))
                  if n.startswith("step-"))
    if kept != [f"step-{n}" for n in range(1, int(step.pop()))]:
        _fail(f"checkpoints after a non-finite step: {kept}", text)
    print(f"ok: checkpoints kept: {kept}", flush=True)
    # Float data with a NaN; keys whose sample counts differ.
    nan_data = os.path.join(work, "nan.safetensors")
    _mlp_data(nan_data, 4, 4, nan_at=37)
    uneven = os.path.join(work, "uneven.safetensors")
    _mlp_data(uneven, 4, 3)
    # (Each rank reads its own keys: the ranks compare their counts.)
    for data, message, ranks_say in (
            (nan_data, "holds a NaN or infinity at element 37", None),
            (uneven, "'label.y' has 3 samples, 'input.x' has 4",
             "('label.y') have 3 samples, another rank's 4")):
        _refused([zbc, "run", mlp_source, "--ranks", "2", "--microbatches",
                  "4", "--steps", "2", "--data", data, "-o",
                  os.path.join(work, "mlp-run")], message,
                 f"zbc run --data {os.path.basename(data)}")
        said = _refused([mlp_launch, "--steps", "2", "--data", data],
                        ranks_say or message,
                        f"launch.sh --data {os.path.basename(data)}")
        # The ranks' lines come through mpirun in no set order: a rank
        # stopped by another's failure must not call its message "above".
        if "message above" in said:
            _fail("a rank stopped by another's failure says that rank's "
                  "message is above", said)

    # 13: a directory, a FIFO, /dev/zero, a sparse 1.5 GB file: refused at
    # once, by zbc run and by the ranks.
    fifo = os.path.join(work, "fifo.txt")
    os.mkfifo(fifo)
    sparse = os.path.join(work, "sparse.safetensors")
    with open(sparse, "wb") as f:
        f.truncate(1536 << 20)
    for data, message in ((work, "is a directory"), (fifo, "is a FIFO"),
                          ("/dev/zero", "is a device"),
                          (sparse, "its header is not a JSON object")):
        _refused([zbc, "run", gpt_source, "--ranks", "2", "--microbatches",
                  "4", "--steps", "2", "--data", data, "-o",
                  os.path.join(work, "gpt-run")], message,
                 f"zbc run --data {data}", timeout=30)
        _refused([gpt_launch, "--steps", "2", "--data", data], message,
                 f"launch.sh --data {data}", timeout=30)

    # 18: options every rank would refuse: zbc run refuses them itself; a
    # rank that refuses them says so in its status, and is not lost.
    _refused([zbc, "run", gpt_source, "--ranks", "2", "--microbatches", "4",
              "--steps", "10", "--warmup", "5", "--decay-steps", "5", "-o",
              os.path.join(work, "gpt-run")],
             "--decay-steps 5 must come after the 5 warm-up steps",
             "zbc run --warmup 5 --decay-steps 5")
    status = fresh_dir(work, "status")
    run([gpt_launch, "--warmup", "5", "--decay-steps", "5", "--status-dir",
         status], check=False)
    said = [open(os.path.join(status, f"rank{r}.status")).read()
            for r in range(2)]
    if not all(s.startswith("failed: --decay-steps 5") for s in said):
        _fail(f"ranks that refused their options left statuses {said}")

    # 15: a --timeout too large to count in nanoseconds means never.
    run([zbc, "run", gpt_source, "--ranks", "2", "--microbatches", "4",
         "--steps", "3", "--timeout", "1e10", "-o",
         os.path.join(work, "gpt-run")])
    print("ok: --timeout 1e10 trains", flush=True)

    # 16: a file-size limit: the checkpoint's write fails, and says so.
    def limited():  # above what MPI's own files need, below a checkpoint
        resource.setrlimit(resource.RLIMIT_FSIZE, (8 << 20, 8 << 20))
    small = os.path.join(work, "small")
    run([zbc, "compile", os.path.join(EXAMPLES, "gpt-small.mlir"), "--ranks",
         "2", "--microbatches", "2", "-o", small])
    begin = time.time()
    result = subprocess.run([os.path.join(small, "launch.sh"), "--steps", "1",
                             "--checkpoint-every", "1", "--checkpoint-dir",
                             os.path.join(work, "limited"), "--quiet"],
                            preexec_fn=limited, capture_output=True, text=True,
                            timeout=120)
    text = result.stdout + result.stderr
    said = [l for l in text.splitlines()
            if "cannot checkpoint: cannot write" in l and "File too large" in l]
    if result.returncode == 0 or not said:
        _fail("a checkpoint over the file-size limit", text)
    print(f"ok: ulimit -f ({time.time() - begin:.1f} s): {said[0].strip()}",
          flush=True)

    # 20: zbc profile checks where the cost file goes first.
    for target, message in ((work, "is a directory; name a file"),
                            ("", "-o needs a file name")):
        _refused([zbc, "profile", gpt_source, "--stages", "2", "-o", target],
                 message, f"zbc profile -o '{target}'", timeout=30)

    # Reports are strict JSON (no NaN), and say where it stopped.
    report = os.path.join(work, "report")
    run([gpt_launch, "--steps", "2", "--data", TEXT, "--report", report,
         "--quiet"])
    for r in range(2):
        _strict_json(os.path.join(report, f"rank{r}.json"))
    print("ok: reports are strict JSON", flush=True)


#===----------------------------------------------------------------------===#
# failures-hangs
#===----------------------------------------------------------------------===#

def _job_pids(out, rank):
    return subprocess.run(["pgrep", "-f", f"^{out}/rank{rank} "], text=True,
                          capture_output=True).stdout.split()


def _wait_for(path, job, seconds=120):
    deadline = time.time() + seconds
    while not os.path.exists(path):
        if time.time() > deadline or job.poll() is not None:
            job.kill()
            _fail(f"{path} never appeared", job.communicate()[0])
        time.sleep(0.005)


def _ended(job, within, what):
    begin = time.time()
    try:
        text, _ = job.communicate(timeout=within)
    except subprocess.TimeoutExpired:
        job.kill()
        _fail(f"{what}: the job did not end within {within} s (a hang)")
    return text, time.time() - begin


def hangs(args):
    zbc = os.path.join(args.bin, "zbc")
    work = fresh_dir(args.work, "hangs")
    source = _model(args, work, "gpt", 4)
    base = [zbc, "run", source, "--ranks", "4", "--microbatches", "8",
            "--steps", "1000000"]

    # 12: SIGTERM to zbc run: passed on; every rank ends; exit 128 + 15.
    out = os.path.join(work, "term")
    job = subprocess.Popen(base + ["-o", out], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    _wait_for(os.path.join(out, "status", "rank3.status"), job)
    time.sleep(1)
    job.send_signal(signal.SIGTERM)
    text, seconds = _ended(job, 60, "SIGTERM to zbc run")
    left = [p for r in range(4) for p in _job_pids(out, r)]
    if job.returncode != 143 or left or "stopped by SIGTERM" not in text:
        _fail(f"SIGTERM to zbc run: exit {job.returncode}, ranks left {left}",
              text)
    print(f"ok: SIGTERM to zbc run: every rank gone after {seconds:.1f} s, "
          "exit 143", flush=True)

    # Issue 43 (20): SIGTERM to one rank's process, not from the launcher:
    # that rank is named (and the sender); the others are stopped.
    out = os.path.join(work, "one-rank")
    job = subprocess.Popen(base + ["-o", out], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    _wait_for(os.path.join(out, "status", "rank3.status"), job)
    time.sleep(1)
    os.kill(int(_job_pids(out, 2)[0]), signal.SIGTERM)
    text, seconds = _ended(job, 60, "SIGTERM to rank 2")
    named = f"zbc: error: rank 2 was sent SIGTERM by process {os.getpid()} " \
            "(not the launcher)"
    left = [p for r in range(4) for p in _job_pids(out, r)]
    if job.returncode == 0 or left or named not in text:
        _fail(f"SIGTERM to rank 2: exit {job.returncode}, ranks left {left}",
              text)
    print("ok: SIGTERM to rank 2: " + next(
        l for l in text.splitlines() if l.startswith(named)), flush=True)

    # 19: kill -9 of mpirun: the launcher's death, not four lost ranks.
    out = os.path.join(work, "launcher")
    job = subprocess.Popen(base + ["-o", out], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    _wait_for(os.path.join(out, "status", "rank3.status"), job)
    time.sleep(1)
    mpirun = subprocess.run(["pgrep", "-f", f"^\\S*mpirun .*{out}/rank0"],
                            text=True, capture_output=True).stdout.split()
    os.kill(int(mpirun[0]), signal.SIGKILL)
    text, seconds = _ended(job, 60, "kill -9 of mpirun")
    time.sleep(1)
    left = [p for r in range(4) for p in _job_pids(out, r)]
    if (job.returncode == 0 or left or "was lost" in text or
            "the launcher (mpirun) was killed by SIGKILL" not in text):
        _fail(f"kill -9 of mpirun: exit {job.returncode}, ranks left {left}",
              text)
    print("ok: kill -9 of mpirun: " + next(
        l for l in text.splitlines() if "launcher (mpirun)" in l), flush=True)

    # 17: rank 3 frozen mid-step (SIGSTOP), --timeout 3: rank 3 is named.
    out = os.path.join(work, "frozen")
    job = subprocess.Popen(base + ["--timeout", "3", "-o", out],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
    _wait_for(os.path.join(out, "status", "rank3.status"), job)
    time.sleep(1.5)
    os.kill(int(_job_pids(out, 3)[0]), signal.SIGSTOP)
    text, seconds = _ended(job, 60, "a frozen rank")
    verdict = [l for l in text.splitlines() if l.startswith("zbc: error: rank")]
    if not verdict or not verdict[0].startswith("zbc: error: rank 3") or \
            any(p for r in range(4) for p in _job_pids(out, r)):
        _fail("a rank frozen mid-step was not the one named", text)
    print(f"ok: rank 3 frozen: the job ended after {seconds:.1f} s: "
          f"{verdict[0]}", flush=True)

    # 14: rank 0 frozen at start-up (SIGSTOP as soon as it starts, while it
    # reads a text file of 256 MB), the other waiting for it: the watchdog
    # ends the job, and zbc run names rank 0.
    source2 = _model(args, work, "gpt", 2)
    out = os.path.join(work, "startup")
    big = os.path.join(work, "big.txt")
    with open(big, "wb") as f:
        f.truncate(256 << 20)
    job = subprocess.Popen([zbc, "run", source2, "--ranks", "2",
                            "--microbatches", "4", "--steps", "10",
                            "--data", big, "--timeout", "2", "-o", out],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
    _wait_for(os.path.join(out, "status", "rank0.status"), job)
    os.kill(int(_job_pids(out, 0)[0]), signal.SIGSTOP)
    text, seconds = _ended(job, 30, "a rank frozen at start-up")
    verdict = [l for l in text.splitlines() if l.startswith("zbc: error: rank")]
    if (job.returncode == 0 or "at start-up" not in text or not verdict or
            not verdict[0].startswith("zbc: error: rank 0")):
        _fail("a rank frozen at start-up", text)
    os.remove(big)
    print(f"ok: rank 0 frozen at start-up: the job ended after {seconds:.1f} s: "
          f"{verdict[0]}", flush=True)


#===----------------------------------------------------------------------===#
# every-cut
#===----------------------------------------------------------------------===#

def _without_cuts(source):
    """The model with its zb.cut ops removed (each use of a cut's result
    becomes its operand)."""
    with open(source) as f:
        text = f.read()
    for result, value in re.findall(r"^\s*(%[\w.]+) = zb\.cut (%[\w.]+) :.*$",
                                    text, re.M):
        text = re.sub(r"^\s*" + re.escape(result) + r" = zb\.cut .*\n", "", text,
                      flags=re.M)
        text = re.sub(re.escape(result) + r"\b", value, text)
    return text


def every_cut(args):
    """Item 10: a stage may start or end at any gap the partitioner may cut
    (a bias_add whose input gradient is its output gradient, a stage of one
    element-wise op, ...). Cutting at all of them at once puts each gap at a
    stage boundary; one rank per stage, 1F1B."""
    zbc = os.path.join(args.bin, "zbc")
    reference = os.path.join(args.bin, "zbc-reference")
    for name in ("mlp", "gpt"):
        work = fresh_dir(args.work, f"every-cut-{name}")
        source = os.path.join(work, f"{name}.mlir")
        with open(source, "w") as f:
            f.write(_without_cuts(os.path.join(EXAMPLES, f"{name}.mlir")))
        result = run([zbc, "split", source, "--stages", "1000"], check=False)
        most = re.search(r"so at most (\d+) stages", result.stderr)
        if not most:
            _fail(f"{name}: how many stages the partitioner can make",
                  result.stderr)
        stages = int(most.group(1))
        out, saved = os.path.join(work, "out"), os.path.join(work, "saved")
        result = run([zbc, "run", source, "--ranks", str(stages),
                      "--microbatches", "4", "--schedule", "1f1b", "--steps",
                      "1", "--save", saved, "-o", out])
        for line in result.stdout.splitlines():
            m = re.search(r"peak (\d+) bytes measured, (\d+) predicted", line)
            if m and m.group(1) != m.group(2):
                _fail(f"{name}: {line.strip()}")
        check = run([reference, os.path.join(out, "program.mlir"), "--steps",
                     "1", "--compare", saved])
        print(f"ok {name}: cut at all {stages - 1} gaps the partitioner may "
              f"cut: {check.stdout.strip().splitlines()[-1]}", flush=True)


MODES = {"failures-checkpoints": checkpoints, "failures-kill-loop": kill_loop,
         "failures-silent": silent, "failures-hangs": hangs,
         "every-cut": every_cut}
