#!/usr/bin/python3
"""Hugging Face checkpoints in, three AdamW steps on token streams under
three schedules, and out again: each against PyTorch's own training.

Usage: hf_train.py --bin BUILD/bin --work DIR

For a tiny seeded checkpoint of each family written here in Hugging Face's
names and layouts (a Llama 3 with llama3 rope scaling and a tied head; a
Mistral with grouped-query attention sharded over two files; a Qwen2 with
q/k/v biases stored in bf16; a GPT-2, whose head is always tied):

  1. `zbc import-hf` builds the model; `zbc compile` compiles it for 2 ranks
     under a linear (zb-h1, 1f1b), an interleaved (interleaved-1f1b, 2 stages
     per rank) or a V schedule (zb-v), with AdamW;
  2. the ranks train 3 steps from `--init` on a token stream: a .npy written
     by numpy.save (uint16 or int64), or a nanoGPT .bin (uint16, or uint32
     with --data-dtype uint32);
  3. `zbc export-hf` writes config.json and model.safetensors, which must
     hold exactly the checkpoint's names and shapes (a PyTorch module of
     them loads it with load_state_dict(strict=True)), F32, with metadata
     format "pt", a config naming the architecture, model_type and
     torch_dtype;
  4. the first step's loss (before any update: the checkpoint's weights)
     must equal PyTorch's to 1e-5 relative, and every exported tensor must
     equal PyTorch's own training of the same
     model (test/torch/llama_semantics.py's independent Llama, a GPT-2
     written here from transformers' modeling_gpt2) from the same weights
     on the same windows (Note [Token data]'s order, ported below) with
     torch.optim.AdamW, to 3e-5 of the tensor's largest value (the weights
     move by 5e-2 to 1e-1 of it). Why that tolerance: zbc trains in
     float32, PyTorch here in float64, so every gradient carries float32's
     rounding, which AdamW's update m / (sqrt(v) + eps) passes on to the
     weights, most where a gradient is near eps. PyTorch's own float32
     training of the Qwen2 case differs from its float64 by 9.3e-6 (the
     token embedding); zbc's by 1.0e-5, and 9.5e-6 from PyTorch's float32.
     A real difference is far larger: weight decay left off one tensor
     moves it by 3 lr wd = 3e-4 of its scale, a wrong window order by the
     whole update. eps is 1e-4 so that the gradients that are zero in exact
     arithmetic (the key bias: softmax ignores a shift) and are rounding
     noise in both (1e-17 against 1e-9) move no weight by more than
     lr * 1e-5;
  5. the export reloads through --init bit for bit (--save-init of a run
     from it writes the same bytes), and --dtype bf16 writes each f32
     weight rounded to nearest even, as torch's .to(torch.bfloat16);
  6. the same run's last checkpoint exports the same bytes as its --save
     (the optimizer's state left out);
  7. the held-out loss after the last step equals PyTorch's mean over the
     held-out windows that fill whole microbatches, each counted once (the
     evaluation batch is larger: its wrapped microbatches count nothing).

Then export-hf refuses, naming the file: a directory without saved
weights, a --save output missing a rank's file, rank files without a
Hugging Face config (a model not imported), a tied parameter whose two
copies differ, and an output directory holding a sharded checkpoint's
index.
"""
import argparse
import importlib.util
import json
import os
import shutil
import struct
import subprocess
import sys

import numpy
import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def load_module(name):
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(HERE, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


semantics = load_module("llama_semantics")
hf_init = load_module("hf_init")

torch.set_default_dtype(torch.float64)

SEQ, BATCH, MICROBATCHES, STEPS = 8, 2, 4, 3
LR, EPS, WEIGHT_DECAY = 1e-2, 1e-4, 0.01
TOLERANCE = 3e-5

CONFIGS = {
    "llama3-tied": hf_init.CONFIGS["llama3-tied"],
    "mistral-gqa": {
        "architectures": ["MistralForCausalLM"], "hidden_size": 32,
        "intermediate_size": 40, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 1,
        "vocab_size": 50, "max_position_embeddings": 64,
        "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "sliding_window": 4096,
        "tie_word_embeddings": False, "hidden_act": "silu"},
    "qwen2-bias": hf_init.CONFIGS["qwen2-bias"],
    "gpt2": {
        "architectures": ["GPT2LMHeadModel"], "n_embd": 24, "n_layer": 2,
        "n_head": 3, "n_positions": 32, "vocab_size": 70,
        "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new",
        "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0},
}

# (config, checkpoint layout, stored dtype, schedule, extra compile options,
#  token stream: extension and dtype)
CASES = [
    ("llama3-tied", "single", "F32", "zb-h1", [], (".npy", numpy.uint16)),
    ("mistral-gqa", "sharded", "F32", "interleaved-1f1b", ["--virtual", "2"],
     (".bin", numpy.uint16)),
    ("qwen2-bias", "single", "BF16", "zb-v", [], (".npy", numpy.int64)),
    ("gpt2", "single", "F32", "1f1b", [], (".bin", numpy.uint32)),
]


# --- Note [Token data]'s window order, ported ----------------------------

M64 = (1 << 64) - 1


def splitmix64(x):
    x = (x + 0x9e3779b97f4a7c15) & M64
    x = ((x ^ (x >> 30)) * 0xbf58476d1ce4e5b9) & M64
    x = ((x ^ (x >> 27)) * 0x94d049bb133111eb) & M64
    return x ^ (x >> 31)


def keyed_permutation(x, n, key):
    bits = 2
    while (1 << bits) < n:
        bits += 2
    half = bits // 2
    mask = (1 << half) - 1
    while True:
        left, right = x >> half, x & mask
        for round_ in range(4):
            left, right = right, left ^ (splitmix64(right ^ key ^
                                                    (round_ << 56)) & mask)
        x = (left << half) | right
        if x < n:
            return x


def window_starts(tokens, seed, step):
    """The first token of each row's window of training step `step`, by
    microbatch: [[row 0, row 1], ...]."""
    held_out = max(tokens // 10, SEQ + 1)
    windows = tokens - held_out - SEQ
    starts = []
    for j in range(MICROBATCHES):
        row = []
        for r in range(BATCH):
            g = (step * MICROBATCHES + j) * BATCH + r
            epoch = g // windows
            key = splitmix64(splitmix64(seed) ^
                             ((epoch * 0x9e3779b97f4a7c15) & M64))
            row.append(keyed_permutation(g % windows, windows, key))
        starts.append(row)
    return starts


# --- GPT-2, from transformers' modeling_gpt2 ------------------------------

def layer_norm(x, p, name, eps):
    return torch.nn.functional.layer_norm(x, x.shape[-1:], p[name + ".weight"],
                                          p[name + ".bias"], eps)


def conv1d(x, p, name):  # transformers' Conv1D: x @ W + b, W [in, out]
    return x @ p[name + ".weight"] + p[name + ".bias"]


def gelu_new(x):
    return 0.5 * x * (1 + torch.tanh((2 / torch.pi) ** 0.5 *
                                     (x + 0.044715 * x ** 3)))


def gpt2_loss(c, p, tokens, positions, targets):
    B, S = tokens.shape
    h, heads, eps = c["n_embd"], c["n_head"], c["layer_norm_epsilon"]
    d = h // heads
    x = p["transformer.wte.weight"][tokens] + p["transformer.wpe.weight"][positions]
    mask = torch.full((S, S), float("-inf")).triu(1)
    for layer in range(c["n_layer"]):
        n = f"transformer.h.{layer}."
        qkv = conv1d(layer_norm(x, p, n + "ln_1", eps), p, n + "attn.c_attn")
        q, k, v = (t.view(B, S, heads, d).transpose(1, 2)
                   for t in qkv.split(h, dim=-1))
        attn = torch.softmax(q @ k.transpose(2, 3) / d ** 0.5 + mask, -1) @ v
        x = x + conv1d(attn.transpose(1, 2).reshape(B, S, h), p,
                       n + "attn.c_proj")
        inner = conv1d(layer_norm(x, p, n + "ln_2", eps), p, n + "mlp.c_fc")
        x = x + conv1d(gelu_new(inner), p, n + "mlp.c_proj")
    x = layer_norm(x, p, "transformer.ln_f", eps)
    logits = x @ p["transformer.wte.weight"].T
    return torch.nn.functional.cross_entropy(logits.reshape(B * S, -1),
                                             targets.reshape(-1))


def gpt2_state_dict(c, generator):
    """GPT2LMHeadModel's checkpoint tensors (Conv1D weights [in, out]; the
    head is wte, stored once)."""
    h, inner, vocab = c["n_embd"], 4 * c["n_embd"], c["vocab_size"]

    def normal(*shape):
        return torch.randn(*shape, generator=generator) * 0.2

    state = {"transformer.wte.weight": normal(vocab, h),
             "transformer.wpe.weight": normal(c["n_positions"], h),
             "transformer.ln_f.weight": 1 + normal(h),
             "transformer.ln_f.bias": normal(h)}
    for i in range(c["n_layer"]):
        n = f"transformer.h.{i}."
        for name, shape in (("ln_1", (h,)), ("ln_2", (h,))):
            state[n + name + ".weight"] = 1 + normal(*shape)
            state[n + name + ".bias"] = normal(*shape)
        for name, (a, b) in (("attn.c_attn", (h, 3 * h)),
                             ("attn.c_proj", (h, h)),
                             ("mlp.c_fc", (h, inner)),
                             ("mlp.c_proj", (inner, h))):
            state[n + name + ".weight"] = normal(a, b)
            state[n + name + ".bias"] = normal(b)
    return state


# --- files -----------------------------------------------------------------

def read_safetensors(path):
    """({name: float64 tensor}, {name: dtype}, {name: raw bytes}, metadata)."""
    with open(path, "rb") as f:
        data = f.read()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    metadata = header.pop("__metadata__", {})
    base = 8 + size
    tensors, dtypes, raw = {}, {}, {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        blob = data[base + begin:base + end]
        if info["dtype"] == "F32":
            t = torch.frombuffer(bytearray(blob), dtype=torch.float32)
        else:
            t = torch.frombuffer(bytearray(blob), dtype=torch.bfloat16)
        tensors[name] = t.reshape(info["shape"]).to(torch.float64)
        dtypes[name], raw[name] = info["dtype"], blob
    return tensors, dtypes, raw, metadata


def write_stream(path, ids, dtype):
    """A token stream: numpy.save for .npy, raw little-endian for .bin."""
    array = numpy.asarray(ids, dtype=dtype)
    if path.endswith(".npy"):
        numpy.save(path, array)
    else:
        array.astype(array.dtype.newbyteorder("<")).tofile(path)


def run(command):
    result = subprocess.run(command, capture_output=True, text=True,
                            timeout=300)
    if result.returncode != 0:
        sys.exit(f"FAILED: {' '.join(command)}\n{result.stdout}{result.stderr}")
    return result.stdout + result.stderr


def write_checkpoint(hf, state, layout, dtype):
    os.makedirs(hf, exist_ok=True)
    if layout == "single":
        hf_init.write_safetensors(os.path.join(hf, "model.safetensors"), state,
                                  dtype)
        return
    names = sorted(state)
    halves = {"model-00001-of-00002.safetensors": names[::2],
              "model-00002-of-00002.safetensors": names[1::2]}
    weight_map = {}
    for file, part in halves.items():
        hf_init.write_safetensors(os.path.join(hf, file),
                                  {n: state[n] for n in part}, dtype)
        weight_map.update({n: file for n in part})
    with open(os.path.join(hf, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f)


def microbatch_loss(name, config, params, ids, rows):
    """The model's loss on the windows starting at `rows` of `ids`."""
    positions = torch.arange(SEQ).expand(len(rows), SEQ)
    tokens = torch.stack([ids[s:s + SEQ] for s in rows])
    targets = torch.stack([ids[s + 1:s + SEQ + 1] for s in rows])
    if name == "gpt2":
        return gpt2_loss(config, params, tokens, positions, targets)
    return semantics.llama_loss(hf_init.semantics_config(config), params,
                                tokens, positions, targets, None)


def held_out_loss(name, config, params, stream):
    """The mean loss over the held-out tenth's whole microbatches of
    windows, each window once (Note [Token data])."""
    held = max(len(stream) // 10, SEQ + 1)
    first = len(stream) - held
    windows = (held - 1) // SEQ
    ids = torch.tensor(stream, dtype=torch.int64)
    with torch.no_grad():
        losses = [microbatch_loss(name, config, params, ids,
                                  [first + (j * BATCH + r) * SEQ
                                   for r in range(BATCH)]).item()
                  for j in range(windows // BATCH)]
    return sum(losses) / len(losses)


def torch_training(name, config, state, stream):
    """PyTorch's own 3 AdamW steps from `state` on the ranks' windows: the
    weights after them, and each step's loss (before its update)."""
    params = {k: v.clone().requires_grad_(True) for k, v in state.items()}
    optimizer = torch.optim.AdamW(params.values(), lr=LR, betas=(0.9, 0.999),
                                  eps=EPS, weight_decay=WEIGHT_DECAY)
    ids = torch.tensor(stream, dtype=torch.int64)
    losses = []
    for step in range(STEPS):
        optimizer.zero_grad()
        total = 0
        for rows in window_starts(len(stream), 0, step):
            total = total + microbatch_loss(name, config, params, ids, rows)
        (total / MICROBATCHES).backward()
        losses.append(total.item() / MICROBATCHES)
        optimizer.step()
    return {k: v.detach() for k, v in params.items()}, losses


def strict_load(state, exported):
    """A PyTorch module whose parameters are the checkpoint's (names and
    shapes) loads the export with strict=True."""
    module = torch.nn.Module()
    for name, tensor in state.items():
        owner = module
        *path, leaf = name.split(".")
        for part in path:
            if not hasattr(owner, part):
                owner.add_module(part, torch.nn.Module())
            owner = getattr(owner, part)
        owner.register_parameter(leaf, torch.nn.Parameter(
            torch.empty(tensor.shape, dtype=torch.float32)))
    module.load_state_dict({k: v.to(torch.float32) for k, v in exported.items()},
                           strict=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    zbc = os.path.join(args.bin, "zbc")
    generator = torch.Generator().manual_seed(24)
    for name, layout, dtype, schedule, options, (ext, ids_dtype) in CASES:
        config = CONFIGS[name]
        work = os.path.join(args.work, name)
        shutil.rmtree(work, ignore_errors=True)  # a rerun starts afresh
        hf = os.path.join(work, "hf")
        state = (gpt2_state_dict(config, generator) if name == "gpt2"
                 else hf_init.hf_state_dict(config, generator))
        write_checkpoint(hf, state, layout, dtype)
        with open(os.path.join(hf, "config.json"), "w") as f:
            json.dump(config, f)
        if dtype == "BF16":  # what the model starts from: the bf16 values
            state = {k: v.to(torch.bfloat16).to(torch.float64)
                     for k, v in state.items()}
        model = os.path.join(work, "model.mlir")
        run([zbc, "import-hf", hf, "-o", model, "--seq-len", str(SEQ),
             "--microbatch-size", str(BATCH)])
        out = os.path.join(work, "out")
        run([zbc, "compile", model, "--ranks", "2", "--microbatches",
             str(MICROBATCHES), "--schedule", schedule, *options,
             "--optimizer", "adamw", "-o", out])

        stream_ids = torch.randint(0, config["vocab_size"], (300,),
                                   generator=generator).tolist()
        stream = os.path.join(work, "tokens" + ext)
        write_stream(stream, stream_ids, ids_dtype)
        data = ["--data", stream]
        if ids_dtype == numpy.uint32 and ext == ".bin":
            data += ["--data-dtype", "uint32"]
        saved = os.path.join(work, "saved")
        report = os.path.join(work, "report")
        checkpoints = os.path.join(work, "checkpoints")
        said = run([os.path.join(out, "launch.sh"), "--init", hf, *data,
                    "--steps", str(STEPS), "--lr", str(LR), "--eps", str(EPS),
                    "--weight-decay", str(WEIGHT_DECAY), "--save", saved,
                    "--eval-every", str(STEPS),
                    "--checkpoint-every", str(STEPS), "--checkpoint-dir",
                    checkpoints, "--report", report])
        reports = [json.load(open(os.path.join(report, f)))
                   for f in sorted(os.listdir(report)) if f.endswith(".json")]
        zbc_losses = next(r["losses"] for r in reports if r.get("losses"))
        # Each rank read its own tensors: together the checkpoint once, and
        # the tied embedding once more (on the first and the last rank).
        stored = sum(t.numel() * (2 if dtype == "BF16" else 4)
                     for t in state.values())
        tied = (config.get("tie_word_embeddings", False) or name == "gpt2")
        embedding = "transformer.wte.weight" if name == "gpt2" else \
            "model.embed_tokens.weight"
        want_read = stored + (state[embedding].numel() *
                              (2 if dtype == "BF16" else 4) if tied else 0)
        read = [r["init"]["bytes"] for r in reports]
        if sum(read) != want_read or max(read) >= stored:
            sys.exit(f"FAILED: {name}: the ranks read {read} bytes of the "
                     f"checkpoint's {stored} (want {want_read} in all, each "
                     f"rank its share)")
        data_line = next(l for l in said.splitlines() if l.startswith("data:"))

        exported = os.path.join(work, "exported")
        run([zbc, "export-hf", saved, "-o", exported])
        got, dtypes, raw, metadata = read_safetensors(
            os.path.join(exported, "model.safetensors"))
        with open(os.path.join(exported, "config.json")) as f:
            written = json.load(f)
        want_config = dict(config, torch_dtype="float32")
        want_config.setdefault("model_type", {
            "LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral",
            "Qwen2ForCausalLM": "qwen2",
            "GPT2LMHeadModel": "gpt2"}[config["architectures"][0]])
        if written != want_config:
            sys.exit(f"FAILED: {name}: config.json is {written}, want "
                     f"{want_config}")
        if metadata.get("format") != "pt" or set(dtypes.values()) != {"F32"}:
            sys.exit(f"FAILED: {name}: metadata {metadata}, dtypes "
                     f"{set(dtypes.values())}: want format 'pt' and F32")
        strict_load(state, got)

        want, torch_losses = torch_training(name, config, state, stream_ids)
        # The first step's loss is computed before any update: the
        # checkpoint's weights on the stream's first windows.
        first_error = abs(zbc_losses[0] - torch_losses[0]) / torch_losses[0]
        print(f"{name}: losses {', '.join(f'{l:.6f}' for l in zbc_losses)} "
              f"(PyTorch: {', '.join(f'{l:.6f}' for l in torch_losses)}); "
              f"the first differs by {first_error:.1e}", flush=True)
        if not first_error <= 1e-5:
            sys.exit(f"FAILED: {name}: the first step's loss differs from "
                     f"PyTorch's by {first_error:.1e} (tolerance 1e-5)")
        # The held-out loss after the last step, from PyTorch's weights:
        # the held-out windows that fill whole microbatches, each once (the
        # evaluation batch of 4 microbatches wraps around past them).
        zbc_eval = next(r["evals"] for r in reports if r.get("evals"))[-1][1]
        torch_eval = held_out_loss(name, config, want, stream_ids)
        eval_error = abs(zbc_eval - torch_eval) / torch_eval
        print(f"{name}: held-out loss {zbc_eval:.6f} (PyTorch "
              f"{torch_eval:.6f}, differs by {eval_error:.1e})", flush=True)
        if not eval_error <= 1e-5:
            sys.exit(f"FAILED: {name}: the held-out loss {zbc_eval} differs "
                     f"from the mean over the held-out windows, "
                     f"{torch_eval}, by {eval_error:.1e}")
        worst, where = 0.0, ""
        for key, tensor in want.items():
            error = ((got[key] - tensor).abs().max() /
                     tensor.abs().max().clamp_min(1e-30)).item()
            if error > worst:
                worst, where = error, key
        moved = max(((want[k] - state[k]).abs().max() /
                     state[k].abs().max()).item() for k in want)
        print(f"{name} ({layout}, {dtype} checkpoint; {schedule}; "
              f"{os.path.basename(stream)} {numpy.dtype(ids_dtype).name}): "
              f"{len(got)} tensors after {STEPS} AdamW steps (the weights "
              f"moved by up to {moved:.1e} of their scale) equal PyTorch's "
              f"to {worst:.1e} (worst: {where}); {data_line}", flush=True)
        if not worst <= TOLERANCE:
            sys.exit(f"FAILED: {name}: '{where}' differs from PyTorch's "
                     f"training by {worst:.1e} of its scale (tolerance "
                     f"{TOLERANCE})")

        # The export reloads through --init bit for bit.
        reloaded = os.path.join(work, "reloaded")
        run([os.path.join(out, "launch.sh"), "--init", exported, *data,
             "--steps", "1", "--lr", "0", "--quiet", "--save-init", reloaded])
        for rank_file in sorted(os.listdir(reloaded)):
            _, _, again, _ = read_safetensors(os.path.join(reloaded, rank_file))
            for key, blob in again.items():
                if blob != raw[key]:
                    sys.exit(f"FAILED: {name}: '{key}' read back through "
                             f"--init differs from the export")
        # bf16: each f32 weight rounded to nearest even, as torch rounds.
        exported16 = os.path.join(work, "exported-bf16")
        run([zbc, "export-hf", saved, "-o", exported16, "--dtype", "bf16"])
        got16, dtypes16, _, _ = read_safetensors(
            os.path.join(exported16, "model.safetensors"))
        for key, tensor in got.items():
            if dtypes16[key] != "BF16" or not torch.equal(
                    got16[key], tensor.to(torch.float32).to(torch.bfloat16)
                    .to(torch.float64)):
                sys.exit(f"FAILED: {name}: --dtype bf16 wrote '{key}' as "
                         f"{dtypes16[key]}, not torch's bf16 rounding")
        # The checkpoint of the same step exports the same bytes.
        from_checkpoint = os.path.join(work, "exported-checkpoint")
        run([zbc, "export-hf", checkpoints, "-o", from_checkpoint])
        for file in ("config.json", "model.safetensors"):
            with open(os.path.join(exported, file), "rb") as a, \
                    open(os.path.join(from_checkpoint, file), "rb") as b:
                if a.read() != b.read():
                    sys.exit(f"FAILED: {name}: {file} exported from the "
                             f"checkpoint differs from the --save export")
        print(f"  the export reloads through --init bit for bit and loads "
              f"with strict=True; --dtype bf16 rounds as torch does; the "
              f"step-{STEPS} checkpoint exports the same bytes", flush=True)
        if name == "llama3-tied":
            refusals(zbc, args.work, saved)


def rewrite(path, change):
    """Rewrites a safetensors file, `change`(header, data) -> (header, data)."""
    with open(path, "rb") as f:
        blob = f.read()
    (size,) = struct.unpack("<Q", blob[:8])
    header, data = change(json.loads(blob[8:8 + size]), blob[8 + size:])
    hf_init.write_raw(path, header, data)


def refusals(zbc, work, saved):
    """export-hf's refusals, each naming the file and what is wrong."""
    bad = os.path.join(work, "export-refusals")
    shutil.rmtree(bad, ignore_errors=True)
    os.makedirs(bad)

    def variant(case, change=None, drop=None):
        d = os.path.join(bad, case)
        shutil.copytree(saved, d)
        if drop:
            os.remove(os.path.join(d, drop))
        if change:
            rewrite(os.path.join(d, "rank1.safetensors"), change)
        return d

    def no_config(header, data):
        header["__metadata__"].pop("hf_config")
        return header, data

    def untied(header, data):
        begin = header["model.embed_tokens.weight"]["data_offsets"][0]
        flipped = bytes([data[begin] ^ 1])
        return header, data[:begin] + flipped + data[begin + 1:]

    indexed = os.path.join(bad, "indexed-output")
    os.makedirs(indexed)
    open(os.path.join(indexed, "model.safetensors.index.json"), "w").close()
    cases = [
        (os.path.join(bad, "nothing"), None,
         "holds neither a checkpoint (manifest.json"),
        (variant("missing-rank", drop="rank1.safetensors"), None,
         "was saved by a run of 2 ranks: rank1.safetensors is missing"),
        (variant("no-config", no_config), None,
         "rank1.safetensors' and "),
        (variant("untied", untied), None,
         "hold different values of the tied parameter "
         "'model.embed_tokens.weight'"),
        (saved, indexed, "holds model.safetensors.index.json"),
    ]
    os.makedirs(cases[0][0])
    for source, output, needle in cases:
        result = subprocess.run(
            [zbc, "export-hf", source, "-o",
             output or os.path.join(bad, "out")],
            capture_output=True, text=True, timeout=60)
        said = result.stdout + result.stderr
        if result.returncode != 1 or needle not in said:
            sys.exit(f"FAILED: export-hf {source}: want exit 1 and "
                     f"'{needle}'; got exit {result.returncode}:\n{said}")
        print(f"refused: {said.strip()}", flush=True)
    # rank files of a model that was not imported: no config at all.
    d = variant("not-imported", no_config)
    rewrite(os.path.join(d, "rank0.safetensors"), no_config)
    result = subprocess.run([zbc, "export-hf", d, "-o",
                             os.path.join(bad, "out")],
                            capture_output=True, text=True, timeout=60)
    if result.returncode != 1 or "has no Hugging Face config" not in \
            result.stderr:
        sys.exit(f"FAILED: export-hf of a model not imported: "
                 f"{result.returncode}\n{result.stderr}")
    print(f"refused: {result.stderr.strip()}", flush=True)


if __name__ == "__main__":
    main()
