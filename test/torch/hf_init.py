#!/usr/bin/python3
"""--init from Hugging Face checkpoints, against PyTorch.

Usage: hf_init.py --bin BUILD/bin --work DIR

For tiny seeded checkpoints written here in Hugging Face's names and layouts
(config.json + model.safetensors; a Llama 3 with llama3 rope scaling and a
tied head; the same sharded over two files with an index; a Qwen2 with q/k/v
biases stored in bf16), `zbc import-hf` builds the model, `zbc run --init`
trains one step at learning rate 0 on a data file of 4 samples, and the
step's loss (the mean over the 4 microbatches, before any update) must
equal the independent PyTorch implementation of test/torch/llama_semantics.py
on the same weights and data to 1e-5 relative (float32 against float64:
the f32 rounding of a two-layer model). bf16 weights are widened exactly, so
PyTorch reads the same values.

Then each bad checkpoint is refused before the first step, with the tensor
and the file named: a missing tensor, a shape mismatch, an integer dtype, a
header whose offsets lie, a truncated file, a shard missing from the index,
--init together with --resume, and (zbc run, before any rank starts) a
tensor that is not a parameter of the model. The rotary_emb.inv_freq buffers
of checkpoints saved by transformers before 4.31 are skipped with a note.
"""
import argparse
import importlib.util
import json
import os
import struct
import subprocess
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "llama_semantics", os.path.join(HERE, "llama_semantics.py"))
semantics = importlib.util.module_from_spec(spec)
spec.loader.exec_module(semantics)

torch.set_default_dtype(torch.float64)

CONFIGS = {
    "llama3-tied": {
        "architectures": ["LlamaForCausalLM"], "hidden_size": 32,
        "intermediate_size": 48, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2,
        "vocab_size": 40, "max_position_embeddings": 64,
        "rms_norm_eps": 1e-5, "rope_theta": 100.0,
        "rope_scaling": {"rope_type": "llama3", "factor": 8.0,
                         "low_freq_factor": 1.0, "high_freq_factor": 8.0,
                         "original_max_position_embeddings": 64},
        "tie_word_embeddings": True, "hidden_act": "silu"},
    "qwen2-bias": {
        "architectures": ["Qwen2ForCausalLM"], "hidden_size": 24,
        "intermediate_size": 40, "num_hidden_layers": 2,
        "num_attention_heads": 3, "num_key_value_heads": 1,
        "vocab_size": 30, "max_position_embeddings": 64,
        "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
        "tie_word_embeddings": False, "hidden_act": "silu"},
}
SEQ, BATCH, SAMPLES = 8, 2, 4


def hf_state_dict(config, generator):
    """The tensors transformers' LlamaForCausalLM / Qwen2ForCausalLM has, by
    name, as its checkpoints store them ([out, in] weights)."""
    h, inter = config["hidden_size"], config["intermediate_size"]
    heads, kv = config["num_attention_heads"], config["num_key_value_heads"]
    d = h // heads
    qwen2 = config["architectures"][0] == "Qwen2ForCausalLM"

    def normal(*shape):
        return torch.randn(*shape, generator=generator) * 0.2

    state = {"model.embed_tokens.weight": normal(config["vocab_size"], h),
             "model.norm.weight": 1 + normal(h)}
    for i in range(config["num_hidden_layers"]):
        n = f"model.layers.{i}."
        state.update({
            n + "input_layernorm.weight": 1 + normal(h),
            n + "self_attn.q_proj.weight": normal(heads * d, h),
            n + "self_attn.k_proj.weight": normal(kv * d, h),
            n + "self_attn.v_proj.weight": normal(kv * d, h),
            n + "self_attn.o_proj.weight": normal(h, heads * d),
            n + "post_attention_layernorm.weight": 1 + normal(h),
            n + "mlp.gate_proj.weight": normal(inter, h),
            n + "mlp.up_proj.weight": normal(inter, h),
            n + "mlp.down_proj.weight": normal(h, inter)})
        if qwen2:
            for proj, width in (("q", heads * d), ("k", kv * d), ("v", kv * d)):
                state[n + f"self_attn.{proj}_proj.bias"] = normal(width)
    if not config.get("tie_word_embeddings", False):
        state["lm_head.weight"] = normal(config["vocab_size"], h)
    return state


def bf16_bits(t):
    """bf16 bits of t (round to nearest even, as torch does)."""
    return t.to(torch.bfloat16).view(torch.int16).flatten().tolist()


def write_safetensors(path, tensors, dtype="F32"):
    """tensors: name -> float64 tensor, stored as F32 or BF16 (or I64 for
    the bad cases); returns the header it wrote."""
    header, blobs, offset = {}, [], 0
    for name, t in sorted(tensors.items()):
        if dtype == "F32":
            blob = struct.pack(f"<{t.numel()}f", *t.flatten().tolist())
        elif dtype == "BF16":
            blob = struct.pack(f"<{t.numel()}h", *bf16_bits(t))
        else:
            blob = struct.pack(f"<{t.numel()}q",
                               *[int(x) for x in t.flatten().tolist()])
        header[name] = {"dtype": dtype, "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    write_raw(path, header, b"".join(blobs))
    return header


def write_raw(path, header, data):
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def write_data(path, vocab, generator):
    """SAMPLES microbatches of tokens, positions 0..SEQ-1 and targets."""
    tokens = torch.randint(0, vocab, (SAMPLES, BATCH, SEQ), generator=generator)
    targets = torch.randint(0, vocab, (SAMPLES, BATCH, SEQ), generator=generator)
    positions = torch.arange(SEQ).expand(SAMPLES, BATCH, SEQ)
    header, blobs, offset = {}, [], 0
    for name, t in (("input.tokens", tokens), ("input.positions", positions),
                    ("label.targets", targets)):
        blob = struct.pack(f"<{t.numel()}q", *t.flatten().tolist())
        header[name] = {"dtype": "I64", "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    write_raw(path, header, b"".join(blobs))
    return tokens, positions, targets


def semantics_config(config):
    """llama_semantics' config dict for a config.json."""
    scaling = config.get("rope_scaling")
    return {"hidden": config["hidden_size"],
            "intermediate": config["intermediate_size"],
            "layers": config["num_hidden_layers"],
            "heads": config["num_attention_heads"],
            "kv_heads": config["num_key_value_heads"],
            "head_dim": config["hidden_size"] // config["num_attention_heads"],
            "vocab": config["vocab_size"], "theta": config["rope_theta"],
            "llama3": None if not scaling else (
                scaling["factor"], scaling["low_freq_factor"],
                scaling["high_freq_factor"],
                scaling["original_max_position_embeddings"]),
            "eps": config["rms_norm_eps"],
            "tied": config.get("tie_word_embeddings", False),
            "bias": config["architectures"][0] == "Qwen2ForCausalLM"}


def run(command, expect_ok=True):
    result = subprocess.run(command, capture_output=True, text=True,
                            timeout=300)
    if expect_ok and result.returncode != 0:
        sys.exit(f"FAILED: {' '.join(command)}\n{result.stdout}{result.stderr}")
    return result


def compile_model(args, model, out):
    run([os.path.join(args.bin, "zbc"), "compile", model, "--ranks", "2",
         "--microbatches", str(SAMPLES), "--schedule", "1f1b", "-o", out])


def zbc_loss(out, init, data, work):
    """The loss the ranks' first step reports with --init at learning rate
    0 (the ranks' own option, as launch.sh passes it)."""
    report = os.path.join(work, "report")
    run([os.path.join(out, "launch.sh"), "--init", init, "--data", data,
         "--steps", "1", "--lr", "0", "--quiet", "--report", report])
    reports = [json.load(open(os.path.join(report, f)))
               for f in sorted(os.listdir(report)) if f.endswith(".json")]
    return next(r["losses"][0] for r in reports if r.get("losses"))


def expect_refused(out, init, data, needles, extra=()):
    result = run([os.path.join(out, "launch.sh"), "--init", init, "--data",
                  data, "--steps", "1", *extra], expect_ok=False)
    said = result.stdout + result.stderr
    if result.returncode == 0 or any(n not in said for n in needles) or \
            "step 1 " in said:
        sys.exit(f"FAILED: {init} should be refused before the first step "
                 f"naming {needles}; zbc said:\n{said}")
    line = next((l for l in said.splitlines() if needles[0] in l), "")
    print(f"refused: {line.strip()}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    generator = torch.Generator().manual_seed(5)
    cases = [("llama3-tied", "single", "F32"), ("llama3-tied", "sharded", "F32"),
             ("qwen2-bias", "single", "BF16")]
    for name, layout, dtype in cases:
        config = CONFIGS[name]
        work = os.path.join(args.work, f"{name}-{layout}-{dtype}")
        hf = os.path.join(work, "hf")
        os.makedirs(hf, exist_ok=True)
        with open(os.path.join(hf, "config.json"), "w") as f:
            json.dump(config, f)
        state = hf_state_dict(config, generator)
        if layout == "single":
            write_safetensors(os.path.join(hf, "model.safetensors"), state,
                              dtype)
        else:
            names = sorted(state)
            halves = {"model-00001-of-00002.safetensors": names[::2],
                      "model-00002-of-00002.safetensors": names[1::2]}
            weight_map = {}
            for file, part in halves.items():
                write_safetensors(os.path.join(hf, file),
                                  {n: state[n] for n in part}, dtype)
                weight_map.update({n: file for n in part})
            with open(os.path.join(hf, "model.safetensors.index.json"),
                      "w") as f:
                json.dump({"metadata": {"total_size": 0},
                           "weight_map": weight_map}, f)
        if dtype == "BF16":  # what the model reads: the bf16 values
            state = {k: v.to(torch.bfloat16).to(torch.float64)
                     for k, v in state.items()}
        model = os.path.join(work, "model.mlir")
        run([os.path.join(args.bin, "zbc"), "import-hf", hf, "-o", model,
             "--seq-len", str(SEQ), "--microbatch-size", str(BATCH)])
        data = os.path.join(work, "data.safetensors")
        tokens, positions, targets = write_data(data, config["vocab_size"],
                                                generator)
        out = os.path.join(work, "out")
        compile_model(args, model, out)
        got = zbc_loss(out, hf, data, work)
        c = semantics_config(config)
        want = sum(semantics.llama_loss(c, state, tokens[i], positions[i],
                                        targets[i], None).item()
                   for i in range(SAMPLES)) / SAMPLES
        error = abs(got - want) / abs(want)
        print(f"{name} ({layout}, {dtype}): zbc's first loss {got:.7f}, "
              f"PyTorch's {want:.7f}: relative error {error:.1e}")
        if not error <= 1e-5:
            sys.exit(f"FAILED: {name}: the loss differs from PyTorch's by "
                     f"{error:.1e} (tolerance 1e-5)")

    # Bad checkpoints, on the last case's model and data.
    bad = os.path.join(args.work, "bad")
    os.makedirs(bad, exist_ok=True)
    q = "model.layers.0.self_attn.q_proj.weight"
    cases = {
        "missing": ({k: v for k, v in state.items() if k != q}, None,
                    [f"tensor '{q}' is missing from", "missing.safetensors"]),
        "shape": ({**state, q: state[q][:, :-1]}, None,
                  [f"tensor '{q}' in", "shape.safetensors", "is [24, 23], "
                   "the model's parameter is [24, 24]"]),
        "dtype": (state, "I64", ["dtype I64; --init reads F32, BF16 and F16"]),
    }
    for case, (tensors, dtype, needles) in cases.items():
        path = os.path.join(bad, case + ".safetensors")
        write_safetensors(path, tensors, dtype or "F32")
        expect_refused(out, path, data, needles)
    # A header that lies about its offsets, and a truncated file.
    good = os.path.join(bad, "good.safetensors")
    header = write_safetensors(good, state)
    with open(good, "rb") as f:
        blob = f.read()
    (length,) = struct.unpack("<Q", blob[:8])
    data_bytes = blob[8 + length:]
    lying = dict(header)
    lying[q] = dict(header[q], data_offsets=[header[q]["data_offsets"][0],
                                              header[q]["data_offsets"][1] + 4])
    write_raw(os.path.join(bad, "lying.safetensors"), lying, data_bytes)
    expect_refused(out, os.path.join(bad, "lying.safetensors"), data,
                   [f"tensor '{q}' claims bytes", "lying.safetensors"])
    with open(os.path.join(bad, "truncated.safetensors"), "wb") as f:
        f.write(blob[:len(blob) - 100])
    expect_refused(out, os.path.join(bad, "truncated.safetensors"), data,
                   ["truncated.safetensors", "truncated or corrupt"])
    index_dir = os.path.join(bad, "index")
    os.makedirs(index_dir, exist_ok=True)
    write_safetensors(os.path.join(index_dir, "a.safetensors"), state)
    with open(os.path.join(index_dir, "model.safetensors.index.json"), "w") as f:
        json.dump({"weight_map": {k: "a.safetensors" for k in state
                                  if k != q}}, f)
    expect_refused(out, index_dir, data,
                   [f"tensor '{q}' is not in the weight_map of",
                    "model.safetensors.index.json"])
    expect_refused(out, good, data,
                   ["--init and --resume both set the parameters"],
                   extra=["--resume", bad])
    # zbc run checks the whole checkpoint against the model before any rank
    # starts: a tensor the model lacks is named (layers left out by
    # import-hf --layers are not: the next case trains on them).
    extra = os.path.join(bad, "extra.safetensors")
    write_safetensors(extra, {**state, "model.layers.0.mlp.extra": state[q]})
    result = run([os.path.join(args.bin, "zbc"), "run", model, "--ranks", "2",
                  "--microbatches", str(SAMPLES), "--init", extra, "--data",
                  data, "--steps", "1", "-o", os.path.join(bad, "run-out")],
                 expect_ok=False)
    needle = ("--init: tensor 'model.layers.0.mlp.extra' in '" + extra +
              "' is not a parameter of model")
    if result.returncode == 0 or needle not in result.stderr:
        sys.exit(f"FAILED: an unexpected tensor was not named:\n"
                 f"{result.stdout}{result.stderr}")
    print(f"refused: {needle}")
    one_layer = os.path.join(bad, "one-layer.mlir")
    run([os.path.join(args.bin, "zbc"), "import-hf", hf, "-o", one_layer,
         "--seq-len", str(SEQ), "--microbatch-size", str(BATCH), "--layers",
         "1"])
    run([os.path.join(args.bin, "zbc"), "run", one_layer, "--ranks", "2",
         "--microbatches", str(SAMPLES), "--init", good, "--data", data,
         "--steps", "2", "-o", os.path.join(bad, "one-layer-out")])
    # A checkpoint saved by transformers before 4.31 holds each layer's
    # rotary_emb.inv_freq buffer, which transformers ignores on load: zbc run
    # skips them with a note, and the ranks (launch.sh) read the same
    # parameters as from the checkpoint without them.
    old = os.path.join(bad, "inv-freq.safetensors")
    head_dim = config["hidden_size"] // config["num_attention_heads"]
    write_safetensors(old, {**state, **{
        f"model.layers.{i}.self_attn.rotary_emb.inv_freq":
            torch.rand(head_dim // 2, dtype=torch.float64)
        for i in range(config["num_hidden_layers"])}})
    result = run([os.path.join(args.bin, "zbc"), "run", model, "--ranks", "2",
                  "--microbatches", str(SAMPLES), "--init", old, "--data",
                  data, "--steps", "1", "-o", os.path.join(bad, "inv-freq-out")])
    note = (f"zbc: note: --init: skipped {config['num_hidden_layers']} "
            "buffers named *.rotary_emb.inv_freq")
    if note not in result.stderr:
        sys.exit(f"FAILED: no note on the skipped inv_freq buffers:\n"
                 f"{result.stdout}{result.stderr}")
    print(f"skipped: {note}")
    with_buffers = zbc_loss(out, old, data, os.path.join(bad, "inv-freq"))
    without = zbc_loss(out, good, data, os.path.join(bad, "good"))
    if with_buffers != without:
        sys.exit(f"FAILED: the ranks' first loss with the inv_freq buffers, "
                 f"{with_buffers}, is not the loss without them, {without}")
    print("8 of 8 bad checkpoints refused before the first step; the first "
          "layer of a two-layer checkpoint trains; rotary_emb.inv_freq "
          "buffers are skipped")


if __name__ == "__main__":
    main()
