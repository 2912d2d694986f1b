#!/usr/bin/env python3
"""Trains gpt-small or llama-small on a text file with profiled costs.

Usage: bench/train_text.py BUILD/bin OUT_DIR [--model gpt-small|llama-small]
       [--steps N] [--text FILE] [--smoke]

1. `zbc profile examples/MODEL.mlir --stages 2` measures each stage's F,
   B and W on this machine (OUT_DIR/costs.json);
2. `zbc run` trains it on 2 ranks under ZB-H1 with those costs: AdamW, a
   warm-up and cosine learning rate, clipping, the held-out loss every 25
   steps (the text's last tenth), a checkpoint every 100 steps;
3. prints the training and held-out curves, the unigram entropy of the text,
   the measured and predicted bubble rates and the wall time, and writes
   OUT_DIR/loss.svg (the curves beside the entropy). The run's trace.json,
   timeline.svg and schedule.svg are in OUT_DIR/run (replaced by each run).
Standard library only (the SVG is written by hand).

--smoke: 2 microbatches instead of 8, the profile with one recorded step,
then 2 steps with the held-out loss and a checkpoint after each: a check that it runs and its report parses,
as ctest's bench family runs it (its curves and times mean nothing).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def loss_svg(path, losses, evals, entropy, title):
    w, h, pad = 640, 360, 48
    top = max(losses[:3] + [e for _, e in evals] + [entropy]) * 1.05
    bottom = min(losses + [e for _, e in evals] + [entropy]) * 0.9
    n = len(losses)

    def xy(step, loss):
        return (pad + (w - 2 * pad) * (step - 1) / max(1, n - 1),
                h - pad - (h - 2 * pad) * (loss - bottom) / (top - bottom))

    train = " ".join(f"{x:.1f},{y:.1f}" for x, y in
                     (xy(i + 1, l) for i, l in enumerate(losses)))
    held = " ".join(f"{x:.1f},{y:.1f}" for x, y in (xy(s, l) for s, l in evals))
    ey = xy(1, entropy)[1]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           'font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{pad}" y="20">{title}</text>',
           f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="black"/>',
           f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{h - pad}" stroke="black"/>',
           f'<line x1="{pad}" y1="{ey:.1f}" x2="{w - pad}" y2="{ey:.1f}" '
           'stroke="gray" stroke-dasharray="4,4"/>',
           f'<text x="{w - pad - 170}" y="{ey - 6:.1f}" fill="gray">unigram entropy '
           f'{entropy:.3f}</text>',
           f'<polyline points="{train}" fill="none" stroke="#4878d0" stroke-width="1"/>',
           f'<polyline points="{held}" fill="none" stroke="#d65f5f" stroke-width="2"/>',
           f'<text x="{w - pad - 170}" y="{pad + 10}" fill="#4878d0">training loss</text>',
           f'<text x="{w - pad - 170}" y="{pad + 26}" fill="#d65f5f">held-out loss</text>',
           f'<text x="{w / 2 - 20}" y="{h - 12}">step (1..{n})</text>']
    for value in (bottom, (bottom + top) / 2, top):
        out.append(f'<text x="4" y="{xy(1, value)[1] + 4:.1f}">{value:.2f}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bin")
    parser.add_argument("out")
    parser.add_argument("--model", choices=["gpt-small", "llama-small"],
                        default="gpt-small")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--text", default="/usr/share/common-licenses/GPL-3")
    parser.add_argument("--smoke", action="store_true",
                        help="2 microbatches, 2 steps, evaluating and "
                        "checkpointing after each: checks that it runs")
    args = parser.parse_args()
    every = {"eval": 25, "checkpoint": 100, "warmup": 20}
    microbatches, profile_steps = "8", []
    if args.smoke:
        args.steps = 2
        every = {"eval": 1, "checkpoint": 1, "warmup": 1}
        microbatches, profile_steps = "2", ["--steps", "1"]
    zbc = os.path.join(args.bin, "zbc")
    model = os.path.join(ROOT, "examples", args.model + ".mlir")
    os.makedirs(args.out, exist_ok=True)
    costs = os.path.join(args.out, "costs.json")
    subprocess.run([zbc, "profile", model, "--stages", "2", "--microbatches",
                    microbatches, "--data", args.text, *profile_steps, "-o", costs],
                   check=True)
    run_dir = os.path.join(args.out, "run")
    # OUT_DIR/run is this script's: a run replaces the last one (zbc run
    # refuses a directory that holds another run's checkpoints).
    shutil.rmtree(run_dir, ignore_errors=True)
    cmd = [zbc, "run", model, "--ranks", "2", "--microbatches", microbatches,
           "--optimizer", "adamw", "--cost-file", costs, "--data", args.text,
           "--steps", str(args.steps), "--lr", "1e-3", "--warmup",
           str(every["warmup"]), "--decay-steps", str(args.steps),
           "--clip-norm", "1", "--eval-every", str(every["eval"]),
           "--checkpoint-every", str(every["checkpoint"]), "-o", run_dir]
    print("$ " + " ".join(cmd), flush=True)
    begin = time.time()
    result = subprocess.run(cmd, text=True, capture_output=True)
    seconds = time.time() - begin
    if result.returncode:
        sys.exit(result.stdout + result.stderr)
    with open(os.path.join(run_dir, "run", "rank1.json")) as f:
        report = json.load(f)
    losses, evals = report["losses"], report["evals"]
    entropy = report["unigram_entropy"]
    print("\n".join(l for l in result.stdout.splitlines()
                    if l.startswith(("eval", "data", "summary", "  "))))
    print(f"wall time {seconds:.0f} s for {args.steps} steps "
          f"({report['profile']['step_seconds'] / args.steps:.3f} s per step)")
    loss_svg(os.path.join(args.out, "loss.svg"), losses, evals, entropy,
             f"{args.model} on {os.path.basename(args.text)}: 2 ranks, ZB-H1, "
             f"AdamW, {args.steps} steps")


if __name__ == "__main__":
    main()
