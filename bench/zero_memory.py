#!/usr/bin/env python3
"""What a sharded optimizer (--zero 1, 2) saves a rank, and what that buys.

1. Bytes per parameter: a bf16 Llama (zbc-dsl-llama --bf16) with AdamW on
   pipeline 2 x data D, D = 1 (--zero 0), 2 and 4 (--zero 1 and 2),
   compiled and trained one step on the CPU ranks: each rank's weights,
   gradients held between steps, f32 masters and AdamW state per parameter
   (zbc compile's report.json) beside Megatron's 18 and 6 + 12/D (and
   2 + 12/D with the gradients sharded too), the largest predicted peak,
   and every process's measured peak against the predicted one (they must
   be equal: the ledger counts every byte).
2. A Llama-3-8B-shaped compile (hidden 4096, intermediate 14336, 32 layers,
   32 heads, 8 kv heads, vocabulary 128256, bf16, one sequence of --seq
   tokens per microbatch) on pipeline 16 x data 8, zb-auto, 256
   microbatches, AdamW, --mem-limit 80GB, with --zero 0, 1 and 2: each rank's
   bytes per parameter and parameter bytes, the activation budget zb-auto
   fits, the predicted bubble and makespan.

Usage: bench/zero_memory.py [--build build] [--seq 8192] [--work DIR]
       [--smoke]
(--smoke: D in {1, 2}, and the 8B shape with 2 layers, hidden 256 and a
vocabulary of 1024 on pipeline 2 x data 2 under 1GB: a check that it runs;
its numbers mean nothing.)
"""
import argparse
import json
import os
import sys
import tempfile

from rank_runs import run, train

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def per_rank(out):
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    return report, report["memory"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--seq", type=int, default=8192)
    parser.add_argument("--work", default=None)
    parser.add_argument("--smoke", action="store_true",
                        help="small sizes: checks that it runs")
    args = parser.parse_args()
    work = os.path.abspath(args.work or tempfile.mkdtemp(prefix="zbc-zero-"))
    os.makedirs(work, exist_ok=True)
    bin_ = os.path.join(args.build, "bin")
    zbc = os.path.join(bin_, "zbc")

    # 1. Bytes per parameter, measured on the ranks.
    model = os.path.join(work, "llama.mlir")
    with open(model, "w") as f:
        f.write(run([os.path.join(bin_, "zbc-dsl-llama"), "--layers", "2",
                     "--bf16"]).stdout)
    print("| data parallel D | --zero | bytes per parameter per rank "
          "| Megatron's | largest peak (bytes) "
          "| measured peak = predicted on every process |")
    print("|---|---|---|---|---|---|")
    runs = [(1, "0")] + [(d, z) for d in ([2] if args.smoke else [2, 4])
                         for z in ("1", "2")]
    for d, zero in runs:
        out = os.path.join(work, f"d{d}-zero{zero}")
        run([zbc, "compile", model, "--ranks", "2", "--data-parallel",
             str(d), "--microbatches", str(2 * d), "--schedule", "zb-h1",
             "--optimizer", "adamw", "--zero", zero, "-o", out])
        report, ranks = per_rank(out)
        equal = all(rep["measured_peak_bytes"] == rep["predicted_peak_bytes"]
                    for rep in train(out, 1, os.path.join(out, "run")))
        if not equal:
            sys.exit(f"D = {d}: a process's measured peak is not the "
                     f"predicted one")
        each = [round(r["parameter_bytes"] / r["parameters"], 3) for r in ranks]
        expected = {"0": 18, "1": 6 + 12 / d, "2": 2 + 12 / d}[zero]
        peak = max(r["peak_bytes"] for r in ranks)
        print(f"| {d} | {zero} | {each} | {expected:g} | {peak} | yes |")

    # 2. The 8B shape under an 80 GB limit.
    shape = (["--hidden", "256", "--intermediate", "512", "--layers", "2",
              "--heads", "4", "--kv-heads", "2", "--vocab", "1024", "--seq",
              "64"] if args.smoke else
             ["--hidden", "4096", "--intermediate", "14336", "--layers", "32",
              "--heads", "32", "--kv-heads", "8", "--vocab", "128256",
              "--seq", str(args.seq)])
    big = os.path.join(work, "llama-8b.mlir")
    with open(big, "w") as f:
        f.write(run([os.path.join(bin_, "zbc-dsl-llama"), *shape, "--batch",
                     "1", "--bf16", "--no-cuts"]).stdout)
    p, d, m, limit = (2, 2, 8, "1GB") if args.smoke else (16, 8, 256, "80GB")
    print(f"\nLlama-3-8B shape{' (smoke: small)' if args.smoke else ''}, "
          f"sequence {args.seq if not args.smoke else 64}, pipeline {p} x "
          f"data {d}, zb-auto, {m} microbatches, AdamW, --mem-limit {limit}")
    print("| --zero | bytes per parameter (rank 0) | parameter bytes rank 0 / "
          "last | activation budget | largest peak | bubble (busiest, "
          "pipeline) | makespan (FLOPs) |")
    print("|---|---|---|---|---|---|---|")
    for zero in ("0", "1", "2"):
        out = os.path.join(work, f"8b-zero{zero}")
        run([zbc, "compile", big, "--ranks", str(p), "--data-parallel",
             str(d), "--microbatches", str(m), "--schedule", "zb-auto",
             "--optimizer", "adamw", "--zero", zero, "--mem-limit", limit,
             "-o", out])
        report, ranks = per_rank(out)
        first, last = ranks[0], ranks[-1]
        print(f"| {zero} | {first['parameter_bytes'] / first['parameters']:.2f} "
              f"| {first['parameter_bytes'] / 1e9:.2f} / "
              f"{last['parameter_bytes'] / 1e9:.2f} GB "
              f"| {report['activation_budget_bytes'] / 1e9:.2f} GB "
              f"| {max(r['peak_bytes'] for r in ranks) / 1e9:.2f} GB "
              f"| {report['predicted_bubble_rate']:.4f}, "
              f"{report['predicted_pipeline_bubble_rate']:.4f} "
              f"| {report['predicted_makespan']:.4g} |")


if __name__ == "__main__":
    main()
