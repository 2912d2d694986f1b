#!/usr/bin/env python3
"""Packed fine-tuning of llama-small on licence paragraphs, against padding.

Usage: bench/packed_training.py BUILD/bin OUT_DIR [--steps N] [--smoke]

1. Every paragraph of the licence texts in /usr/share/common-licenses is a
   document of bytes ending in an end-of-document byte (1; the text holds
   none); they go into one token stream (OUT_DIR/stream.npy).
2. `zbc pack` packs them into rows of 128 bytes, 4 rows per microbatch
   (positions restart per document, -100 where the next byte is another
   document's), with a tenth of the documents held out; it prints the
   packing efficiency.
3. The same training documents, one per row and padded (each run of a
   packed row moved to a row of its own), are the baseline: the layout that
   trains the same thing without packing.
4. llama-small with a documents input (`zbc-dsl-llama` with
   examples/llama-small.mlir's flags and --packed) trains on each for the
   same number of steps on 2 ranks under ZB-H1 (AdamW, warm-up and cosine
   learning rate, clipping), evaluating the held-out documents every few
   steps (`--eval-data`): the loss per real token, the mean over every
   counted target of the held-out file (Note [Loss over real tokens]).
5. Prints the held-out curve of each, the real tokens (counted targets) per
   step and per second of each, and their ratio.

--smoke: a llama of one small layer, 2 steps each with an evaluation after
each, on two of the licences: a check that it runs and its reports parse,
as ctest's bench family runs it (its numbers mean nothing).
Standard library only; safetensors are read by hand.
"""
import argparse
import glob
import json
import os
import shutil
import struct
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
EOS, SEQ, ROWS, MICROBATCHES = 1, 128, 4, 4
LLAMA_SMALL = ["--hidden", "256", "--intermediate", "768", "--layers", "8",
               "--heads", "8", "--kv-heads", "4", "--seq", str(SEQ),
               "--max-positions", str(SEQ), "--batch", str(ROWS), "--no-cuts"]


LLAMA_SMOKE = ["--hidden", "32", "--intermediate", "64", "--layers", "2",
               "--heads", "2", "--kv-heads", "1", "--seq", str(SEQ),
               "--max-positions", str(SEQ), "--batch", str(ROWS), "--no-cuts"]


def paragraphs(limit=None):
    """Every paragraph of the licence texts (the first `limit` files), as
    bytes, in a fixed order."""
    docs = []
    for path in sorted(glob.glob("/usr/share/common-licenses/*"))[:limit]:
        if os.path.isdir(path) or os.path.islink(path):
            continue
        with open(path, "rb") as f:
            text = f.read()
        for part in text.replace(b"\r", b"").split(b"\n\n"):
            part = part.strip()
            if part and b"\x00" not in part and bytes([EOS]) not in part:
                docs.append(part)
    return docs


def write_npy_u16(path, values):
    header = ("{'descr': '<u2', 'fortran_order': False, 'shape': (%d,), }"
              % len(values))
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
        f.write(header.encode())
        f.write(struct.pack("<%dH" % len(values), *values))


def read_safetensors(path):
    """{name: (shape, list of ints)} of an all-I64 file."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        count = (end - begin) // 8
        out[name] = (info["shape"],
                     list(struct.unpack("<%dq" % count, data[begin:end])))
    return out


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, (shape, values) in tensors.items():
        blob = struct.pack("<%dq" % len(values), *values)
        header[name] = {"dtype": "I64", "shape": shape,
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def padded_from_packed(packed):
    """Each document run of the packed rows in a row of its own, padded with
    zeros (its own padding document, targets -100), grouped ROWS per sample;
    the last sample is filled with the first rows again."""
    tokens = packed["input.tokens"][1]
    positions = packed["input.positions"][1]
    documents = packed["input.documents"][1]
    targets = packed["label.targets"][1]
    rows = []
    for r in range(len(tokens) // SEQ):
        at = r * SEQ
        start = 0
        for i in range(1, SEQ + 1):
            if i < SEQ and documents[at + i] == documents[at + i - 1]:
                continue
            run = range(at + start, at + i)
            if any(tokens[j] for j in run):  # not the padding run
                pad = SEQ - len(run)
                rows.append(([tokens[j] for j in run] + [0] * pad,
                             [positions[j] for j in run] + list(range(pad)),
                             [0] * len(run) + [1] * pad,
                             [targets[j] for j in run] + [-100] * pad))
            start = i
    while len(rows) % ROWS:
        rows.append(rows[len(rows) % ROWS])
    n = len(rows) // ROWS
    shape = [n, ROWS, SEQ]
    return {key: (shape, [v for row in rows for v in row[k]])
            for k, key in enumerate(["input.tokens", "input.positions",
                                     "input.documents", "label.targets"])}


def counted_per_step(data, steps):
    """The counted targets of each step's MICROBATCHES samples (the order
    zbc run reads them: step s reads samples s*M .. s*M+M-1, wrapped)."""
    shape, targets = data["label.targets"]
    per_sample = shape[1] * shape[2]
    counts = [sum(t != -100 for t in targets[i * per_sample:(i + 1) * per_sample])
              for i in range(shape[0])]
    return [sum(counts[(s * MICROBATCHES + j) % shape[0]]
                for j in range(MICROBATCHES)) for s in range(steps)]


def train(zbc, model, data, heldout, out, steps, every):
    shutil.rmtree(out, ignore_errors=True)
    cmd = [zbc, "run", model, "--ranks", "2", "--microbatches",
           str(MICROBATCHES), "--schedule", "zb-h1", "--optimizer", "adamw",
           "--data", data, "--eval-data", heldout, "--eval-every", str(every),
           "--steps", str(steps), "--lr", "1e-3", "--warmup",
           str(min(10, steps - 1)), "--decay-steps", str(steps), "--clip-norm", "1",
           "-o", out]
    print("$ " + " ".join(cmd), flush=True)
    result = subprocess.run(cmd, text=True, capture_output=True)
    if result.returncode:
        sys.exit(result.stdout + result.stderr)
    with open(os.path.join(out, "run", "rank1.json")) as f:
        return json.load(f)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bin")
    parser.add_argument("out")
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--smoke", action="store_true",
                        help="2 steps each: a check that it runs")
    args = parser.parse_args()
    every = 15
    if args.smoke:
        args.steps, every = 2, 1
    zbc = os.path.join(args.bin, "zbc")
    os.makedirs(args.out, exist_ok=True)

    docs = paragraphs(2 if args.smoke else None)
    stream = [b for d in docs for b in list(d) + [EOS]]
    write_npy_u16(os.path.join(args.out, "stream.npy"), stream)
    train_path = os.path.join(args.out, "train.safetensors")
    heldout_path = os.path.join(args.out, "train.heldout.safetensors")
    cmd = [zbc, "pack", os.path.join(args.out, "stream.npy"), "--eos",
           str(EOS), "--vocab", "256", "--seq-len", str(SEQ),
           "--microbatch-size", str(ROWS), "--held-out", "0.1", "--seed", "1",
           "-o", train_path]
    print("$ " + " ".join(cmd), flush=True)
    print(subprocess.run(cmd, check=True, text=True,
                         capture_output=True).stdout, flush=True)
    packed = read_safetensors(train_path)
    padded = padded_from_packed(packed)
    padded_path = os.path.join(args.out, "padded.safetensors")
    write_safetensors(padded_path, padded)

    model = os.path.join(args.out, "llama-small-packed.mlir")
    subprocess.run([os.path.join(args.bin, "zbc-dsl-llama"),
                    *(LLAMA_SMOKE if args.smoke else LLAMA_SMALL), "--packed",
                    "-o", model], check=True)

    results = {}
    for name, path, data in (("packed", train_path, packed),
                             ("padded", padded_path, padded)):
        report = train(zbc, model, path, heldout_path,
                       os.path.join(args.out, name), args.steps, every)
        seconds = report["profile"]["step_seconds"]
        real = sum(counted_per_step(data, args.steps))
        results[name] = (report, real, seconds)
        samples = data["label.targets"][0][0]
        print(f"{name}: {samples} samples, {real / args.steps:.0f} real "
              f"tokens per step, {seconds / args.steps:.3f} s per step, "
              f"{real / seconds:.0f} real tokens/s")
        print("  held-out loss per real token after step: " +
              ", ".join(f"{s}: {l:.3f}" for s, l in report["evals"]))
    packed_rate = results["packed"][1] / results["packed"][2]
    padded_rate = results["padded"][1] / results["padded"][2]
    print(f"packed / padded real tokens per second: {packed_rate / padded_rate:.2f}")


if __name__ == "__main__":
    main()
