"""Packed documents end to end (driven by e2e.py; issue 44).

  packed_data(...)      a file of packed samples, written here so that the
                        tests need no `zbc pack`: documents of varied lengths
                        packed into rows, one split across two rows, padding
                        with -100 targets, microbatches that count different
                        numbers of real tokens (Note [Loss over real tokens]).
  packed-data-parallel  a packed Llama, 2 data-parallel replicas x a pipeline
                        of 2 (zb-h1), whose replicas' microbatches count
                        different numbers of real tokens: after a step every
                        parameter equals that of one replica running all the
                        samples (the same file, m doubled) to 1e-6 relative,
                        and both equal zbc-reference's to 1e-5; measured peak
                        = predicted on every rank. A step whose targets are
                        all -100 fails on the ranks and in the reference,
                        naming the step.
The every-schedule modes (e2e.py) train their packed variants on
packed_data too.
"""
import json
import os
import random
import struct
import sys

from zbc_e2e import expect_failure, fresh_dir, run
from zbc_models import llama

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "examples", "data"))
from counting import write_safetensors  # noqa: E402

IGNORE = -100

# How far each sample's rows are filled with documents before padding, by
# sample (round and round): microbatches count different numbers of real
# tokens, and so do the two replicas of packed-data-parallel (samples 0-3
# and 4-7 of a step of 8).
FILL = (1.0, 0.6, 1.0, 0.25, 0.5, 1.0, 0.3, 0.7)


def packed_data(path, samples=8, batch=2, seq=32, vocab=256, seed=44,
                ignored=False):
    """Writes `samples` packed samples [batch, seq] of input.tokens,
    input.positions, input.documents and label.targets to `path`, and
    returns the counted labels (targets that are not -100) of each sample.

    Documents of 1 to 24 tokens (drawn with `seed`) fill the rows in order,
    numbered from 0 along each row, positions restarting at 0 in each; a
    token's target is the document's next token, the last one's -100. A row
    fills up to FILL[sample] of its length, its rest is padding (the row's
    last document: token 0, target -100); a document that does not fit goes
    whole to the next row, except that the first full row splits its last
    one, the rest starting the next row (positions from 0 again, as `zbc
    pack` writes a document longer than what is left of a row). With
    `ignored`, every target is -100 (a step with nothing to train on).
    """
    rng = random.Random(seed)

    def document():
        words = [rng.randrange(vocab) for _ in range(rng.randint(1, 24))]
        return [(w, IGNORE if ignored or i + 1 == len(words) else words[i + 1])
                for i, w in enumerate(words)]

    columns = {"input.tokens": [], "input.positions": [],
               "input.documents": [], "label.targets": []}
    counted, carry, split = [], None, False
    for n in range(samples):
        limit = max(1, int(seq * FILL[n % len(FILL)]))
        real = 0
        for _ in range(batch):
            row = []  # (token, target, document, position)
            doc = 0
            while len(row) < limit:
                words, carry = carry or document(), None
                room = limit - len(row)
                if len(words) > room:
                    # A row's first document always goes in, in pieces if
                    # it must; later ones wait for the next row, but for
                    # the one document split at the end of a full row.
                    if row and (split or limit < seq or room < 2):
                        carry = words
                        break
                    split = split or limit == seq
                    words, carry = words[:room], words[room:]
                row += [(w, y, doc, i) for i, (w, y) in enumerate(words)]
                doc += 1
            row += [(0, IGNORE, doc, i) for i in range(seq - len(row))]
            real += sum(y != IGNORE for _, y, _, _ in row)
            for (w, y, d, p) in row:
                columns["input.tokens"].append(w)
                columns["label.targets"].append(y)
                columns["input.documents"].append(d)
                columns["input.positions"].append(p)
        counted.append(real)
    shape = [samples, batch, seq]
    write_safetensors(path, {k: ("I64", shape, v) for k, v in columns.items()})
    return counted


def _tensors(path):
    """name -> list of floats of each F32 tensor of a safetensors file."""
    with open(path, "rb") as f:
        data = f.read()
    length = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + length])
    base = 8 + length
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        begin, end = t["data_offsets"]
        out[name] = struct.unpack(f"<{(end - begin) // 4}f",
                                  data[base + begin:base + end])
    return out


def _largest_difference(saved, expected, ranks):
    """The largest per-tensor max|a - b| / max|b| between the parameters two
    runs saved (DIR/rankR.safetensors), with the tensor's name."""
    worst, where = 0.0, None
    for r in range(ranks):
        a = _tensors(os.path.join(saved, f"rank{r}.safetensors"))
        b = _tensors(os.path.join(expected, f"rank{r}.safetensors"))
        if a.keys() != b.keys():
            sys.exit(f"FAILED: rank {r} saved {sorted(a)} in one run, "
                     f"{sorted(b)} in the other")
        for name in a:
            scale = max(abs(v) for v in b[name]) or 1.0
            error = max(abs(x - y) for x, y in zip(a[name], b[name])) / scale
            if error >= worst:
                worst, where = error, f"rank {r} '{name}'"
    return worst, where


def _measured_peaks(report, ranks, case):
    """Each rank's measured peak, which must be the predicted one."""
    peaks = []
    for r in range(ranks):
        with open(os.path.join(report, f"rank{r}.json")) as f:
            rep = json.load(f)
        if rep["measured_peak_bytes"] != rep["predicted_peak_bytes"]:
            sys.exit(f"FAILED: {case} rank {r}: measured peak "
                     f"{rep['measured_peak_bytes']} bytes, predicted "
                     f"{rep['predicted_peak_bytes']}")
        peaks.append(rep["measured_peak_bytes"])
    return peaks


def data_parallel(args):
    zbc = os.path.join(args.bin, "zbc")
    reference = os.path.join(args.bin, "zbc-reference")
    work = fresh_dir(args.work)
    source = os.path.join(work, "llama.mlir")
    with open(source, "w") as f:
        f.write(llama(os.path.join(args.bin, "zbc-dsl-llama"), 2, "--packed"))
    data = os.path.join(work, "packed.safetensors")
    counted = packed_data(data)
    # One step of 8 microbatches: replica 0 reads samples 0-3, replica 1
    # samples 4-7 (DataFile.h's sampleOf); the one-replica run all 8.
    halves = (sum(counted[:4]), sum(counted[4:]))
    if halves[0] == halves[1] or len(set(counted)) < 4:
        sys.exit(f"FAILED: the replicas' microbatches count {counted} real "
                 "tokens: not different enough to test the loss weights")
    saved, peaks = {}, {}
    for d in (2, 1):
        case = f"llama-packed-zb-h1-p2-d{d}"
        out = os.path.join(work, f"d{d}")
        saved[d], report = (os.path.join(work, f"saved-d{d}"),
                            os.path.join(work, f"report-d{d}"))
        run([zbc, "compile", source, "--ranks", "2", "--microbatches", "8",
             "--data-parallel", str(d), "--schedule", "zb-h1", "-o", out])
        run([os.path.join(out, "launch.sh"), "--steps", "1", "--quiet",
             "--data", data, "--save", saved[d], "--report", report])
        peaks[d] = _measured_peaks(report, 2, case)
        check = run([reference, os.path.join(out, "program.mlir"), "--steps",
                     "1", "--data-parallel", str(d), "--data", data,
                     "--compare", saved[d]])
        print(f"ok {case}: peaks {peaks[d]} measured = predicted; "
              f"{check.stdout.strip().splitlines()[-1]}", flush=True)
    worst, where = _largest_difference(saved[2], saved[1], 2)
    if not worst <= 1e-6:
        sys.exit(f"FAILED: 2 replicas and 1 replica on the same 8 samples "
                 f"differ by {worst:.2e} (relative) at {where}")
    print(f"ok: 2 replicas (microbatches counting {counted[:4]} and "
          f"{counted[4:]} real tokens, {halves[0]} and {halves[1]}) update "
          f"as 1 replica on all 8: largest relative difference {worst:.2e} "
          f"({where})", flush=True)

    # A step whose every target is -100 has nothing to train on: the ranks
    # that compute the loss and the reference stop, naming the step.
    ignored = os.path.join(work, "ignored.safetensors")
    packed_data(ignored, ignored=True)
    out = os.path.join(work, "d2")
    expect_failure([os.path.join(out, "launch.sh"), "--steps", "1", "--quiet",
                    "--data", ignored], 1,
                   "step 1: every 'label.targets' of its 8 microbatches is "
                   "the ignore_index -100: the step has no token to train on")
    result = run([reference, os.path.join(out, "program.mlir"), "--steps", "1",
                  "--data-parallel", "2", "--data", ignored, "--compare",
                  saved[2]], check=False)
    said = "every 'label.targets' of the step is the ignore_index -100"
    if result.returncode == 0 or said not in result.stderr:
        sys.exit(f"FAILED: zbc-reference trained on a step with no target "
                 f"(exit {result.returncode}):\n{result.stdout}"
                 f"{result.stderr}")
    print(f"ok: zbc-reference refused it too: {result.stderr.strip()}")


MODES = {"packed-data-parallel": data_parallel}
