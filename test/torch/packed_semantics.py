#!/usr/bin/python3
"""Packed documents against PyTorch: the loss and every gradient of a step.

Usage: packed_semantics.py --bin BUILD/bin --work DIR

A step of packed data is written here by hand (PACKING): two microbatches
of two rows of eight slots, several documents in a row, one document split
across two rows (its second piece restarts at position 0; the last target
of its first piece is the first token of its second), padding at the ends
of rows (a document id of its own, positions restarting, targets -100),
and one microbatch with far fewer real tokens than the other. The reference
interpreter (zbc-gradients --data, float64) trains a step of two packed
models on it: a Llama from zbc-dsl-llama --packed (zb.attention, RoPE with
Llama 3's scaling, GQA) and a GPT from zbc-dsl-gpt --packed
(zb.causal_attention, absolute position embeddings).

PyTorch (float64, llama_semantics.py's independent Llama and a GPT written
here) runs each document piece alone, as an unpacked sequence at positions
0..L-1 with plain causal attention (no document mask exists on this side),
sums the token losses (the targets of the packed file, -100 skipped) over
the whole step, divides by the step's count of real targets and backprops.
zbc's step loss, each microbatch's loss and weight, and every parameter's
gradient must agree to 1e-9 relative: max|torch - zbc| / max|zbc| per
tensor.

Then the semantics are changed on the PyTorch side, one at a time, and
each change must make the comparison fail: the mask removed (each packed
row runs as one causal sequence, attending across documents), positions
not reset (each piece at the positions its slots have in the row, 0..S-1
along it), and the loss normalised per microbatch (the mean of each
microbatch's mean) instead of per token of the step. RoPE is relative:
under the document mask, shifting a whole document's positions rotates its
queries and keys alike and leaves every score as it was, so the position
reset cannot be seen on the Llama (the test prints how far it lands there,
at rounding level) and is held to the GPT, whose position embeddings are
absolute.
"""
import argparse
import json
import os
import struct
import subprocess
import sys

import torch

import llama_semantics as llama  # the float64 Llama, Hugging Face's rules

torch.set_default_dtype(torch.float64)
F = torch.nn.functional

IGNORE = -100
VOCAB = 11
ROWS, SEQ = 2, 8  # each microbatch: ROWS rows of SEQ slots

MODELS = {
    "llama": ("zbc-dsl-llama",
              ["--hidden", "16", "--intermediate", "24", "--layers", "2",
               "--heads", "4", "--kv-heads", "2", "--vocab", str(VOCAB),
               "--seq", str(SEQ), "--batch", str(ROWS), "--max-positions",
               "40", "--rope-theta", "100", "--llama3", "8,1,8,64",
               "--rms-eps", "0.01", "--packed"]),
    "gpt": ("zbc-dsl-gpt",
            ["--hidden", "16", "--heads", "4", "--layers", "2", "--vocab",
             str(VOCAB), "--seq", str(SEQ), "--batch", str(ROWS),
             "--packed"]),
}

# Document lengths, by document id.
DOCUMENTS = [2, 2, 7, 3, 3]
PAD = len(DOCUMENTS)  # the document id of padding: after every document
# Each microbatch's rows, each row its pieces in order: (document, its
# first token, length), or (PAD, 0, slots). Document 2 is split: tokens
# 0..3 end row 0, tokens 4..6 open row 1 (both pieces keep id 2, so an
# implementation that ran the mask across the rows, as one sequence of
# B * S, would join them). Microbatch 0 counts 10 real targets, microbatch
# 1 counts 2.
PACKING = [
    [[(0, 0, 2), (1, 0, 2), (2, 0, 4)],
     [(2, 4, 3), (3, 0, 3), (PAD, 0, 2)]],
    [[(4, 0, 3), (PAD, 0, 5)],
     [(PAD, 0, 8)]],
]

MUTATIONS = ["mask-removed", "positions-not-reset", "per-microbatch-mean"]
# Where each change must be seen (the position reset: not on RoPE, above).
MUTATION_MODELS = {"mask-removed": ["llama", "gpt"],
                   "positions-not-reset": ["gpt"],
                   "per-microbatch-mean": ["llama", "gpt"]}


# --- the packed step --------------------------------------------------------

def packed_step(seed=44):
    """{key: [microbatches, ROWS, SEQ] int64} as `zbc run --data` reads."""
    generator = torch.Generator().manual_seed(seed)
    texts = [torch.randint(VOCAB, (n,), generator=generator)
             for n in DOCUMENTS]
    shape = (len(PACKING), ROWS, SEQ)
    data = {"input.tokens": torch.zeros(shape, dtype=torch.int64),
            "input.positions": torch.zeros(shape, dtype=torch.int64),
            "input.documents": torch.zeros(shape, dtype=torch.int64),
            "label.targets": torch.full(shape, IGNORE, dtype=torch.int64)}
    for m, rows in enumerate(PACKING):
        for b, pieces in enumerate(rows):
            assert sum(n for _, _, n in pieces) == SEQ
            column = 0
            for document, first, n in pieces:
                slots = slice(column, column + n)
                data["input.documents"][m, b, slots] = document
                data["input.positions"][m, b, slots] = torch.arange(n)
                if document != PAD:
                    text = texts[document]
                    data["input.tokens"][m, b, slots] = text[first:first + n]
                    # The next token of the document, wherever it lies; -100
                    # after its last.
                    following = text[first + 1:first + n + 1]
                    data["label.targets"][m, b, column:column +
                                          len(following)] = following
                column += n
    return data


def write_safetensors(path, tensors):
    """`tensors` (int64) as a safetensors file."""
    header, blobs, offset = {}, [], 0
    for name, t in sorted(tensors.items()):
        blob = t.contiguous().numpy().tobytes()
        header[name] = {"dtype": "I64", "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def runs(documents):
    """[(start, end)] of each run of equal ids in a row."""
    out, start = [], 0
    for i in range(1, len(documents) + 1):
        if i == len(documents) or documents[i] != documents[start]:
            out.append((start, i))
            start = i
    return out


# --- the models -------------------------------------------------------------

def gpt_logits(c, p, tokens, positions):
    """zbc-dsl-gpt's model (examples/dsl/gpt.cpp): GPT-2's pre-LayerNorm
    blocks, q, k and v side by side in one projection, GELU's tanh form,
    LayerNorm eps 1e-5, an untied head; weights [in, out]."""
    B, S = tokens.shape
    h, heads = c["hidden"], c["heads"]
    d = h // heads

    def layer_norm(x, name):
        return F.layer_norm(x, (h,), p[name + ".gamma"], p[name + ".beta"],
                            1e-5)

    def gelu(x):
        return 0.5 * x * (1 + torch.tanh((2 / torch.pi) ** 0.5 *
                                         (x + 0.044715 * x ** 3)))

    x = p["wte"][tokens] + p["wpe"][positions]
    mask = torch.full((S, S), float("-inf")).triu(1)
    for layer in range(c["layers"]):
        n = f"h{layer}."
        qkv = (layer_norm(x, n + "ln1") @ p[n + "attn.qkv.weight"] +
               p[n + "attn.qkv.bias"])
        q, k, v = (t.view(B, S, heads, d).transpose(1, 2)
                   for t in qkv.split(h, dim=-1))
        attn = torch.softmax(q @ k.transpose(2, 3) / d ** 0.5 + mask, -1) @ v
        x = x + (attn.transpose(1, 2).reshape(B, S, h) @
                 p[n + "attn.proj.weight"] + p[n + "attn.proj.bias"])
        up = gelu(layer_norm(x, n + "ln2") @ p[n + "mlp.fc.weight"] +
                  p[n + "mlp.fc.bias"])
        x = x + up @ p[n + "mlp.proj.weight"] + p[n + "mlp.proj.bias"]
    return layer_norm(x, "lnf") @ p["lm_head.weight"]


def gpt_config(flags):
    c = {"hidden": 64, "heads": 4, "layers": 4}
    for i in range(0, len(flags) - 1):
        if flags[i][2:] in c:
            c[flags[i][2:]] = int(flags[i + 1])
    return c


def logits_of(name, flags):
    """The model's logits(params, tokens [1, L], positions [1, L])."""
    if name == "llama":
        c = llama.config_of(flags)
        return lambda p, t, pos: llama.llama_logits(c, p, t, pos, None)
    c = gpt_config(flags)
    return lambda p, t, pos: gpt_logits(c, p, t, pos)


# --- the comparison ---------------------------------------------------------

def reference(logits, params, data, mutation):
    """The step's loss, each microbatch's loss and weight as PyTorch
    computes them: every piece alone (or, mask-removed, every row as one
    sequence), token losses summed over the step and divided by its real
    targets (per-microbatch-mean: each microbatch's mean, averaged)."""
    microbatches = data["input.tokens"].shape[0]
    sums, counts = [], []
    for m in range(microbatches):
        total, count = torch.zeros(()), 0
        for b in range(ROWS):
            row = {k: v[m, b] for k, v in data.items()}
            pieces = ([(0, SEQ)] if mutation == "mask-removed" else
                      runs(row["input.documents"].tolist()))
            for start, end in pieces:
                targets = row["label.targets"][start:end]
                real = int((targets != IGNORE).sum())
                if real == 0:  # padding (or a piece with nothing to learn)
                    continue
                positions = (torch.arange(start, end)
                             if mutation == "positions-not-reset" else
                             row["input.positions"][start:end])
                out = logits(params, row["input.tokens"][None, start:end],
                             positions[None])
                total = total + F.cross_entropy(out[0], targets,
                                                ignore_index=IGNORE,
                                                reduction="sum")
                count += real
        sums.append(total)
        counts.append(count)
    step = sum(counts)
    if mutation == "per-microbatch-mean":
        weights = [1.0] * microbatches
    else:
        weights = [microbatches * n / step for n in counts]
    means = [s / n for s, n in zip(sums, counts)]
    loss = sum(w * l for w, l in zip(weights, means)) / microbatches
    return loss, means, weights


def compare(logits, stored, data, mutation):
    """The relative error (max|torch - zbc| / max|zbc|, per tensor) of the
    step's loss, each microbatch's loss and weight and every gradient, by
    zbc-gradients' key."""
    params = {k[len("param."):]: v.clone().requires_grad_(True)
              for k, v in stored.items() if k.startswith("param.")}
    loss, means, weights = reference(logits, params, data, mutation)
    loss.backward()
    errors = {"step.loss": llama.relative(loss.detach(), stored["step.loss"])}
    for m, (mean, weight) in enumerate(zip(means, weights)):
        errors[f"mb{m}.loss"] = llama.relative(mean.detach(),
                                               stored[f"mb{m}.loss"])
        errors[f"mb{m}.weight"] = llama.relative(torch.tensor(weight),
                                                 stored[f"mb{m}.weight"])
    for name, tensor in params.items():
        grad = (tensor.grad if tensor.grad is not None else
                torch.zeros_like(tensor))
        errors["grad." + name] = llama.relative(grad, stored["grad." + name])
    return errors


def worst(errors, prefix=""):
    """The largest error of the keys that start with `prefix`, and its key."""
    where = max((k for k in errors if k.startswith(prefix)), key=errors.get)
    return errors[where], where


def run(command, expect_failure=False):
    result = subprocess.run(command, text=True, capture_output=True,
                            timeout=300)
    if (result.returncode != 0) != expect_failure:
        sys.exit(f"FAILED: {' '.join(command)} exited {result.returncode}:\n"
                 f"{result.stdout}{result.stderr}")
    return result


def refusals(gradients, source, work, data):
    """--data files that zbc-gradients must refuse, with what it says."""
    path = os.path.join(work, "no-documents.safetensors")
    write_safetensors(path, {k: v for k, v in data.items()
                             if k != "input.documents"})
    cases = [
        (["--data", os.path.join(work, "packed.safetensors"),
          "--microbatches", "3"], "--microbatches 3 with --data"),
        (["--data", path], "has no tensor 'input.documents'"),
    ]
    for flags, message in cases:
        result = run([gradients, source, *flags, "-o",
                      os.path.join(work, "refused.safetensors")],
                     expect_failure=True)
        if message not in result.stderr:
            sys.exit(f"FAILED: zbc-gradients {' '.join(flags)} refused "
                     f"without '{message}':\n{result.stderr}")
    print(f"{len(cases)} bad --data uses refused")


def zbc_step(args, name, tool, flags, data_path):
    """zbc-gradients' step of the model `tool` prints with `flags`."""
    source = os.path.join(args.work, name + ".mlir")
    with open(source, "w") as f:
        f.write(run([os.path.join(args.bin, tool), *flags]).stdout)
    out = os.path.join(args.work, name + ".safetensors")
    run([os.path.join(args.bin, "zbc-gradients"), source, "--seed", "5",
         "--data", data_path, "-o", out])
    return source, llama.read_safetensors(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--tolerance", type=float, default=1e-9)
    args = parser.parse_args()
    tolerance = args.tolerance
    os.makedirs(args.work, exist_ok=True)
    data = packed_step()
    data_path = os.path.join(args.work, "packed.safetensors")
    write_safetensors(data_path, data)
    real = [int((t != IGNORE).sum()) for t in data["label.targets"]]
    print(f"packed step: {len(real)} microbatches of {ROWS}x{SEQ} slots, "
          f"{real} real targets")
    stored, logits = {}, {}
    for name, (tool, flags) in MODELS.items():
        source, stored[name] = zbc_step(args, name, tool, flags, data_path)
        for key, value in data.items():  # the microbatches it trained on
            for m in range(value.shape[0]):
                if not torch.equal(stored[name][f"mb{m}.{key}"], value[m]):
                    sys.exit(f"FAILED: {name}: zbc-gradients fed mb{m}.{key} "
                             f"other than sample {m} of --data")
        logits[name] = logits_of(name, flags)
        errors = compare(logits[name], stored[name], data, None)
        error, where = worst(errors)
        grads = sum(k.startswith("grad.") for k in errors)
        print(f"{name}: the step's loss, {len(real)} microbatch losses and "
              f"weights and {grads} gradients agree with each piece run "
              f"alone in PyTorch (float64): largest relative error "
              f"{error:.2e} ({where})")
        if not error <= tolerance:
            sys.exit(f"FAILED: {name}: {where} differs from PyTorch by "
                     f"{error:.2e} (tolerance {tolerance:.0e})")
        # The same model built without --packed (no documents input: every
        # row one causal sequence) on the same file: zbc's own unmasked
        # attention must equal the mask-removed change below, and differ
        # from the packed semantics.
        unmasked = [f for f in flags if f != "--packed"]
        _, plain = zbc_step(args, name + "-unmasked", tool, unmasked,
                            data_path)
        same, where = worst(compare(logits[name], plain, data,
                                    "mask-removed"))
        apart, _ = worst(compare(logits[name], plain, data, None), "grad.")
        print(f"{name} built without --packed: its step equals PyTorch's "
              f"with the mask removed to {same:.2e} ({where}), and differs "
              f"from the packed ones by {apart:.2e}")
        if not same <= tolerance or apart <= tolerance:
            sys.exit(f"FAILED: {name} without --packed: {same:.2e} from the "
                     f"mask removed, {apart:.2e} from the packed semantics")
    refusals(os.path.join(args.bin, "zbc-gradients"),
             os.path.join(args.work, "llama.mlir"), args.work, data)
    # Each change is held to the gradients alone: a change the gradients
    # did not show would leave training as it was.
    asserted = sum(len(v) for v in MUTATION_MODELS.values())
    for mutation in MUTATIONS:
        for name in MODELS:
            errors = compare(logits[name], stored[name], data, mutation)
            error, where = worst(errors)
            grad_error, grad_where = worst(errors, "grad.")
            seen = name in MUTATION_MODELS[mutation]
            print(f"changed {mutation} on {name}: largest relative error "
                  f"{error:.2e} ({where}); of the gradients {grad_error:.2e} "
                  f"({grad_where}), {grad_error / tolerance:.1e} times the "
                  "tolerance"
                  + ("" if seen else " (RoPE is relative: not asserted)"))
            if seen and grad_error <= tolerance:
                sys.exit(f"FAILED: with {mutation}, PyTorch's gradients "
                         f"still agree on {name} ({grad_error:.2e}): the "
                         "test cannot see it")
    print(f"{asserted} of {asserted} changed semantics detected")


if __name__ == "__main__":
    main()
