#!/usr/bin/env python3
"""Writes a Hugging Face checkpoint for a zb model, for the tests of --init.

  hf-checkpoint.py MODEL.mlir OUT [--drop NAME] [--shape NAME=AxB]
                   [--dtype NAME=I64] [--extra NAME]

Reads every `zb.param "NAME" ... : tensor<AxBxf32>` of MODEL.mlir and writes
OUT/model.safetensors (OUT a directory, made) or OUT itself (when it ends in
.safetensors) holding each parameter as F32 zeros of its shape, then
applies the edits: a tensor left out, given another shape or dtype, or one
more the model lacks. Standard library only.
"""

import argparse
import json
import os
import re
import struct

DTYPE_BYTES = {"F32": 4, "BF16": 2, "F16": 2, "I64": 8, "I32": 4}


def params(model):
    found = {}
    with open(model) as f:
        for m in re.finditer(r'zb\.param "([^"]+)"[^\n]*: tensor<([0-9x]+)x[a-z]+[0-9]*>',
                             f.read()):
            found.setdefault(m.group(1), [int(d) for d in m.group(2).split("x")])
    return found


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("out")
    p.add_argument("--drop", action="append", default=[])
    p.add_argument("--shape", action="append", default=[])
    p.add_argument("--dtype", action="append", default=[])
    p.add_argument("--extra", action="append", default=[])
    a = p.parse_args()
    tensors = {name: [shape, "F32"] for name, shape in params(a.model).items()}
    for name in a.drop:
        del tensors[name]
    for edit in a.shape:
        name, shape = edit.split("=")
        tensors[name][0] = [int(d) for d in shape.split("x")]
    for edit in a.dtype:
        name, dtype = edit.split("=")
        tensors[name][1] = dtype
    for name in a.extra:
        tensors[name] = [[2], "F32"]
    header, offset = {}, 0
    for name, (shape, dtype) in sorted(tensors.items()):
        size = DTYPE_BYTES[dtype]
        for d in shape:
            size *= d
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    path = a.out
    if not path.endswith(".safetensors"):
        os.makedirs(path, exist_ok=True)
        path = os.path.join(path, "model.safetensors")
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + bytes(offset))


if __name__ == "__main__":
    main()
