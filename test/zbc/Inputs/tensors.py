#!/usr/bin/env python3
"""Small safetensors and .npy files by hand, for the tests of zbc pack and
of packed data. Standard library only.

  tensors.py dump FILE.safetensors
      every tensor (sorted by name): "NAME DTYPE [shape]", then one line per
      row (every dimension but the last), "  [i, j]: v v v ..."
  tensors.py write OUT.safetensors NAME=AxBxC:v,v,v ... [--dtype I64|I32]
      each tensor of integers, row-major
  tensors.py npy OUT.npy DESCR v v v ...
      a 1-D array of DESCR ('<i8', '<u2', '<f4', ...)
"""

import itertools
import json
import struct
import sys

FORMATS = {"I64": "q", "I32": "i", "F32": "f", "BF16": "H"}
NPY = {"<i8": "q", "<i4": "i", "<u2": "H", "<u4": "I", "<f4": "f", "<u8": "Q"}


def dump(path):
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    header.pop("__metadata__", None)
    body = data[8 + length:]
    for name in sorted(header):
        t = header[name]
        shape, dtype = t["shape"], t["dtype"]
        begin, end = t["data_offsets"]
        code = FORMATS[dtype]
        values = struct.unpack("<%d%s" % ((end - begin) // struct.calcsize(code), code),
                               body[begin:end])
        print("%s %s [%s]" % (name, dtype, ", ".join(map(str, shape))))
        if not shape:
            print("  []: %s" % values[0])
            continue
        width = shape[-1]
        for row, index in enumerate(itertools.product(*[range(d) for d in shape[:-1]])):
            cells = values[row * width:(row + 1) * width]
            print("  [%s]: %s" % (", ".join(map(str, index)), " ".join(map(str, cells))))


def write(path, specs, dtype):
    header, body = {}, b""
    for spec in specs:
        name, rest = spec.split("=", 1)
        shape, values = rest.split(":", 1)
        dims = [int(d) for d in shape.split("x")]
        numbers = [int(v) for v in values.split(",")] if values else []
        count = 1
        for d in dims:
            count *= d
        assert count == len(numbers), f"{name}: {len(numbers)} values for {dims}"
        raw = struct.pack("<%d%s" % (count, FORMATS[dtype]), *numbers)
        header[name] = {"dtype": dtype, "shape": dims,
                        "data_offsets": [len(body), len(body) + len(raw)]}
        body += raw
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + body)


def npy(path, descr, values):
    code = NPY[descr]
    numbers = [float(v) if code == "f" else int(v) for v in values]
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }" % (descr, len(numbers))
    header += " " * (-(len(header) + 11) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (len(numbers), code), *numbers))


def main():
    command, args = sys.argv[1], sys.argv[2:]
    if command == "dump":
        dump(args[0])
    elif command == "write":
        dtype = "I64"
        if "--dtype" in args:
            at = args.index("--dtype")
            dtype = args[at + 1]
            del args[at:at + 2]
        write(args[0], args[1:], dtype)
    elif command == "npy":
        npy(args[0], args[1], args[2:])
    else:
        sys.exit("usage: tensors.py dump|write|npy ...")


if __name__ == "__main__":
    main()
