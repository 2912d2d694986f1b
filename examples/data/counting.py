#!/usr/bin/env python3
"""Writes a training set for the example GPT (examples/gpt.mlir): counting.

Usage: counting.py OUT.safetensors [SAMPLES]

Each sample is one microbatch: tokens [2, 32] of counting sequences (each
token is the previous one plus 1, mod the vocabulary of 256), positions
0..31, and as targets the next tokens: a rule the model learns in a few
dozen steps. The file is what `zbc run --data` and the rank executables'
`--data` read: safetensors (a JSON header, then raw little-endian data),
one tensor per data key of the model, each [N, *shape of one microbatch];
microbatch j of step s reads sample (s * m + j) mod N. Standard library only.
"""
import json
import struct
import sys


def write_safetensors(path, tensors):
    """tensors: name -> (dtype, shape, list of ints); I64 only here."""
    header, blobs, offset = {}, [], 0
    for name, (dtype, shape, values) in tensors.items():
        blob = struct.pack(f"<{len(values)}q", *values)
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def learnable_data(path, samples=16, batch=2, seq=32, vocab=256):
    """Counting sequences: each next token is the current one plus 1 (mod
    vocab), a rule the example GPT can learn (targets are the next tokens)."""
    tokens, positions, targets = [], [], []
    for n in range(samples):
        for b in range(batch):
            start = (n * 37 + b * 101) % vocab
            row = [(start + t) % vocab for t in range(seq)]
            tokens += row
            positions += list(range(seq))
            targets += [(x + 1) % vocab for x in row]
    shape = [samples, batch, seq]
    write_safetensors(path, {"input.tokens": ("I64", shape, tokens),
                             "input.positions": ("I64", shape, positions),
                             "label.targets": ("I64", shape, targets)})


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    learnable_data(sys.argv[1], *(int(a) for a in sys.argv[2:]))
