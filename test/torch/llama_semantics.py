#!/usr/bin/python3
"""The Llama ops against PyTorch: loss and every gradient of a Llama block.

Usage: llama_semantics.py --bin BUILD/bin --work DIR

An independent implementation of Hugging Face's LlamaForCausalLM (written
for this test from transformers' modeling_llama.py and
modeling_rope_utils.py, in float64 PyTorch) runs the models zbc-dsl-llama
prints on the parameters and microbatches the reference interpreter drew,
and must agree with the interpreter (zbc-gradients) on each microbatch's
loss and on every parameter's gradient to a relative 1e-6. Two models
together cover the conventions: rotate-half RoPE with Llama 3's frequency
scaling (all three bands), grouped-query attention with two query heads per
kv head, RMSNorm's eps inside the square root, an untied head; then
multi-query attention, a head dimension apart from hidden / heads, q/k/v
biases (Qwen2) and the head tied to the embedding.

Then each convention is changed in the PyTorch model, one at a time
(interleaved RoPE pairs, no Llama 3 scaling, kv heads shared round-robin,
eps outside the square root, the tied head's gradient dropped, q/k/v biases
left out), and every change must make the comparison fail: the test can
tell these conventions apart. packed_semantics.py runs packed documents
through this Llama (llama_logits).
"""
import argparse
import json
import math
import os
import struct
import subprocess
import sys

import torch

torch.set_default_dtype(torch.float64)

MODELS = {
    # GQA (2 query heads per kv head), Llama 3 scaling: at theta 100 and
    # head_dim 8 the wavelengths 6.3, 20, 63, 199 fall below 64 / 8 (kept),
    # between (interpolated) and above 64 (divided by 8).
    "gqa-llama3": ["--hidden", "32", "--intermediate", "40", "--layers", "2",
                   "--heads", "4", "--kv-heads", "2", "--vocab", "13",
                   "--seq", "7", "--batch", "2", "--max-positions", "40",
                   "--rope-theta", "100", "--llama3", "8,1,8,64",
                   "--rms-eps", "0.01"],
    # Multi-query attention, head_dim 6 apart from hidden / heads, q/k/v
    # biases, the head tied to the embedding, no rope scaling.
    "mqa-tied-bias": ["--hidden", "12", "--intermediate", "20", "--layers",
                      "2", "--heads", "3", "--kv-heads", "1", "--head-dim",
                      "6", "--vocab", "11", "--seq", "6", "--batch", "2",
                      "--max-positions", "30", "--rope-theta", "500",
                      "--no-rope-scaling", "--rms-eps", "0.01", "--tied",
                      "--qkv-bias"],
}

MUTATIONS = ["rope-interleaved", "no-llama3-scaling", "gqa-round-robin",
             "eps-outside-sqrt", "tied-head-detached", "no-qkv-bias"]
# Which model shows each change (a change the model does not exercise, as
# no scaling on a model without it, cannot be seen there).
MUTATION_MODEL = {"rope-interleaved": "gqa-llama3",
                  "no-llama3-scaling": "gqa-llama3",
                  "gqa-round-robin": "gqa-llama3",
                  "eps-outside-sqrt": "gqa-llama3",
                  "tied-head-detached": "mqa-tied-bias",
                  "no-qkv-bias": "mqa-tied-bias"}


def read_safetensors(path):
    """{name: tensor} of a safetensors file (F64 and I64 only)."""
    with open(path, "rb") as f:
        data = f.read()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    base = 8 + size
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        dtype = {"F64": torch.float64, "I64": torch.int64}[info["dtype"]]
        t = torch.frombuffer(bytearray(data[base + begin:base + end]),
                             dtype=dtype)
        out[name] = t.reshape(info["shape"]).clone()
    return out


def config_of(args):
    """The config.json-style fields the flags set (zbc-dsl-llama's
    defaults otherwise)."""
    c = {"hidden": 64, "intermediate": 160, "layers": 4, "heads": 4,
         "kv_heads": 2, "head_dim": None, "vocab": 256, "theta": 10000.0,
         "llama3": (8.0, 1.0, 8.0, 64), "eps": 1e-5, "tied": False,
         "bias": False}
    i = 0
    names = {"--hidden": "hidden", "--intermediate": "intermediate",
             "--layers": "layers", "--heads": "heads",
             "--kv-heads": "kv_heads", "--head-dim": "head_dim",
             "--vocab": "vocab"}
    while i < len(args):
        a = args[i]
        if a in names:
            c[names[a]] = int(args[i + 1])
            i += 2
        elif a == "--rope-theta":
            c["theta"] = float(args[i + 1])
            i += 2
        elif a == "--rms-eps":
            c["eps"] = float(args[i + 1])
            i += 2
        elif a == "--llama3":
            f, lo, hi, orig = args[i + 1].split(",")
            c["llama3"] = (float(f), float(lo), float(hi), int(orig))
            i += 2
        elif a == "--no-rope-scaling":
            c["llama3"] = None
            i += 1
        elif a == "--tied":
            c["tied"] = True
            i += 1
        elif a == "--qkv-bias":
            c["bias"] = True
            i += 1
        else:
            i += 2  # sizes of the microbatch: read from the data
    c["head_dim"] = c["head_dim"] or c["hidden"] // c["heads"]
    return c


# --- Hugging Face's semantics, written out ---------------------------------

def inv_freq(c, mutation):
    """_compute_default_rope_parameters, then _compute_llama3_parameters."""
    d = c["head_dim"]
    inv = 1.0 / (c["theta"] ** (torch.arange(0, d, 2, dtype=torch.int64)
                                .to(torch.float64) / d))
    if c["llama3"] is None or mutation == "no-llama3-scaling":
        return inv
    factor, low, high, original = c["llama3"]
    low_wavelen = original / low
    high_wavelen = original / high
    wavelen = 2 * math.pi / inv
    inv_llama = torch.where(wavelen > low_wavelen, inv / factor, inv)
    smooth = (original / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * inv_llama / factor + smooth * inv_llama
    medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
    return torch.where(medium, smoothed, inv_llama)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x, positions, c, mutation):
    """x [B, H, S, d]; LlamaRotaryEmbedding and apply_rotary_pos_emb."""
    freqs = positions.to(torch.float64)[:, :, None] * inv_freq(c, mutation)
    if mutation == "rope-interleaved":  # GPT-J's pairs (2i, 2i + 1)
        cos, sin = freqs.cos()[:, None], freqs.sin()[:, None]
        x1, x2 = x[..., 0::2], x[..., 1::2]
        out = torch.stack((x1 * cos - x2 * sin, x2 * cos + x1 * sin), -1)
        return out.flatten(-2)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos()[:, None], emb.sin()[:, None]
    return x * cos + rotate_half(x) * sin


def repeat_kv(x, n_rep, mutation):
    """x [B, KV, S, d] -> [B, KV * n_rep, S, d], kv head g serving query
    heads g * n_rep .. (g + 1) * n_rep - 1."""
    if n_rep == 1:
        return x
    if mutation == "gqa-round-robin":  # query head h reads kv head h % KV
        return x.repeat(1, n_rep, 1, 1)
    b, kv, s, d = x.shape
    return x[:, :, None].expand(b, kv, n_rep, s, d).reshape(b, kv * n_rep, s, d)


def rms_norm(x, w, eps, mutation):
    var = x.pow(2).mean(-1, keepdim=True)
    if mutation == "eps-outside-sqrt":
        return w * (x / (var.sqrt() + eps))
    return w * (x * torch.rsqrt(var + eps))


def linear(x, p, name, bias, mutation):
    y = x @ p[name + ".weight"].T
    if bias and mutation != "no-qkv-bias":
        y = y + p[name + ".bias"]
    return y


def llama_logits(c, p, tokens, positions, mutation):
    """The logits [B, S, vocab] of tokens [B, S] at positions [B, S], each
    row one causal sequence."""
    B, S = tokens.shape
    H, KV, d = c["heads"], c["kv_heads"], c["head_dim"]
    embed = p["model.embed_tokens.weight"]
    x = embed[tokens]
    mask = torch.full((S, S), float("-inf")).triu(1)
    for layer in range(c["layers"]):
        n = f"model.layers.{layer}."
        h = rms_norm(x, p[n + "input_layernorm.weight"], c["eps"], mutation)
        q = linear(h, p, n + "self_attn.q_proj", c["bias"], mutation)
        k = linear(h, p, n + "self_attn.k_proj", c["bias"], mutation)
        v = linear(h, p, n + "self_attn.v_proj", c["bias"], mutation)
        q = q.view(B, S, H, d).transpose(1, 2)
        k = k.view(B, S, KV, d).transpose(1, 2)
        v = v.view(B, S, KV, d).transpose(1, 2)
        q, k = apply_rope(q, positions, c, mutation), apply_rope(k, positions,
                                                                  c, mutation)
        k, v = repeat_kv(k, H // KV, mutation), repeat_kv(v, H // KV, mutation)
        scores = q @ k.transpose(2, 3) / math.sqrt(d) + mask
        attn = torch.softmax(scores, dim=-1) @ v
        attn = attn.transpose(1, 2).reshape(B, S, H * d)
        x = x + linear(attn, p, n + "self_attn.o_proj", False, mutation)
        h = rms_norm(x, p[n + "post_attention_layernorm.weight"], c["eps"],
                     mutation)
        gate = linear(h, p, n + "mlp.gate_proj", False, mutation)
        up = linear(h, p, n + "mlp.up_proj", False, mutation)
        x = x + linear(torch.nn.functional.silu(gate) * up, p,
                       n + "mlp.down_proj", False, mutation)
    x = rms_norm(x, p["model.norm.weight"], c["eps"], mutation)
    if c["tied"]:
        head = embed.detach() if mutation == "tied-head-detached" else embed
    else:
        head = p["lm_head.weight"]
    return x @ head.T


def llama_loss(c, p, tokens, positions, targets, mutation):
    logits = llama_logits(c, p, tokens, positions, mutation)
    return torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


# --- the comparison --------------------------------------------------------

def relative(a, b):
    scale = max(b.abs().max().item(), 1e-30)
    return (a - b).abs().max().item() / scale


def compare(c, stored, mutation):
    """The worst relative error of the losses and gradients (and where)."""
    params = {k[len("param."):]: v.clone().requires_grad_(True)
              for k, v in stored.items() if k.startswith("param.")}
    microbatches = sorted({k.split(".")[0] for k in stored
                           if k.startswith("mb")})
    total = 0.0
    worst, where = 0.0, ""
    for mb in microbatches:
        loss = llama_loss(c, params, stored[mb + ".input.tokens"],
                          stored[mb + ".input.positions"],
                          stored[mb + ".label.targets"], mutation)
        error = relative(loss.detach(), stored[mb + ".loss"])
        if error > worst:
            worst, where = error, mb + " loss"
        total = total + loss
    (total / len(microbatches)).backward()
    for name, tensor in params.items():
        grad = tensor.grad if tensor.grad is not None else torch.zeros_like(
            tensor)
        error = relative(grad, stored["grad." + name])
        if error > worst:
            worst, where = error, "grad." + name
    return worst, where, len(params)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--tolerance", type=float, default=1e-6)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    stored, configs = {}, {}
    for name, flags in MODELS.items():
        source = os.path.join(args.work, name + ".mlir")
        with open(source, "w") as f:
            f.write(subprocess.run(
                [os.path.join(args.bin, "zbc-dsl-llama"), *flags], text=True,
                check=True, capture_output=True).stdout)
        out = os.path.join(args.work, name + ".safetensors")
        subprocess.run([os.path.join(args.bin, "zbc-gradients"), source,
                        "--seed", "3", "--microbatches", "2", "-o", out],
                       check=True, timeout=300)
        stored[name], configs[name] = read_safetensors(out), config_of(flags)
        worst, where, count = compare(configs[name], stored[name], None)
        print(f"{name}: 2 losses and {count} gradients agree with PyTorch "
              f"(float64): largest relative error {worst:.2e} ({where})")
        if not worst <= args.tolerance:
            sys.exit(f"FAILED: {name}: {where} differs from PyTorch by "
                     f"{worst:.2e} (tolerance {args.tolerance:.0e})")
    for mutation in MUTATIONS:
        name = MUTATION_MODEL[mutation]
        worst, where, _ = compare(configs[name], stored[name], mutation)
        print(f"changed convention {mutation} on {name}: largest relative "
              f"error {worst:.2e} ({where})")
        if worst <= args.tolerance:
            sys.exit(f"FAILED: with {mutation}, PyTorch still agrees "
                     f"({worst:.2e}): the test cannot see that convention")
    print(f"{len(MUTATIONS)} of {len(MUTATIONS)} changed conventions "
          "detected")


if __name__ == "__main__":
    main()
