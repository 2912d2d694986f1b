#!/usr/bin/env python3
"""Compares two directories of rank safetensors (zbc run --save): every F32
tensor of REF against the same one of GOT, as zbc-reference compares (the
largest absolute difference over the largest magnitude of the reference).
Pure Python (no numpy), for the GPU machine.

Usage: compare.py REF_DIR GOT_DIR [--tolerance 1e-5]
Prints one line; exits 1 if a tensor is missing or over the tolerance.
"""
import argparse
import array
import glob
import json
import os
import struct
import sys


def tensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        if t["dtype"] != "F32":
            sys.exit(f"compare.py: {path}: '{name}' is {t['dtype']}, not F32")
        begin, end = t["data_offsets"]
        out[name] = array.array("f", data[begin:end])
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("ref")
    parser.add_argument("got")
    parser.add_argument("--tolerance", type=float, default=1e-5)
    args = parser.parse_args()
    worst, worst_name, count, bad = 0.0, "", 0, []
    files = sorted(glob.glob(os.path.join(args.ref, "rank*.safetensors")))
    if not files:
        sys.exit(f"compare.py: no rank*.safetensors in {args.ref}")
    for ref_path in files:
        got_path = os.path.join(args.got, os.path.basename(ref_path))
        if not os.path.exists(got_path):
            sys.exit(f"compare.py: {got_path} is missing")
        ref, got = tensors(ref_path), tensors(got_path)
        for name, r in ref.items():
            g = got.get(name)
            if g is None or len(g) != len(r):
                sys.exit(f"compare.py: {got_path} has no '{name}' of "
                         f"{len(r)} elements")
            scale = max((abs(x) for x in r), default=0.0)
            error = max((abs(x - y) for x, y in zip(r, g)), default=0.0)
            relative = error / scale if scale > 0 else error
            count += 1
            if relative > worst:
                worst = relative
                worst_name = f"{os.path.basename(ref_path)}:{name}"
            if not relative <= args.tolerance:
                bad.append(name)
    print(f"{count} tensors, largest relative error {worst:.3e} "
          f"({worst_name}), {len(bad)} over {args.tolerance:g}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
