#!/usr/bin/env python3
"""How long zbc compile takes for p = 8, m = 64, and how much C++ it writes.

Generates an 8-block GPT at zbc-dsl-gpt's default sizes, runs zbc compile
--ranks 8 --microbatches 64 --schedule zb-h1 several times and prints, from
each run's DIR/report.json, the seconds of the passes (split, schedule, p2p,
proof, memory plan), code generation (EmitC and printing) and the host
compiler (mpicxx -O2 of every rank, zbc runs two at a time), with the
median, then the sizes of the generated DIR/src/rank*.cpp. To show where
the host compiler's time goes it also re-runs rank 1's build command from
DIR/build.log once, split into compiling (-c) and linking.

Usage: bench/compile_time.py [--runs 3] [--build build] [--work DIR] [--smoke]
(--smoke: --runs 1, a check that it runs and the reports parse, as ctest's
bench family runs it.)
"""
import argparse
import glob
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PHASES = ("passes", "codegen", "host_compile")


def timed(command):
    begin = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - begin


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--work", default=None)
    parser.add_argument("--smoke", action="store_true",
                        help="one run: checks that it runs")
    args = parser.parse_args()
    if args.smoke:
        args.runs = 1
    work = os.path.abspath(args.work or tempfile.mkdtemp(prefix="zbc-compile-"))
    os.makedirs(work, exist_ok=True)
    binary = lambda name: os.path.join(args.build, "bin", name)
    model = os.path.join(work, "gpt8.mlir")
    subprocess.run([binary("zbc-dsl-gpt"), "--layers", "8", "-o", model],
                   check=True)

    runs = []
    for run in range(args.runs):
        out = os.path.join(work, f"out{run}")
        wall = timed([binary("zbc"), "compile", model, "--ranks", "8",
                      "--microbatches", "64", "--schedule", "zb-h1", "-o",
                      out])
        with open(os.path.join(out, "report.json")) as f:
            seconds = json.load(f)["seconds"]
        runs.append({**seconds, "wall": wall})

    print("GPT 8 blocks (zbc-dsl-gpt --layers 8), zbc compile --ranks 8 "
          "--microbatches 64 --schedule zb-h1\n")
    cols = PHASES + ("wall",)
    print("| run | " + " | ".join(c + " s" for c in cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for i, r in enumerate(runs):
        print(f"| {i + 1} | " + " | ".join(f"{r[c]:.3f}" for c in cols) + " |")
    print("| median | " + " | ".join(
        f"{statistics.median(r[c] for r in runs):.3f}" for c in cols) + " |")

    print("\n| file | bytes | lines |\n|---|---|---|")
    total_bytes = total_lines = 0
    sources = sorted(glob.glob(os.path.join(out, "src", "rank*.cpp")),
                     key=lambda p: int(os.path.basename(p)[4:-4]))
    for path in sources:
        with open(path, "rb") as f:
            data = f.read()
        lines = data.count(b"\n")
        total_bytes += len(data)
        total_lines += lines
        print(f"| src/{os.path.basename(path)} | {len(data)} | {lines} |")
    print(f"| total | {total_bytes} | {total_lines} |")

    # Rank 1's build command, once more: compile only, then link only.
    with open(os.path.join(out, "build.log")) as f:
        command = next(shlex.split(l[2:]) for l in f
                       if l.startswith("$ ") and "rank1.cpp" in l)
    source = next(a for a in command if a.endswith("rank1.cpp"))
    obj = os.path.join(work, "rank1.o")
    compile_only = [a for a in command if not a.endswith(".a")
                    and not a.startswith("-l")]
    compile_only[compile_only.index("-o") + 1] = obj
    compile_s = timed(compile_only + ["-c"])
    link = [a if a != source else obj for a in command]
    link_s = timed(link)
    print(f"\nrank 1 alone: compile (-c) {compile_s:.2f} s, link "
          f"{link_s:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
