#!/usr/bin/python3
"""PyTorch yardstick for one GPT or Llama block on one CPU thread: F, B, W.

--model gpt (the default): one pre-LayerNorm block exactly as a block of
examples/gpt.mlir computes it (ln1 -> linear qkv + bias -> causal attention
-> proj + bias -> residual add -> ln2 -> fc (4h) + bias -> gelu (tanh) ->
proj + bias -> residual add), weights in zbc's [in, out] layout (y = x @ W +
b), at h=512, seq 256, microbatch 4, 8 heads.
--model llama: one decoder layer of Hugging Face's LlamaForCausalLM as
zbc/DSL/Llama.h builds it (RMSNorm -> q, k, v projections -> rotary
embeddings on q and k -> causal grouped-query attention -> o_proj ->
residual add -> RMSNorm -> down(silu(gate(x)) * up(x)) -> residual add),
weights [out, in] (y = x @ W^T), at h=512, intermediate 1408, 8 heads on 2
kv heads, seq 256, microbatch 4.
fp32 on CPU with one thread. bench/gpt_layer.py times the same block
through zbc's per-rank programs and compares.

It measures, each as the median of --reps timed repetitions after --warmup
untimed ones:
  F   the forward with autograd recording (what a pipeline's F costs: it
      keeps the activations its backward needs);
  BW  the fused backward: torch.autograd.backward(out, dout), input and
      weight gradients together (dout is the upstream gradient, as the
      backward of (out * dout).sum());
  B   torch.autograd.grad(out, x, dout): the input gradient only, the
      weights requiring grad but not asked for, so autograd skips their
      gradient GEMMs;
  W   BW - B, the weight-gradient share that zero-bubble schedules defer.
Each backward is timed alone, on a forward run (untimed) just before it.

Prints one JSON object. Run it with Debian's torch 1.13:
  /usr/bin/python3 bench/gpt_layer_torch.py
(torch 1.13 has no scaled_dot_product_attention: attention is matmul +
masked softmax.)
"""

import argparse
import json
import math
import os
import platform
import statistics
import time

# One thread everywhere, set before torch loads its BLAS: OpenBLAS's own pool
# ignores torch.set_num_threads.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def make_block(hidden, generator):
    """The block's parameters, initialised as examples/gpt.mlir initialises
    them (normal(0.02) weights, zero biases, unit gammas, zero betas)."""
    def normal(*shape):
        return (torch.randn(*shape, generator=generator) * 0.02).requires_grad_()

    def const(value, n):
        return torch.full((n,), value).requires_grad_()

    h = hidden
    return {
        "ln1.gamma": const(1.0, h), "ln1.beta": const(0.0, h),
        "attn.qkv.weight": normal(h, 3 * h), "attn.qkv.bias": const(0.0, 3 * h),
        "attn.proj.weight": normal(h, h), "attn.proj.bias": const(0.0, h),
        "ln2.gamma": const(1.0, h), "ln2.beta": const(0.0, h),
        "mlp.fc.weight": normal(h, 4 * h), "mlp.fc.bias": const(0.0, 4 * h),
        "mlp.proj.weight": normal(4 * h, h), "mlp.proj.bias": const(0.0, h),
    }


def causal_attention(qkv, heads, mask):
    """zb.causal_attention: qkv [B, S, 3H] holds q, k, v side by side, each
    split into `heads` heads; scores q.k / sqrt(d), position i attends to
    0..i, max-subtracted softmax (torch.softmax's)."""
    B, S, three_h = qkv.shape
    h = three_h // 3
    d = h // heads
    q, k, v = qkv.split(h, dim=-1)

    def per_head(t):  # [B, S, H] -> [B, heads, S, d]
        return t.view(B, S, heads, d).transpose(1, 2)

    scores = per_head(q) @ per_head(k).transpose(-2, -1) / math.sqrt(d)
    probs = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    return (probs @ per_head(v)).transpose(1, 2).reshape(B, S, h)


def block(x, p, heads, mask, eps=1e-5):
    h = x.shape[-1]
    a = F.layer_norm(x, (h,), p["ln1.gamma"], p["ln1.beta"], eps)
    qkv = a @ p["attn.qkv.weight"] + p["attn.qkv.bias"]
    attn = causal_attention(qkv, heads, mask)
    x = x + (attn @ p["attn.proj.weight"] + p["attn.proj.bias"])
    m = F.layer_norm(x, (h,), p["ln2.gamma"], p["ln2.beta"], eps)
    m = F.gelu(m @ p["mlp.fc.weight"] + p["mlp.fc.bias"], approximate="tanh")
    return x + (m @ p["mlp.proj.weight"] + p["mlp.proj.bias"])


def make_llama_block(hidden, intermediate, heads, kv_heads, generator):
    """A Llama decoder layer's parameters ([out, in] weights, normal(0.02),
    unit RMSNorm weights), as zbc/DSL/Llama.h initialises them."""
    def normal(*shape):
        return (torch.randn(*shape, generator=generator) * 0.02).requires_grad_()

    h, d = hidden, hidden // heads
    return {
        "input_layernorm": torch.ones(h).requires_grad_(),
        "q_proj": normal(h, h), "k_proj": normal(kv_heads * d, h),
        "v_proj": normal(kv_heads * d, h), "o_proj": normal(h, h),
        "post_attention_layernorm": torch.ones(h).requires_grad_(),
        "gate_proj": normal(intermediate, h), "up_proj": normal(intermediate, h),
        "down_proj": normal(h, intermediate),
    }


def rms_norm(x, weight, eps=1e-5):
    return weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rope_tables(seq, d, theta=10000.0):
    """cos and sin [S, d] of LlamaRotaryEmbedding at positions 0..S-1 (the
    tables are computed once per forward in transformers, so here too, and
    outside the timed region as transformers' model does before its
    layers)."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, d, 2).float() / d))
    freqs = torch.arange(seq).float()[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def llama_block(x, p, heads, kv_heads, mask, cos, sin):
    B, S, h = x.shape
    d = h // heads

    def rotate(t):  # apply_rotary_pos_emb's rotate-half form
        t1, t2 = t[..., : d // 2], t[..., d // 2:]
        return t * cos + torch.cat((-t2, t1), dim=-1) * sin

    a = rms_norm(x, p["input_layernorm"])
    q = (a @ p["q_proj"].T).view(B, S, heads, d).transpose(1, 2)
    k = (a @ p["k_proj"].T).view(B, S, kv_heads, d).transpose(1, 2)
    v = (a @ p["v_proj"].T).view(B, S, kv_heads, d).transpose(1, 2)
    q, k = rotate(q), rotate(k)
    rep = heads // kv_heads  # repeat_kv
    k = k[:, :, None].expand(B, kv_heads, rep, S, d).reshape(B, heads, S, d)
    v = v[:, :, None].expand(B, kv_heads, rep, S, d).reshape(B, heads, S, d)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)
    probs = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    attn = (probs @ v).transpose(1, 2).reshape(B, S, h)
    x = x + attn @ p["o_proj"].T
    m = rms_norm(x, p["post_attention_layernorm"])
    m = F.silu(m @ p["gate_proj"].T) * (m @ p["up_proj"].T)
    return x + m @ p["down_proj"].T


def median_ms(samples):
    return statistics.median(samples) * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["gpt", "llama"], default="gpt")
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--intermediate", type=int, default=1408)
    parser.add_argument("--kv-heads", type=int, default=2)
    parser.add_argument("--seq", type=int, default=256)
    parser.add_argument("--microbatch", type=int, default=4)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--reps", type=int, default=21)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.reps < 20:
        parser.error("--reps must be at least 20")

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    generator = torch.Generator().manual_seed(args.seed)
    h, S, B = args.hidden, args.seq, args.microbatch
    llama = args.model == "llama"
    params = (make_llama_block(h, args.intermediate, args.heads, args.kv_heads,
                               generator) if llama else make_block(h, generator))
    weights = list(params.values())
    x = torch.randn(B, S, h, generator=generator).requires_grad_()
    dout = torch.randn(B, S, h, generator=generator)
    mask = torch.ones(S, S, dtype=torch.bool).triu(1)  # True above diagonal
    cos, sin = rope_tables(S, h // args.heads)

    def forward():
        if llama:
            return llama_block(x, params, args.heads, args.kv_heads, mask, cos,
                               sin)
        return block(x, params, args.heads, mask)

    def clear_grads():
        for t in weights + [x]:
            t.grad = None

    def time_forward():
        start = time.perf_counter()
        out = forward()
        elapsed = time.perf_counter() - start
        del out
        return elapsed

    def time_fused_backward():
        clear_grads()
        out = forward()
        start = time.perf_counter()
        torch.autograd.backward(out, dout)
        return time.perf_counter() - start

    def time_input_backward():
        clear_grads()
        out = forward()
        start = time.perf_counter()
        (dx,) = torch.autograd.grad(out, x, dout)
        elapsed = time.perf_counter() - start
        assert all(w.grad is None for w in weights)
        del dx
        return elapsed

    # Check once that B asks autograd for less: the fused backward fills
    # every weight gradient, torch.autograd.grad none.
    time_fused_backward()
    assert all(w.grad is not None for w in weights) and x.grad is not None

    samples = {"F": [], "BW": [], "B": []}
    timers = {"F": time_forward, "BW": time_fused_backward,
              "B": time_input_backward}
    for _ in range(args.warmup):
        for timer in timers.values():
            timer()
    # Interleaved, so that drift in the machine's speed hits all three alike.
    for _ in range(args.reps):
        for name, timer in timers.items():
            samples[name].append(timer())

    f_ms, bw_ms, b_ms = (median_ms(samples[n]) for n in ("F", "BW", "B"))
    d = h // args.heads
    if llama:
        kv = args.kv_heads * d
        gemm_flops = 2 * B * S * (2 * h * h + 2 * h * kv +
                                  3 * h * args.intermediate)
    else:
        gemm_flops = 2 * B * S * (h * 3 * h + h * h + 2 * h * 4 * h)
    attn_flops = 2 * 2 * B * args.heads * S * S * d  # QK^T and PV, full S x S
    print(json.dumps({
        "F_ms": round(f_ms, 3),
        "B_ms": round(b_ms, 3),
        "W_ms": round(bw_ms - b_ms, 3),
        "BW_ms": round(bw_ms, 3),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "model": args.model,
        "hidden": h, "seq": S, "microbatch": B, "heads": args.heads,
        **({"kv_heads": args.kv_heads, "intermediate": args.intermediate}
           if llama else {}),
        "dtype": "float32", "reps": args.reps, "warmup": args.warmup,
        "F_min_ms": round(min(samples["F"]) * 1e3, 3),
        "B_min_ms": round(min(samples["B"]) * 1e3, 3),
        "BW_min_ms": round(min(samples["BW"]) * 1e3, 3),
        "F_gflops": round((gemm_flops + attn_flops) / (f_ms * 1e-3) / 1e9, 2),
        "machine": platform.processor() or platform.machine(),
    }))


if __name__ == "__main__":
    main()
