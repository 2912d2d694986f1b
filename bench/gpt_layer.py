#!/usr/bin/env python3
"""One GPT or Llama block through zbc's per-rank programs against PyTorch.

Generates a 3-block GPT (zbc-dsl-gpt --layers 3 --hidden 512 --seq 256
--batch 4 --heads 8 --vocab 256), or with --model llama a 3-layer Llama
(zbc-dsl-llama --layers 3 --hidden 512 --intermediate 1408 --heads 8
--kv-heads 2 --seq 256 --max-positions 256 --batch 4 --vocab 256
--no-rope-scaling), compiles it for 3 ranks under zb-h1, runs it with
--report and reads rank 1's profile: stage 1 is exactly one block, the block
bench/gpt_layer_torch.py --model MODEL times, so its F, B and W per
microbatch are the profile's seconds / count (wall time of each compute
phase: the kernels and the runtime's checks).

Fairness: 3 ranks on 2 cores would time-share, inflating compute wall times.
So the measured run is the generated launch.sh itself, started from a
directory whose rankN wrappers exec the executables under taskset (so it
never copies launch.sh's mpirun line, which has grown before): rank 1 alone
on the last CPU, ranks 0 and 2 together on the first
(with 3 or more CPUs, one each); rank 1's computes then never share a core,
and its waits for the slower neighbours are comm, not compute. The torch
script runs on rank 1's CPU, after it, alone. launch.sh as generated
(unpinned) is run too, to show what sharing costs. Each round runs all three
one after another; the table gives medians over the rounds, and each ratio
is the median of the per-round ratios.

Usage: bench/gpt_layer.py [--rounds 5] [--steps 3] [--microbatches 4]
       [--build build] [--work DIR] [--smoke]   (needs mpirun, taskset, Debian's
       python3-torch at /usr/bin/python3)
"""
import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RANKS = 3
SHAPE = ["--hidden", "512", "--seq", "256", "--batch", "4", "--heads", "8"]
LLAMA_SHAPE = ["--intermediate", "1408", "--kv-heads", "2", "--max-positions",
               "256", "--no-rope-scaling"]
# --smoke: the smallest block, one round of one step (ctest's bench family
# runs it so that the benchmark cannot rot unseen; its times mean nothing).
SMOKE_SHAPE = ["--hidden", "32", "--seq", "8", "--batch", "1", "--heads", "2"]
SMOKE_LLAMA_SHAPE = ["--intermediate", "64", "--kv-heads", "1",
                     "--max-positions", "8", "--no-rope-scaling"]
SMOKE_TORCH = ["--hidden", "32", "--intermediate", "64", "--kv-heads", "1",
               "--seq", "8", "--microbatch", "1", "--heads", "2", "--warmup",
               "1", "--reps", "20"]


def rank1_ms(report_dir):
    """Stage 1's F, B, W ms per microbatch from rank 1's profile."""
    with open(os.path.join(report_dir, "rank1.json")) as f:
        profile = json.load(f)["profile"]
    return {c["kind"]: c["seconds"] / c["count"] * 1e3
            for c in profile["computes"] if c["stage"] == 1 and c["count"]}


def pinned_launcher(out, work):
    """The generated launch.sh itself, run from a directory whose rankN are
    wrappers that exec out/rankN under taskset: the job starts exactly as
    launch.sh starts it (its mpirun line, whatever it holds), each rank
    pinned. Returns the script and rank 1's CPU."""
    cpus = sorted(os.sched_getaffinity(0))
    cpu_of = (lambda r: cpus[r]) if len(cpus) >= 3 else \
        (lambda r: cpus[-1] if r == 1 else cpus[0])
    pinned = os.path.join(work, "pinned-launch")
    os.makedirs(pinned, exist_ok=True)
    shutil.copy(os.path.join(out, "launch.sh"), pinned)
    for r in range(RANKS):
        wrapper = os.path.join(pinned, f"rank{r}")
        with open(wrapper, "w") as f:
            f.write(f"#!/bin/sh\nexec taskset -c {cpu_of(r)} "
                    f"{shlex.quote(os.path.join(out, f'rank{r}'))} \"$@\"\n")
        os.chmod(wrapper, 0o755)
    return os.path.join(pinned, "launch.sh"), cpu_of(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["gpt", "llama"], default="gpt")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--microbatches", type=int, default=4)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--work", default=None)
    parser.add_argument("--smoke", action="store_true",
                        help="one round of one step at the smallest sizes: "
                        "checks that the benchmark runs")
    args = parser.parse_args()
    shape, llama_shape, torch_shape = SHAPE, LLAMA_SHAPE, []
    if args.smoke:
        args.rounds, args.steps, args.microbatches = 1, 1, 3
        shape, llama_shape, torch_shape = SMOKE_SHAPE, SMOKE_LLAMA_SHAPE, \
            SMOKE_TORCH
    work = os.path.abspath(args.work or tempfile.mkdtemp(prefix="zbc-gpt-layer-"))
    os.makedirs(work, exist_ok=True)
    binary = lambda name: os.path.join(args.build, "bin", name)
    model, out = os.path.join(work, "model3.mlir"), os.path.join(work, "out")
    llama = args.model == "llama"
    subprocess.run([binary("zbc-dsl-llama" if llama else "zbc-dsl-gpt"),
                    "--layers", str(RANKS), "--vocab", "256", *shape,
                    *(llama_shape if llama else []), "-o", model], check=True)
    subprocess.run([binary("zbc"), "compile", model, "--ranks", str(RANKS),
                    "--microbatches", str(args.microbatches), "--schedule",
                    "zb-h1", "-o", out], check=True, stdout=subprocess.DEVNULL)

    samples = {"pinned": [], "unpinned": [], "torch": []}
    for r in range(args.rounds):
        rep = os.path.join(work, f"pinned{r}")
        launcher, torch_cpu = pinned_launcher(out, work)
        subprocess.run([launcher, "--steps", str(args.steps), "--report", rep,
                        "--quiet"], check=True)
        samples["pinned"].append(rank1_ms(rep))
        rep = os.path.join(work, f"unpinned{r}")
        subprocess.run([os.path.join(out, "launch.sh"), "--steps",
                        str(args.steps), "--report", rep, "--quiet"], check=True)
        samples["unpinned"].append(rank1_ms(rep))
        torch = subprocess.run(
            ["taskset", "-c", str(torch_cpu), "/usr/bin/python3",
             os.path.join(ROOT, "bench", "gpt_layer_torch.py"), "--model",
             args.model, *torch_shape],
            check=True, capture_output=True, text=True)
        t = json.loads(torch.stdout)
        samples["torch"].append({"F": t["F_ms"], "B": t["B_ms"],
                                 "W": t["W_ms"], "BW": t["BW_ms"]})
        print(f"round {r + 1}/{args.rounds}: zbc {samples['pinned'][-1]}, "
              f"torch {samples['torch'][-1]}", file=sys.stderr)
    for s in samples["pinned"] + samples["unpinned"]:
        s["B+W"] = s["B"] + s["W"]

    med = lambda key, op: statistics.median(s[op] for s in samples[key])
    print(f"{args.model} block; zbc: 3 ranks, zb-h1, m={args.microbatches}, "
          f"{args.steps} steps; "
          f"medians of {args.rounds} rounds; torch {t['torch']}, 1 thread\n")
    print("| op | zbc ms (rank 1 pinned) | torch ms | ratio | "
          "zbc ms (launch.sh, unpinned) |")
    print("|---|---|---|---|---|")
    for op, top in (("F", "F"), ("B", "B"), ("W", "W"), ("B+W", "BW")):
        ratio = statistics.median(z[op] / t[top] for z, t in
                                  zip(samples["pinned"], samples["torch"]))
        label = "B+W (torch: fused backward)" if op == "B+W" else op
        print(f"| {label} | {med('pinned', op):.1f} | {med('torch', top):.1f}"
              f" | {ratio:.2f} | {med('unpinned', op):.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
