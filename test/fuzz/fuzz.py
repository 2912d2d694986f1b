#!/usr/bin/env python3
"""A seeded mutation fuzzer for zbc's command-line tools (standard library only).

Each test case is one execution of a built tool on a mutated input:

  mlir-check     zbc check FILE.mlir
  mlir-opt       zbc-opt FILE.mlir
  mlir-schedule  zbc-opt FILE.mlir --zb-backward --zb-schedule="schedule=zb-h1 microbatches=4"
  mlir-split     zbc split FILE.mlir
  cost           zbc schedule --cost-file FILE.json [--schedule NAME]
  csv            zbc schedule --import FILE.csv --ranks P --microbatches M [--virtual V] [--placement K]
  args           zbc schedule OPTIONS...   (the option values themselves are mutated)
  data           zbc inspect FILE.safetensors [--model examples/mlp.mlir]
                 (a data file's header, tensors and samples, read as the ranks read them)
  manifest       zbc inspect FILE.json      (a checkpoint manifest: its checksum and fields)
  tokens         zbc inspect FILE.npy [--model examples/gpt.mlir]
                 (a token stream: its .npy header, length and ids)

Seeds: examples/*.mlir and every .mlir under test/ (split at `// -----`, comment
lines dropped), test/zbc/Inputs/*.json, and
test/fuzz/corpus/{mlir,cost,csv,args,data,manifest,tokens}/.
A CSV seed's name carries its problem: `NAME__p4_m8[_v2][_placement-v].csv`.

An execution FAILS when it
  * dies by a signal (negative return code, or 128+N), or aborts (rc 134);
  * prints "LLVM ERROR", "PLEASE submit a bug report", "Stack dump" or a
    sanitizer report (AddressSanitizer, UndefinedBehaviorSanitizer's
    "runtime error:", LeakSanitizer);
  * runs past --timeout seconds (except an `--exact X` run with X >= timeout/2,
    which was asked to search that long);
  * exits with a code other than 0 and 1;
  * exits 0 having printed "error:" to stderr;
  * exits 1 without printing any line with "error" (case-insensitive) on
    stderr, unless what it printed is llvm::cl's own message for a bad
    option value (it names the option; the parser prints it, not zbc).
Warnings with exit 0 are fine.

Modes:
  fuzz.py [--seconds 60] [--seed N] [--iterations N]   mutate and run until the
      time budget (or the iteration count) is spent; exit 1 if anything failed.
      Test case i depends only on (seed, i): a given seed and iteration count
      always run the same inputs, whatever --jobs is.
  fuzz.py --replay   run every corpus file and every committed reproducer in
      test/fuzz/crashes/ once, same criteria (the regression test).

Reproducers (written to --crash-dir, and the format of test/fuzz/crashes/):
  NAME.cmd    comment lines (#) with the failure, then one line: the command,
              shell-quoted, with the tool name first (zbc or zbc-opt, looked up
              in --bin), @INPUT@ where the input file goes and @EXAMPLES@ for
              the source tree's examples/;
  NAME.EXT    the input (absent for `args` cases, whose command is all).
Replay one by hand: sed -n '/^[^#]/p' NAME.cmd, substitute @INPUT@ and build/bin/.

Known failures (--known FILE): one Python regex per line (# comments); a failure
whose summary line matches is reported as KNOWN and does not fail the run. Used
while a found bug is being fixed; delete the line with the fix.
"""

import argparse
import concurrent.futures
import hashlib
import json
import math
import os
import random
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

SCRIPT_DIR = Path(__file__).resolve().parent
SOURCE_ROOT = SCRIPT_DIR.parent.parent
INPUT = "@INPUT@"
EXAMPLES = "@EXAMPLES@"

#===----------------------------------------------------------------------===#
# Dictionaries
#===----------------------------------------------------------------------===#

INTERESTING_NUMBERS = [
    "0", "-1", "1", "2", "3", "4", "7", "8", "16", "255", "256", "65536",
    "100000", "1000000", "2147483647", "2147483648", "-2147483648",
    "-2147483649", "4294967295", "4294967296", "4294967300",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808",
    "18446744073709551616", "99999999999999999999999", "1e308", "-1e308",
    "1e309", "1e-308", "5e-324", "nan", "-nan", "inf", "-inf", "NaN",
    "Infinity", "4.5", "0.5", "-0.0", "-0", "1e3", "0x10", "010", "+1",
]
INTERESTING_STRINGS = [
    '""', '"4"', '"x"', "[]", "{}", "null", "true", "false", '"\\u0000"',
    '"' + "a" * 1000 + '"',
]
ELEMENT_TYPES = [
    "index", "complex<f32>", "complex<f64>", "vector<4xf32>", "!zb.token",
    "i1", "i0", "i8", "i16", "i32", "i64", "i128", "si32", "ui8",
    "i16777215", "f8E4M3FN", "f8E5M2", "f4E2M1FN", "f16", "bf16", "tf32",
    "f32", "f64", "f80", "f128", "none", "tensor<2xf32>", "memref<4xf32>",
    "tuple<f32>", "!zb.foo", "opaque<\"x\">",
]
TENSOR_TYPES = [
    "tensor<1099511627776x1048576xf32>", "tensor<9223372036854775807xf32>",
    "tensor<4294967296x4294967296xf32>", "tensor<2147483648xf32>",
    "tensor<0xf32>", "tensor<0x0xf32>", "tensor<?xf32>", "tensor<?x?xf32>",
    "tensor<*xf32>", "tensor<f32>", "tensor<i64>", "tensor<1xf32>",
    "tensor<" + "1x" * 40 + "f32>", "tensor<4xindex>", "tensor<2x3xindex>",
    "tensor<4xcomplex<f32>>", "tensor<4x!zb.token>", "tensor<2x3xi1>",
    "tensor<8x16xf8E4M3FN>", "tensor<8x16xvector<4xf32>>",
    "tensor<8x16xf32, #x>", "tensor<8x16xf64>", "tensor<8x16xbf16>",
    "memref<8x16xf32>", "vector<8x16xf32>", "!zb.token", "index",
]
STRING_LITERALS = [
    '""', '"x"', '"F.0"', '"F.1"', '"in.0"', '"out.0"', '"d_in.0"',
    '"d_out.0"', '"grad.w0"', '"param.w0"', '"input.x"', '"label.y"',
    '"loss"', '"B.0"', '"W.0"', '"\\00"', '"\\ff"', '"in.-1"',
    '"out.99999999999"', '"' + "n" * 5000 + '"',
]
MLIR_TOKENS = [
    "F", "B", "W", "BW", "act", "grad", "stage", "mb", "to", "from", "after",
    "zb.model", "zb.pipeline", "zb.stage", "zb.phase", "zb.yield",
    "zb.program", "zb.rank", "zb.compute", "zb.send", "zb.recv", "zb.cut",
    "zb.input", "zb.label", "zb.param", "zb.loss", "zb.linear", "zb.relu",
    "zb.add", "zb.fill", "zb.cross_entropy", "builtin.module", "func.func",
    "init", "normal", "uniform", "zeros", "ones", "heads", "microbatches",
    "placement", "{", "}", "(", ")", "<", ">", "[", "]", ":", ",", "=", "->",
    "%x", "%0", "^bb0", "@m", "#zb", "!zb.token", "\"", "\n", "//", "loc(\"x\":1:1)",
]
DEEP_NESTING = [
    "[" * 100000, "[" * 100000 + "]" * 100000, "{" * 100000,
    '{"F":' * 50000, "(" * 100000, "<" * 100000, "tensor<" * 20000,
    "zb.model @m {\n" * 5000, '"builtin.module"() ({\n' * 5000,
    "complex<" * 20000 + "f32" + ">" * 20000,
]
SCHEDULE_NAMES = [
    "1f1b", "gpipe", "interleaved-1f1b", "zb-h1", "zb-h2", "zb-auto", "zb-v",
    "v-half", "v-min", "dualpipe-v",
]
CSV_KINDS = [
    "F", "I", "W", "B", "BW", "X", "f", "i", "SEND_F", "RECV_F", "SEND_B",
    "RECV_B", "UNSHARD", "RESHARD", "REDUCE_GRAD", "OVERLAP_F_B", "_", "",
]
COST_KEYS = ["ranks", "microbatches", "virtual", "comm", "activation_budget",
             "F", "B", "W", "M_B", "M_W"]
INTERESTING_BYTES = "\x00\xff\x7f\x80\n\r\t \"'\\{}[]()<>%@#!,;:=-.0123456789xe"

#===----------------------------------------------------------------------===#
# Seeds
#===----------------------------------------------------------------------===#

COMMENT_LINE = re.compile(r"^\s*//.*\n?", re.M)


def read_text(path):
    return Path(path).read_bytes().decode("latin-1")


def mlir_chunks(path):
    """The file split at `// -----`, comment lines dropped, blank chunks skipped."""
    out = []
    for i, chunk in enumerate(re.split(r"^// -----.*$", read_text(path), flags=re.M)):
        text = COMMENT_LINE.sub("", chunk).strip("\n")
        if text.strip():
            out.append((f"{path.relative_to(SOURCE_ROOT)}#{i}", text + "\n"))
    return out


CSV_NAME = re.compile(r"__(?P<spec>[A-Za-z0-9_-]+)\.csv$")


def csv_problem(name):
    """(ranks, microbatches, virtual, placement) from NAME__p4_m8_v2_placement-v.csv."""
    p, m, v, placement = 2, 2, 1, None
    match = CSV_NAME.search(name)
    if match:
        for part in match.group("spec").split("_"):
            if part.startswith("placement-"):
                placement = part[len("placement-"):]
            elif part[:1] in "pmv" and part[1:].isdigit():
                value = int(part[1:])
                if part[0] == "p":
                    p = value
                elif part[0] == "m":
                    m = value
                else:
                    v = value
    return p, m, v, placement


class Seeds:
    def __init__(self, root, corpus):
        self.mlir, self.cost, self.csv, self.args = [], [], [], []
        self.data, self.manifest, self.tokens = [], [], []
        files = sorted((root / "examples").glob("*.mlir"))
        files += sorted(p for p in (root / "test").rglob("*.mlir")
                        if "fuzz" not in p.relative_to(root / "test").parts[:1])
        files += sorted((corpus / "mlir").glob("*.mlir"))
        for path in files:
            self.mlir += mlir_chunks(path)
        for path in sorted((root / "test" / "zbc" / "Inputs").glob("*.json")) + \
                sorted((corpus / "cost").glob("*.json")):
            self.cost.append((str(path.relative_to(root)), read_text(path)))
        for path in sorted((corpus / "csv").glob("*.csv")):
            self.csv.append((str(path.relative_to(root)), read_text(path),
                             csv_problem(path.name)))
        for path in sorted((corpus / "data").glob("*.safetensors")):
            self.data.append((str(path.relative_to(root)), read_text(path)))
        for path in sorted((corpus / "tokens").glob("*.npy")):
            self.tokens.append((str(path.relative_to(root)), read_text(path)))
        for path in sorted((corpus / "manifest").glob("*.json")):
            self.manifest.append((str(path.relative_to(root)), read_text(path)))
        for path in sorted((corpus / "args").glob("*.args")):
            self.args.append((str(path.relative_to(root)),
                              shlex.split(read_text(path))))
        # Words of the seeds, for token substitution and insertion.
        words = set()
        for _, text in self.mlir:
            words.update(re.findall(r"[%@^#!]?[A-Za-z_][\w.$-]*", text))
        self.mlir_words = sorted(words)

#===----------------------------------------------------------------------===#
# Mutations (text is a str whose characters are bytes: latin-1)
#===----------------------------------------------------------------------===#

NUMBER = re.compile(r"-?\b\d+(?:\.\d+)?(?:[eE][-+]?\d+)?\b")
WORD = re.compile(r"[%@^#!]?[A-Za-z_][\w.$-]*")
STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
ELEMENT = re.compile(r"\b(?:f16|bf16|f32|f64|i1|i8|i32|i64|index)\b")
TENSOR = re.compile(r"tensor<[^<>]*>")
DIM = re.compile(r"(?<=[<x])\d+(?=x)")
MAX_LEN = 1 << 20


def pos(rng, text):
    return rng.randint(0, len(text))


def m_flip_bit(rng, text, ctx):
    if not text:
        return chr(rng.randrange(256))
    i = rng.randrange(len(text))
    return text[:i] + chr(ord(text[i]) ^ (1 << rng.randrange(8))) + text[i + 1:]


def m_set_byte(rng, text, ctx):
    if not text:
        return rng.choice(INTERESTING_BYTES)
    i = rng.randrange(len(text))
    c = rng.choice(INTERESTING_BYTES) if rng.random() < 0.7 else chr(rng.randrange(256))
    return text[:i] + c + text[i + 1:]


def m_insert_bytes(rng, text, ctx):
    i = pos(rng, text)
    chunk = "".join(rng.choice(INTERESTING_BYTES) if rng.random() < 0.7
                    else chr(rng.randrange(256)) for _ in range(rng.randint(1, 8)))
    return text[:i] + chunk + text[i:]


def m_delete_range(rng, text, ctx):
    if not text:
        return text
    i = rng.randrange(len(text))
    n = rng.randint(1, min(len(text) - i, rng.choice([1, 4, 16, 64, 512])))
    return text[:i] + text[i + n:]


def m_duplicate_range(rng, text, ctx):
    if not text:
        return text
    i = rng.randrange(len(text))
    n = rng.randint(1, min(len(text) - i, 256))
    times = rng.choice([1, 1, 2, 16, 1000])
    return text[:i] + text[i:i + n] * (times + 1) + text[i + n:]


def lines_of(text):
    return text.splitlines(keepends=True) or [""]


def m_line_duplicate(rng, text, ctx):
    lines = lines_of(text)
    i = rng.randrange(len(lines))
    lines[i:i] = [lines[i]] * rng.choice([1, 1, 2, 100])
    return "".join(lines)


def m_line_delete(rng, text, ctx):
    lines = lines_of(text)
    i = rng.randrange(len(lines))
    del lines[i:i + rng.choice([1, 1, 1, 2, 5])]
    return "".join(lines)


def m_line_swap(rng, text, ctx):
    lines = lines_of(text)
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return "".join(lines)


def m_line_move(rng, text, ctx):
    lines = lines_of(text)
    line = lines.pop(rng.randrange(len(lines)))
    lines.insert(rng.randint(0, len(lines)), line)
    return "".join(lines)


def m_splice(rng, text, ctx):
    other = rng.choice(ctx["others"])
    if rng.random() < 0.5:
        a, b = lines_of(text), lines_of(other)
        i, j = rng.randint(0, len(a)), rng.randint(0, len(b))
        if rng.random() < 0.5:
            return "".join(a[:i] + b[j:])
        return "".join(a[:i] + b[j:j + rng.randint(1, 10)] + a[i:])
    return text[:pos(rng, text)] + other[pos(rng, other):]


def replace_match(rng, text, regex, values):
    matches = list(regex.finditer(text))
    if not matches:
        return None
    match = rng.choice(matches)
    value = rng.choice(values) if isinstance(values, list) else values(rng)
    return text[:match.start()] + value + text[match.end():]


def m_number(rng, text, ctx):
    return replace_match(rng, text, NUMBER, INTERESTING_NUMBERS + INTERESTING_STRINGS[:5])


def m_token(rng, text, ctx):
    return replace_match(rng, text, WORD, ctx["words"])


def m_insert_token(rng, text, ctx):
    i = pos(rng, text)
    token = rng.choice(ctx["words"] + INTERESTING_NUMBERS)
    return text[:i] + " " + token + " " + text[i:]


def m_deep(rng, text, ctx):
    i = pos(rng, text)
    return text[:i] + rng.choice(DEEP_NESTING) + text[i:]


def m_mlir_element(rng, text, ctx):
    return replace_match(rng, text, ELEMENT, ELEMENT_TYPES)


def m_mlir_tensor(rng, text, ctx):
    return replace_match(rng, text, TENSOR, TENSOR_TYPES)


def m_mlir_dim(rng, text, ctx):
    return replace_match(rng, text, DIM, ["0", "1", "2147483648", "4294967296",
                                          "1099511627776", "9223372036854775807",
                                          "-1", "?", "99999999999999999999"])


def m_mlir_string(rng, text, ctx):
    return replace_match(rng, text, STRING, STRING_LITERALS)


def m_mlir_all_types(rng, text, ctx):
    """Every element type at once: keeps the IR consistent, so the verifier
    gets past shape checks to the type-dependent code."""
    new = rng.choice(ELEMENT_TYPES[:20])
    return ELEMENT.sub(lambda m: new if rng.random() < 0.8 else m.group(0), text)


DEEP_JSON = ["[" * 100000 + "]" * 100000, "[" * 100000, '{"F":' * 50000 + "1" + "}" * 50000,
             "[{" * 30000, "[" * 1000 + "1" + "]" * 1000]


def json_value(rng, depth=0):
    r = rng.random()
    if r < 0.03:
        return RawJSON(rng.choice(DEEP_JSON))
    if r < 0.5 or depth > 2:
        token = rng.choice(INTERESTING_NUMBERS + INTERESTING_STRINGS)
        try:
            return json.loads(token)
        except ValueError:
            return RawJSON(token)
    if r < 0.8:
        n = rng.choice([0, 1, 2, 3, 4, 8, 1000, 100000])
        item = json_value(rng, depth + 1) if rng.random() < 0.3 else rng.choice([1, 1.5, 0])
        return [item] * n
    return {rng.choice(COST_KEYS + ["x", ""]): json_value(rng, depth + 1)}


class RawJSON:
    """A token written into the JSON text as is (nan, 0x10, 1e309, ...)."""

    def __init__(self, token):
        self.token = token


def dump_json(value, rng):
    raw = {}

    def default(o):
        key = f"__raw{len(raw)}__"
        raw[key] = o.token
        return key

    text = json.dumps(value, default=default, indent=rng.choice([None, 1]))
    for key, token in raw.items():
        text = text.replace(f'"{key}"', token)
    return text


def m_json_struct(rng, text, ctx):
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict):
        value = {"ranks": value}
    r = rng.random()
    key = rng.choice(COST_KEYS + list(value) + ["T_F", "", "ranks "])
    if r < 0.6:
        value[key] = json_value(rng)
    elif r < 0.75 and value:
        value.pop(rng.choice(list(value)))
    elif r < 0.9:
        # A per-stage list of the right length, one wrong value.
        stages = max(1, min(int(value.get("ranks", 2) if isinstance(value.get("ranks"), int) else 2), 64))
        stages *= max(1, min(int(value.get("virtual", 1) if isinstance(value.get("virtual"), int) else 1), 4))
        items = [1.0] * stages
        items[rng.randrange(stages)] = json_value(rng, 3)
        value[rng.choice(["F", "B", "W", "M_B", "M_W"])] = items
    else:
        # Duplicate keys, which Python's dict cannot hold.
        text = dump_json(value, rng)
        return text.rstrip().rstrip("}") + f', "{key}": {rng.choice(INTERESTING_NUMBERS)}}}'
    return dump_json(value, rng)


def csv_cell(rng):
    small = [0, 0, 1, 1, 2, 3]
    stage = rng.choice(small) if rng.random() < 0.8 else rng.choice(INTERESTING_NUMBERS[:25])
    mb = rng.choice(small) if rng.random() < 0.8 else rng.choice(INTERESTING_NUMBERS[:25])
    kind = rng.choice(CSV_KINDS)
    r = rng.random()
    if r < 0.1:
        return f'"({stage}F{mb};{rng.choice(small)}B{rng.choice(small)}){rng.choice(["OVERLAP_F_B", "X", ""])}"'
    if r < 0.15:
        return rng.choice(['""', '"', '" "', "()", "(;)OVERLAP_F_B", "(", " ", "0F", "F0", "00"])
    return f"{stage}{kind}{mb}"


def m_csv_struct(rng, text, ctx):
    rows = [row.split(",") for row in text.split("\n")]
    if rows and rows[-1] == [""]:
        rows.pop()
    if not rows:
        rows = [[""]]
    row = rng.choice(rows)
    r = rng.random()
    if r < 0.35:
        row[rng.randrange(len(row))] = csv_cell(rng)
    elif r < 0.5:
        row.insert(rng.randint(0, len(row)), csv_cell(rng))
    elif r < 0.6 and len(row) > 1:
        row.pop(rng.randrange(len(row)))
    elif r < 0.75:
        other = rng.choice(rows)
        i, j = rng.randrange(len(row)), rng.randrange(len(other))
        row[i], other[j] = other[j], row[i]
    elif r < 0.8:
        row.reverse()
    elif r < 0.85:
        rows.insert(rng.randint(0, len(rows)), [] if rng.random() < 0.5 else list(row))
    elif r < 0.9 and len(rows) > 1:
        rows.remove(row)
    else:
        i = rng.randrange(len(row))
        row.insert(i, row[i])
    return "\n".join(",".join(cells) for cells in rows) + "\n"


GENERIC = [
    (m_flip_bit, 3), (m_set_byte, 3), (m_insert_bytes, 3), (m_delete_range, 3),
    (m_duplicate_range, 1), (m_line_duplicate, 2), (m_line_delete, 3),
    (m_line_swap, 2), (m_line_move, 1), (m_splice, 2), (m_number, 6),
    (m_token, 3), (m_insert_token, 2), (m_deep, 0.3),
]
def m_safetensors_header(rng, text, ctx):
    """A number of the JSON header (a shape, an offset) or its length
    prefix: the reader must check each against the file before it reads."""
    if len(text) < 8:
        return None
    if rng.random() < 0.3:
        length = rng.choice([0, 1, 7, 8, len(text), len(text) - 8, 1 << 20,
                             (1 << 63) - 1, (1 << 64) - 1])
        return length.to_bytes(8, "little").decode("latin-1") + text[8:]
    head = int.from_bytes(text[:8].encode("latin-1"), "little")
    end = min(8 + head, len(text))
    new = replace_match(rng, text[8:end], NUMBER, INTERESTING_NUMBERS)
    return None if new is None else text[:8] + new + text[end:]


MUTATORS = {
    "mlir": GENERIC + [(m_mlir_element, 6), (m_mlir_tensor, 4), (m_mlir_dim, 4),
                       (m_mlir_string, 3), (m_mlir_all_types, 2)],
    "cost": GENERIC + [(m_json_struct, 12)],
    "csv": GENERIC + [(m_csv_struct, 14)],
    "data": GENERIC + [(m_safetensors_header, 14)],
    "manifest": GENERIC,
    "tokens": GENERIC,
}


def mutate(rng, kind, text, ctx):
    table = MUTATORS[kind]
    funcs = [f for f, _ in table]
    weights = [w for _, w in table]
    for _ in range(rng.choice([1, 1, 1, 2, 2, 3, 4, 6])):
        for _ in range(5):  # a mutator may not apply (no number to replace...)
            new = rng.choices(funcs, weights)[0](rng, text, ctx)
            if new is not None:
                text = new
                break
        if len(text) > MAX_LEN:
            text = text[:MAX_LEN]
    return text

#===----------------------------------------------------------------------===#
# Option values (the `args` target, and P/M/V of `csv`)
#===----------------------------------------------------------------------===#

INT_OPTIONS = ["--ranks", "--microbatches", "--virtual"]
FLOAT_OPTIONS = ["--activation-budget", "--exact"]
# Values that llvm::cl accepts for an int (most of the draws), then values it
# rejects (out of range, not an integer): those only test its messages.
INT_VALUES = ["0", "-1", "1", "2", "3", "4", "5", "8", "16", "0x10", "010"]
BIG_INT_VALUES = ["64", "1000", "46341", "65536", "100000", "1000000", "2147483647",
                  "-2147483648"]
BAD_INT_VALUES = ["2147483648", "4294967296", "4294967300", "9223372036854775807",
                  "4.5", "", "1e3", "abc", " 4"]
FLOAT_VALUES = ["0", "-1", "0.5", "1", "2", "4.5", "1e308", "-1e308", "1e-308",
                "5e-324", "nan", "inf", "-inf", "4294967300", "9223372036854775807",
                "1e-9", "0.1"]
BAD_FLOAT_VALUES = ["", "abc", "1,5", "0x"]


def assignment_value(rng, keys):
    if rng.random() < 0.15:
        return rng.choice(["", ",", ",,,", "=", "F", "F=", "=1", "F==1", "X=1",
                           "F=1,F=2", "F=1;B=2", "f=1", "F = 1", "comm=1e308"])
    chosen = rng.sample(keys, rng.randint(1, len(keys)))
    return ",".join(f"{k}={rng.choice(FLOAT_VALUES)}" for k in chosen)


def option_value(rng, option):
    if option in INT_OPTIONS:
        r = rng.random()  # big values are slow to run: a fifth of the draws
        return rng.choice(INT_VALUES if r < 0.72 else BIG_INT_VALUES if r < 0.92 else BAD_INT_VALUES)
    if option in FLOAT_OPTIONS:
        return rng.choice(FLOAT_VALUES if rng.random() < 0.95 else BAD_FLOAT_VALUES)
    if option == "--cost":
        return assignment_value(rng, ["F", "B", "W", "comm"])
    if option == "--mem":
        return assignment_value(rng, ["B", "W"])
    if option == "--schedule":
        return rng.choice(SCHEDULE_NAMES * 3 + ["", "zb-h7", "ZB-H1", "x" * 5000])
    if option == "--format":
        return rng.choice(["table", "json", "svg", "chrome", "csv"] * 4 + ["", "xml"])
    if option == "--placement":
        return rng.choice(["linear", "interleaved", "v"] * 4 + ["", "V", "x"])
    return rng.choice(INT_VALUES)


ARG_OPTIONS = INT_OPTIONS + FLOAT_OPTIONS + ["--cost", "--mem", "--schedule", "--format"]


def parse_options(argv):
    """[(option, value or None)] from `--opt value`, `--opt=value` or `--flag`."""
    out, i = [], 0
    while i < len(argv):
        arg = argv[i]
        if "=" in arg and arg.startswith("--"):
            name, value = arg.split("=", 1)
            out.append((name, value))
        elif arg in ARG_OPTIONS + ["--placement"] and i + 1 < len(argv):
            out.append((arg, argv[i + 1]))
            i += 1
        else:
            out.append((arg, None))
        i += 1
    return out


def format_options(rng, options):
    argv = []
    for name, value in options:
        if value is None:
            argv.append(name)
        elif rng.random() < 0.7 or value == "" or value.startswith("-"):
            argv.append(f"{name}={value}")
        else:
            argv += [name, value]
    return argv


def mutate_options(rng, options, pool):
    options = list(options)
    for _ in range(rng.choice([1, 1, 2, 3])):
        r = rng.random()
        if r < 0.55 and options:
            i = rng.randrange(len(options))
            name = options[i][0]
            options[i] = (name, option_value(rng, name))
        elif r < 0.8:
            name = rng.choice(pool)
            options.insert(rng.randint(0, len(options)), (name, option_value(rng, name)))
        elif r < 0.9 and options:
            options.pop(rng.randrange(len(options)))
        elif options:
            options.append(rng.choice(options))  # an option given twice
    return options

#===----------------------------------------------------------------------===#
# Test cases
#===----------------------------------------------------------------------===#

MLIR_TARGETS = {
    "mlir-check": ["zbc", "check", INPUT],
    "mlir-opt": ["zbc-opt", INPUT],
    "mlir-schedule": ["zbc-opt", INPUT, "--zb-backward",
                      "--zb-schedule=schedule=zb-h1 microbatches=4"],
    "mlir-split": ["zbc", "split", INPUT],
    "mlir-verify": ["zbc", "verify", INPUT],
}
TARGET_WEIGHTS = [("mlir", 46), ("cost", 16), ("csv", 15), ("args", 13),
                  ("data", 6), ("manifest", 4), ("tokens", 4)]


def data_argv(rng=None):
    """`zbc inspect` of a data file, against the MLP example's keys or alone."""
    argv = ["zbc", "inspect", INPUT]
    if rng is None or rng.random() < 0.7:
        argv += ["--model", EXAMPLES + "/mlp.mlir"]
    return argv


def tokens_argv(rng=None):
    """`zbc inspect` of a token stream, against the GPT example or alone."""
    argv = ["zbc", "inspect", INPUT]
    if rng is None or rng.random() < 0.7:
        argv += ["--model", EXAMPLES + "/gpt.mlir"]
    return argv


class Case:
    def __init__(self, target, argv, data=None, suffix="", origin=""):
        self.target = target      # e.g. "mlir-check"
        self.argv = argv          # tool first, INPUT where the file goes
        self.data = data          # input text (latin-1 str) or None
        self.suffix = suffix      # ".mlir", ".json", ".csv"
        self.origin = origin      # the seed, for messages


def csv_argv(p, m, v, placement, verify=False):
    """`zbc schedule --import` of a CSV, or `zbc verify` (which proves its
    transfers too)."""
    argv = (["zbc", "verify", INPUT] if verify else
            ["zbc", "schedule", "--import", INPUT])
    argv += ["--ranks", str(p), "--microbatches", str(m)]
    if v != 1:
        argv += ["--virtual", str(v)]
    if placement:
        argv += ["--placement", placement]
    return argv


def make_case(seed, index, seeds, targets):
    rng = random.Random(f"{seed}:{index}")
    kinds = [(k, w) for k, w in TARGET_WEIGHTS
             if any(t == k or t.startswith(k + "-") for t in targets)]
    kind = rng.choices([k for k, _ in kinds], [w for _, w in kinds])[0]
    if kind == "mlir":
        origin, text = rng.choice(seeds.mlir)
        ctx = {"others": [t for _, t in seeds.mlir], "words": seeds.mlir_words + MLIR_TOKENS}
        data = mutate(rng, "mlir", text, ctx)
        target = rng.choice([t for t in MLIR_TARGETS if t in targets])
        return Case(target, list(MLIR_TARGETS[target]), data, ".mlir", origin)
    if kind == "cost":
        origin, text = rng.choice(seeds.cost)
        ctx = {"others": [t for _, t in seeds.cost], "words": COST_KEYS + INTERESTING_STRINGS}
        data = mutate(rng, "cost", text, ctx)
        argv = ["zbc", "schedule", "--cost-file", INPUT]
        if rng.random() < 0.7:
            argv += ["--schedule", rng.choice(SCHEDULE_NAMES)]
        return Case("cost", argv, data, ".json", origin)
    if kind == "csv":
        origin, text, problem = rng.choice(seeds.csv)
        p, m, v, placement = problem
        ctx = {"others": [t for _, t, _ in seeds.csv], "words": CSV_KINDS[:-1]}
        data = mutate(rng, "csv", text, ctx) if rng.random() < 0.9 else text
        verify = rng.random() < 0.5
        argv = csv_argv(p, m, v, placement, verify)
        head = 3 if verify else 4  # the command and its input
        if rng.random() < 0.2:
            opts = mutate_options(rng, parse_options(argv[head:]),
                                  INT_OPTIONS + ["--placement", "--activation-budget", "--cost", "--mem"])
            argv = argv[:head] + format_options(rng, opts)
        return Case("csv", argv, data, ".csv", origin)
    if kind == "data":
        origin, text = rng.choice(seeds.data)
        ctx = {"others": [t for _, t in seeds.data], "words": ["F32", "BF16", "I64", "I32",
                                                               "dtype", "shape", "data_offsets"]}
        return Case("data", data_argv(rng), mutate(rng, "data", text, ctx), ".safetensors", origin)
    if kind == "tokens":
        origin, text = rng.choice(seeds.tokens)
        ctx = {"others": [t for _, t in seeds.tokens],
               "words": ["'<u2'", "'<u4'", "'<i4'", "'<i8'", "'<f4'", "True", "(10, 12)",
                         "(0,)", "(99999999999,)", "shape", "descr", "fortran_order"]}
        return Case("tokens", tokens_argv(rng), mutate(rng, "tokens", text, ctx), ".npy",
                    origin)
    if kind == "manifest":
        origin, text = rng.choice(seeds.manifest)
        ctx = {"others": [t for _, t in seeds.manifest], "words": ["step", "seed", "files", "rank",
                                                                   "bytes", "fnv1a64", "format"]}
        return Case("manifest", ["zbc", "inspect", INPUT], mutate(rng, "manifest", text, ctx),
                    ".json", origin)
    origin, argv = rng.choice(seeds.args)
    opts = mutate_options(rng, parse_options(argv), ARG_OPTIONS)
    return Case("args", ["zbc", "schedule"] + format_options(rng, opts), None, "", origin)


def replay_cases(seeds, crash_dir):
    """The corpus's own MLIR files on every MLIR target; the seeds taken from
    examples/ and the lit tests on one target each, in turn (lit runs them
    through zbc-opt already)."""
    cases = []
    names = list(MLIR_TARGETS)
    for i, (origin, text) in enumerate(seeds.mlir):
        corpus = origin.startswith("test/fuzz/")
        for target in names if corpus else [names[i % len(names)]]:
            cases.append(Case(target, list(MLIR_TARGETS[target]), text, ".mlir", origin))
    for origin, text in seeds.cost:
        cases.append(Case("cost", ["zbc", "schedule", "--cost-file", INPUT], text, ".json", origin))
    for origin, text, problem in seeds.csv:
        cases.append(Case("csv", csv_argv(*problem), text, ".csv", origin))
    for origin, argv in seeds.args:
        cases.append(Case("args", ["zbc", "schedule"] + argv, None, "", origin))
    for origin, text in seeds.data:
        cases.append(Case("data", data_argv(), text, ".safetensors", origin))
    for origin, text in seeds.manifest:
        cases.append(Case("manifest", ["zbc", "inspect", INPUT], text, ".json", origin))
    for origin, text in seeds.tokens:
        cases.append(Case("tokens", tokens_argv(), text, ".npy", origin))
    for cmd in sorted(Path(crash_dir).glob("*.cmd")):
        lines = [l for l in read_text(cmd).splitlines() if l.strip() and not l.startswith("#")]
        if len(lines) != 1:
            sys.exit(f"fuzz: error: {cmd}: expected one command line besides # comments")
        argv = shlex.split(lines[0])
        inputs = [p for p in cmd.parent.glob(cmd.stem + ".*") if p.suffix != ".cmd"]
        data, suffix = None, ""
        if INPUT in argv:
            if len(inputs) != 1:
                sys.exit(f"fuzz: error: {cmd}: uses {INPUT} but has {len(inputs)} input files beside it")
            data, suffix = read_text(inputs[0]), inputs[0].suffix
        cases.append(Case("crash:" + cmd.stem, argv, data, suffix, str(cmd)))
    return cases


def reported_target(case):
    """The target a failure is filed under; a replayed reproducer's is in its
    name (TARGET-HASH.cmd as fuzz.py writes them), else 'replay'."""
    if not case.target.startswith("crash:"):
        return case.target
    m = re.match(r"^(.*)-[0-9a-f]{10}$", case.target[len("crash:"):])
    return m.group(1) if m else "replay"

#===----------------------------------------------------------------------===#
# Running and judging
#===----------------------------------------------------------------------===#

CRASH_MARKERS = ["LLVM ERROR", "PLEASE submit a bug report", "Stack dump",
                 "ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                 "UndefinedBehaviorSanitizer", "runtime error:",
                 "terminate called", "Assertion `"]
HANDLER_FRAME = re.compile(
    r"llvm::sys::|SignalHandler|__restore_rt|libc\.so|libstdc\+\+|raise|abort|"
    r"gsignal|pthread_kill|__sanitizer|__asan|__ubsan|__interceptor|_start|__libc_start|"
    r"__assert|\?\?|0x[0-9a-f]+ \(|InitLLVM|PrettyStackTrace|\s\./\w+/")  # ./x/: glibc's sources
SANITIZER_SIGNALS = {"SEGV", "BUS", "FPE", "ILL", "ABRT", "stack-overflow", "out-of-memory",
                     "allocation-size-too-big", "rss-limit-exceeded", "malloc-limit-exceeded",
                     "requested", "deadly", "calloc-overflow", "pvalloc-overflow"}
LLVM_CL_MESSAGE = re.compile(
    r"^\S+: (for the -+\S+ option: |Unknown command line argument|Not enough positional|"
    r"Too many positional|.*must be specified at least once|.*may only occur zero or one times|"
    r".*does not allow a value|.*requires a value|Did you mean)")
SIGNAL_NAMES = {s.value: s.name for s in signal.Signals}


def function_name(frame):
    """'ns::f' from 'ns::f<T>(int) const (/lib/x.so+0x12)' or 'in ns::f(int) file.cpp:3'."""
    frame = re.sub(r"^in\s+", "", frame).replace("(anonymous namespace)", "{anonymous}")
    frame = re.sub(r"\s+(\(/|/|\.\.?/)\S*$", "", frame)  # (module+offset), file:line
    frame = re.sub(r"\s+[\w.+-]+:\d+(:\d+)?$", "", frame)  # Verifier.cpp.o:0:0
    depth, name = 0, ""
    for c in frame:  # drop template arguments and parameter lists
        if c in "<(":
            depth += 1
        elif c in ">)":
            depth -= 1
        elif depth == 0:
            name += c
    name = re.sub(r"\s+const$", "", name.strip())
    return "" if name.startswith("0x") else name[:100]


def recursion(stderr):
    """'stack overflow, recursion in F' when one frame fills the trace."""
    counts, names = {}, {}
    for line in stderr.splitlines():
        m = re.match(r"\s*#\d+\s+0x[0-9a-f]+\s+(.*)$", line)
        if m:
            where = re.search(r"\(([^()\s]*\+0x[0-9a-f]+)\)\s*$", m.group(1))
            key = where.group(1).rsplit("/", 1)[-1] if where else m.group(1)
            counts[key] = counts.get(key, 0) + 1
            names[key] = names.get(key) or function_name(m.group(1))
    if not counts:
        return ""
    key, n = max(counts.items(), key=lambda kv: kv[1])
    return f"stack overflow, recursion in {names[key] or key[:100]}" if n >= 16 else ""


def top_frame(stderr):
    """The first stack frame below the signal handler, and the first of zbc's
    own below that: 'mlir::FloatType::getWidth < zbc::zb::verifyTensorSize'.
    Without symbols (a corrupted heap stops the symbolizer): 'zbc+0x1234'."""
    frames, own, raw = [], None, None
    for line in stderr.splitlines():
        m = re.match(r"\s*#\d+\s+0x[0-9a-f]+\s+(.*)$", line)
        if not m:
            continue
        place = re.search(r"\(([^()\s]*\+0x[0-9a-f]+)\)\s*$", line)
        if (raw is None and place and not re.search(r"/lib(c|LLVM|stdc\+\+|asan|ubsan)[.-]", line)
                and "__interceptor" not in line):
            raw = place.group(1).rsplit("/", 1)[-1]
        if HANDLER_FRAME.search(line):
            continue
        name = function_name(m.group(1))
        if not name:
            continue
        frames.append(name)
        if own is None and ("zbc::" in name or re.search(r"/(dialect|passes|zbc-tool)/", line)):
            own = name
    if not frames:
        return raw or ""
    return frames[0] if own in (None, frames[0]) else f"{frames[0]} < {own}"


def normalize(line):
    """A message without its particulars, so that one cause gives one signature."""
    line = re.sub(r"'[^']*'", "'…'", line)
    line = re.sub(r"--[A-Za-z][\w-]*", "--OPTION", line)
    line = re.sub(r"\d+", "N", line)
    return line.strip()[:160]


def judge(case, rc, stderr, timed_out, timeout):
    """None when the execution is fine; else (kind, detail)."""
    if timed_out:
        exact = [a for a in case.argv if a.startswith("--exact")]
        try:
            idx = case.argv.index("--exact")
            value = case.argv[idx + 1]
        except (ValueError, IndexError):
            value = exact[0].split("=", 1)[1] if exact and "=" in exact[0] else None
        try:
            if value is not None and float(value) >= timeout / 2:
                return None  # asked to search that long
        except ValueError:
            pass
        return ("timeout", f"> {timeout:g} s")
    sanitizer = re.search(r"SUMMARY: (\w+Sanitizer: .*)", stderr)
    runtime = re.search(r"^(\S+:\d+):\d+: runtime error: (.*)$", stderr, re.M)
    if runtime:
        return ("sanitizer", runtime.group(1).split("/")[-1] + ": runtime error: "
                + normalize(runtime.group(2)))
    if sanitizer:
        words = sanitizer.group(1).split()
        if len(words) > 1 and words[1] in SANITIZER_SIGNALS:
            # A signal or a resource limit: the place is the stack, not the
            # summary's first frame (often the signal handler's syscall).
            return ("sanitizer", f"{words[0]} {words[1]}: "
                    + (recursion(stderr) or top_frame(stderr) or "no stack"))
        detail = sanitizer.group(1).replace("(anonymous namespace)", "{anonymous}")
        detail = re.sub(r"\s*\([^()\s]*\+0x[0-9a-f]+\)", "", detail)  # (module+offset)
        detail = re.sub(r"(\S*/)+", "", detail)                       # directories
        detail = re.sub(r"\(.*\)( const)?\s*$", "", detail)          # parameters
        return ("sanitizer", detail[:200])
    if rc < 0 or rc >= 128:
        sig = -rc if rc < 0 else rc - 128
        kind = "abort" if sig == signal.SIGABRT else f"signal {SIGNAL_NAMES.get(sig, sig)}"
        why = next((re.sub(r"\d+", "N", l.strip())[:160] for l in stderr.splitlines()
                    if re.search(r"LLVM ERROR|terminate called|Assertion|double free|corrupted|"
                                 r"free\(\)|malloc\(\)|munmap_chunk|stack smashing", l)), "")
        where = recursion(stderr) or top_frame(stderr)
        return (kind, " | ".join(x for x in (why, where) if x) or "no stack")
    marker = next((m for m in CRASH_MARKERS if m in stderr), None)
    if marker:
        line = next(l for l in stderr.splitlines() if marker in l)
        return (f"rc {rc} with crash output", normalize(line) + " | " + top_frame(stderr))
    if rc not in (0, 1):
        return (f"rc {rc}", normalize(stderr.splitlines()[0]) if stderr else "")
    if rc == 0 and "error:" in stderr:
        return ("exit 0 with error:", normalize(next(l for l in stderr.splitlines() if "error:" in l)))
    if rc == 1 and "error" not in stderr.lower():
        first = stderr.splitlines()[0] if stderr.strip() else ""
        if LLVM_CL_MESSAGE.search(first):
            # llvm::cl's own message for a bad option value ("for the --x
            # option: ..."), which zbc cannot reword (the parser prints it
            # itself); it names the option, so it counts as a located error.
            return None
        return ("exit 1 without error", normalize(first) if first else "empty stderr")
    return None


class Runner:
    def __init__(self, bin_dir, timeout, work_dir, env):
        self.bin_dir = Path(bin_dir).resolve()
        self.timeout = timeout
        self.work_dir = Path(work_dir)
        self.env = env
        self.local = threading.local()
        self.counter = 0
        self.lock = threading.Lock()

    def tool(self, name):
        return str(self.bin_dir / name)

    def argv(self, case, path):
        examples = str(SOURCE_ROOT / "examples")
        return [self.tool(case.argv[0])] + [path if a == INPUT else a.replace(EXAMPLES, examples)
                                           for a in case.argv[1:]]

    def run(self, case):
        if not hasattr(self.local, "dir"):
            with self.lock:
                self.counter += 1
                self.local.dir = self.work_dir / f"worker{self.counter}"
            self.local.dir.mkdir(parents=True, exist_ok=True)
        path = str(self.local.dir / ("input" + case.suffix))
        if case.data is not None:
            with open(path, "wb") as f:
                f.write(case.data.encode("latin-1"))
        argv = self.argv(case, path)
        start = time.monotonic()
        with tempfile.TemporaryFile(dir=self.local.dir) as err:
            for attempt in range(20):
                try:
                    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                            stdout=subprocess.DEVNULL, stderr=err,
                                            env=self.env, start_new_session=True,
                                            cwd=self.local.dir)
                    break
                except OSError:  # ETXTBSY/EACCES: the tool is being relinked
                    if attempt == 19:
                        raise
                    time.sleep(0.5)
            timed_out = False
            try:
                rc = proc.wait(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                os.killpg(proc.pid, signal.SIGKILL)
                rc = proc.wait()
            err.seek(0)
            stderr = err.read(1 << 20).decode("utf-8", "replace")
        return rc, stderr, timed_out, time.monotonic() - start


def display_command(case):
    return shlex.join(case.argv)


REPRODUCER_NAME = re.compile(r"^[\w-]+-[0-9a-f]{10}\.\w+$")


class Report:
    def __init__(self, crash_dir, known, runner):
        self.crash_dir = Path(crash_dir)
        self.known = known
        self.runner = runner
        self.failures = {}  # signature -> dict
        self.executions = 0
        self.per_target = {}
        self.seconds = {}   # target -> execution time in all
        self.timeouts = 0

    def add(self, case, rc, stderr, timed_out, verdict, seconds):
        self.executions += 1
        self.per_target[case.target] = self.per_target.get(case.target, 0) + 1
        self.seconds[case.target] = self.seconds.get(case.target, 0) + seconds
        self.timeouts += timed_out
        if verdict is None:
            return
        kind, detail = verdict
        target = reported_target(case)
        signature = f"{case.argv[0]} {target}: {kind}: {detail}"
        known = next((k for k in self.known if re.search(k, signature)), None)
        entry = self.failures.get(signature)
        size = len(case.data or "") + len(display_command(case))
        if entry is None:
            entry = self.failures[signature] = {"count": 0, "known": known, "size": None,
                                                "name": None}
        entry["count"] += 1
        if entry["size"] is None or size < entry["size"]:
            entry["size"] = size
            entry["name"] = self.save(case, signature, rc, stderr, timed_out)
            if entry["count"] == 1:
                tag = "KNOWN" if known else "FAIL"
                print(f"{tag} {signature}\n     reproducer: {self.crash_dir / entry['name']}.cmd"
                      f"  (seed {case.origin})", flush=True)

    def save(self, case, signature, rc, stderr, timed_out):
        digest = hashlib.sha1(signature.encode()).hexdigest()[:10]
        name = f"{reported_target(case)}-{digest}"
        self.crash_dir.mkdir(parents=True, exist_ok=True)
        for old in self.crash_dir.glob(name + ".*"):
            old.unlink()
        tail = [l for l in stderr.splitlines() if l.strip()][:12]
        with open(self.crash_dir / f"{name}.cmd", "w", encoding="utf-8") as f:
            signature = "".join(c if c.isprintable() else "?" for c in signature)
            f.write(f"# {signature}\n# rc {rc}{' (timed out)' if timed_out else ''}; seed input: {case.origin}\n")
            for line in tail:
                line = "".join(c if c.isprintable() else "?" for c in line[:200])
                f.write(f"# | {line}\n")
            f.write(display_command(case) + "\n")
        if case.data is not None:
            (self.crash_dir / f"{name}{case.suffix}").write_bytes(case.data.encode("latin-1"))
        return name

    def new_failures(self):
        return [s for s, e in self.failures.items() if not e["known"]]


def load_known(path):
    if not path:
        return []
    out = []
    for line in Path(path).read_text().splitlines():
        line = line.split(" #", 1)[0].strip() if not line.startswith("#") else ""
        if line:
            out.append(line)
    return out


def is_sanitized(binary):
    try:
        with open(binary, "rb") as f:
            return b"__asan_init" in f.read()
    except OSError:
        return False


def child_env(bin_dir, asan, rss_mb):
    env = dict(os.environ)
    env.setdefault("LLVM_SYMBOLIZER_PATH", shutil.which("llvm-symbolizer")
                   or "/usr/lib/llvm-22/bin/llvm-symbolizer")
    if asan:
        extra = (f"halt_on_error=1:abort_on_error=1:print_stacktrace=1:detect_leaks=0:"
                 f"hard_rss_limit_mb={rss_mb}:malloc_limit_mb={rss_mb}:"
                 f"allocator_may_return_null=0:disable_coredump=1")
        env["ASAN_OPTIONS"] = extra + (":" + env["ASAN_OPTIONS"] if env.get("ASAN_OPTIONS") else "")
        env.setdefault("UBSAN_OPTIONS", "halt_on_error=1:abort_on_error=1:print_stacktrace=1")
    return env


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="See the top of this file for targets and criteria.")
    parser.add_argument("--bin", default=str(SOURCE_ROOT / "build" / "bin"),
                        help="folder with zbc and zbc-opt (default: build/bin)")
    parser.add_argument("--seconds", type=float, default=60,
                        help="time budget (default 60; the environment variable "
                             "ZBC_FUZZ_SECONDS overrides it)")
    parser.add_argument("--iterations", type=int, default=0,
                        help="run exactly this many test cases (default: until --seconds)")
    parser.add_argument("--seed", type=int, default=20261201, help="random seed")
    parser.add_argument("--jobs", type=int, default=2, help="executions in parallel (default 2)")
    # The slowest schedule at the largest accepted size takes about 25 s
    # (zbc/Support/Limits.h); anything slower is a hang.
    parser.add_argument("--timeout", type=float, default=30, help="per execution, seconds (default 30)")
    parser.add_argument("--crash-dir", help="where reproducers go (default: a new temp dir)")
    parser.add_argument("--corpus", default=str(SCRIPT_DIR / "corpus"))
    parser.add_argument("--crashes", default=str(SCRIPT_DIR / "crashes"),
                        help="committed reproducers, replayed by --replay")
    parser.add_argument("--fresh", action="store_true",
                        help="first delete the reproducers of earlier runs from --crash-dir")
    parser.add_argument("--known", help="file of regexes of known failures (do not fail the run)")
    parser.add_argument("--targets", default=",".join(list(MLIR_TARGETS) + ["cost", "csv", "args", "data", "manifest", "tokens"]),
                        help="comma-separated subset of the targets")
    parser.add_argument("--replay", action="store_true",
                        help="run every seed and committed reproducer once, then stop")
    parser.add_argument("--rss-limit-mb", type=int, default=4096,
                        help="memory limit of each execution (default 4096)")
    parser.add_argument("--show-cases", action="store_true",
                        help="print each test case's command and seed (debugging)")
    args = parser.parse_args()
    if os.environ.get("ZBC_FUZZ_SECONDS"):
        args.seconds = float(os.environ["ZBC_FUZZ_SECONDS"])

    for tool in ("zbc", "zbc-opt"):
        if not os.access(Path(args.bin) / tool, os.X_OK):
            sys.exit(f"fuzz: error: no executable {tool} in {args.bin}")
    asan = is_sanitized(Path(args.bin) / "zbc")
    if not asan:
        # Inherited by every execution: an allocation past it fails (bad_alloc)
        # instead of taking the machine's memory. ASan reserves terabytes of
        # address space, so there ASAN_OPTIONS limits memory instead.
        limit = args.rss_limit_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    crash_dir = args.crash_dir or tempfile.mkdtemp(prefix="zbc-fuzz-crashes-")
    if args.fresh:
        for old in Path(crash_dir).glob("*"):
            if REPRODUCER_NAME.match(old.name) and old.is_file():
                old.unlink()
    seeds = Seeds(SOURCE_ROOT, Path(args.corpus))
    work_dir = tempfile.mkdtemp(prefix="zbc-fuzz-")
    runner = Runner(args.bin, args.timeout, work_dir, child_env(args.bin, asan, args.rss_limit_mb))
    report = Report(crash_dir, load_known(args.known), runner)
    mode = "replay" if args.replay else f"seed {args.seed}, " + (
        f"{args.iterations} iterations" if args.iterations else f"{args.seconds:g} s")
    print(f"fuzz: {mode}; {args.jobs} jobs; timeout {args.timeout:g} s per execution; "
          f"{len(seeds.mlir)} mlir, {len(seeds.cost)} cost, {len(seeds.csv)} csv, "
          f"{len(seeds.args)} args, {len(seeds.data)} data, {len(seeds.manifest)} manifest seeds; "
          f"{'sanitized ' if asan else ''}tools in {args.bin}; "
          f"reproducers to {crash_dir}", flush=True)

    start = time.monotonic()
    if args.replay:
        cases = iter(replay_cases(seeds, args.crashes))
    else:
        def generate():
            i = 0
            while not args.iterations or i < args.iterations:
                if not args.iterations and time.monotonic() - start >= args.seconds:
                    return
                yield make_case(args.seed, i, seeds, targets)
                i += 1
        cases = generate()

    slowest = (0.0, None)
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        pending = {}
        try:
            while True:
                while len(pending) < 2 * args.jobs:
                    case = next(cases, None)
                    if case is None:
                        break
                    if args.show_cases:
                        print(f"case {case.target} [{case.origin}]: {display_command(case)}", flush=True)
                    pending[pool.submit(runner.run, case)] = case
                if not pending:
                    break
                done, _ = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
                for future in done:
                    case = pending.pop(future)
                    rc, stderr, timed_out, seconds = future.result()
                    if seconds > slowest[0]:
                        slowest = (seconds, case)
                    report.add(case, rc, stderr, timed_out,
                               judge(case, rc, stderr, timed_out, args.timeout), seconds)
        except KeyboardInterrupt:
            print("fuzz: interrupted", flush=True)
            for future in pending:
                future.cancel()
    elapsed = time.monotonic() - start
    shutil.rmtree(work_dir, ignore_errors=True)

    targets_line = ", ".join(f"{t} {n} ({report.seconds[t]:.0f} s)"
                             for t, n in sorted(report.per_target.items())
                             if not t.startswith("crash:"))
    replayed = sum(n for t, n in report.per_target.items() if t.startswith("crash:"))
    print(f"fuzz: {report.executions} executions in {elapsed:.1f} s "
          f"({report.executions / max(elapsed, 1e-9):.1f} executions/s, {report.timeouts} timeouts); "
          f"per target: executions (time spent) {targets_line}"
          + (f"; {replayed} reproducers" if replayed else ""))
    if slowest[1] is not None:
        print(f"fuzz: slowest execution {slowest[0]:.2f} s: {display_command(slowest[1])}")
    new = report.new_failures()
    known = [s for s, e in report.failures.items() if e["known"]]
    for s in known:
        e = report.failures[s]
        print(f"fuzz: known failure ({e['count']}x, matches '{e['known']}'): {s}")
    for s in new:
        e = report.failures[s]
        print(f"fuzz: FAILURE ({e['count']}x): {s} -> {Path(crash_dir) / e['name']}.cmd")
    print(f"fuzz: {len(new)} distinct failures, {len(known)} known; reproducers in {crash_dir}")
    return 1 if new else 0


if __name__ == "__main__":
    sys.exit(main())
