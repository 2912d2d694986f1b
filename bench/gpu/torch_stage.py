#!/usr/bin/env python3
"""PyTorch eager's F, B and fused BW of the GPU check's one-stage models.

The stage bench/gpu/prepare.sh compiles as layer-4096 (zbc-dsl-gpt --layers
1 --hidden 4096 --heads 32 --seq 2048 --batch 1 --vocab 256, bf16): token
and position embeddings, one pre-LayerNorm GPT block (examples/dsl/gpt.cpp:
ln1, qkv linear + bias, causal attention, proj + bias, residual, ln2, 4h fc
+ bias, tanh GELU, proj + bias, residual), a final LayerNorm, a bias-free
256-way head and the mean cross-entropy, every tensor bf16 on the GPU,
weights in zbc's [in, out] layout. Attention is
F.scaled_dot_product_attention(is_causal=True) (PyTorch's flash kernel).

--model llama: llama-layer-4096 (zbc-dsl-llama --layers 1 --hidden 4096
--intermediate 14336 --heads 32 --kv-heads 8 --seq 2048 --batch 1 --vocab
256 --rope-theta 500000 --llama3 8,1,4,8192 --bf16): the token embedding,
one decoder layer of Hugging Face's LlamaForCausalLM (RMSNorm, q/k/v
projections with [out, in] weights, rotary embeddings with Llama 3's
scaling computed per forward in fp32 as transformers does, repeat_kv and
the same causal flash attention, o_proj, RMSNorm, the SwiGLU MLP), the final
RMSNorm, an untied head and the mean cross-entropy.

Timed with CUDA events, median of --reps after --warmup:
  F   the forward to the loss, autograd recording;
  B   torch.autograd.grad(loss, x): the gradient of the embeddings' sum
      only, the weights requiring grad but not asked for (what zbc's B
      computes: every activation gradient, no weight gradient);
  BW  loss.backward(): every gradient at once.
Writes one JSON object to --out (and prints it).
"""
import argparse
import json
import math
import statistics

import torch
import torch.nn.functional as F


def llama_stage(args, normal, tokens, targets, positions):
    """llama-layer-4096's parameters and forward (x, loss)."""
    h, S, B, V, heads = args.hidden, args.seq, args.batch, args.vocab, args.heads
    kv_heads, inter, d = 8, 14336, args.hidden // args.heads
    dev, dt = tokens.device, torch.bfloat16
    ones = lambda n: torch.ones(n, device=dev, dtype=dt).requires_grad_()
    p = {"embed": normal(V, h), "ln1": ones(h), "q": normal(h, h),
         "k": normal(kv_heads * d, h), "v": normal(kv_heads * d, h),
         "o": normal(h, h), "ln2": ones(h), "gate": normal(inter, h),
         "up": normal(inter, h), "down": normal(h, inter), "norm": ones(h),
         "head": normal(V, h)}

    def inv_freq(theta=500000.0, factor=8.0, low=1.0, high=4.0, orig=8192):
        inv = 1.0 / (theta ** (torch.arange(0, d, 2, device=dev).float() / d))
        wavelen = 2 * math.pi / inv
        scaled = torch.where(wavelen > orig / low, inv / factor, inv)
        smooth = (orig / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < orig / high) * ~(wavelen > orig / low)
        return torch.where(medium, smoothed, scaled)

    freq = inv_freq()

    def rms(x, w, eps=1e-5):
        xf = x.float()
        return w * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(dt)

    def forward():
        x = F.embedding(tokens, p["embed"])
        freqs = positions.float()[..., None] * freq  # per forward, in fp32
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(dt)[:, None], emb.sin().to(dt)[:, None]

        def rope(t):
            t1, t2 = t[..., : d // 2], t[..., d // 2:]
            return t * cos + torch.cat((-t2, t1), dim=-1) * sin

        a = rms(x, p["ln1"])
        q = (a @ p["q"].T).view(B, S, heads, d).transpose(1, 2)
        k = (a @ p["k"].T).view(B, S, kv_heads, d).transpose(1, 2)
        v = (a @ p["v"].T).view(B, S, kv_heads, d).transpose(1, 2)
        q, k = rope(q), rope(k)
        rep = heads // kv_heads
        k = k[:, :, None].expand(B, kv_heads, rep, S, d).reshape(B, heads, S, d)
        v = v[:, :, None].expand(B, kv_heads, rep, S, d).reshape(B, heads, S, d)
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = x + attn.transpose(1, 2).reshape(B, S, h) @ p["o"].T
        m = rms(y, p["ln2"])
        y = y + (F.silu(m @ p["gate"].T) * (m @ p["up"].T)) @ p["down"].T
        logits = rms(y, p["norm"]) @ p["head"].T
        loss = F.cross_entropy(logits.view(-1, V).float(), targets.view(-1))
        return x, loss

    return p, forward


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["gpt", "llama"], default="gpt")
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--seq", type=int, default=2048)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--vocab", type=int, default=256)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--reps", type=int, default=21)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("torch_stage.py: no CUDA device")
    dev, dt = "cuda", torch.bfloat16
    h, S, B, V, heads = args.hidden, args.seq, args.batch, args.vocab, args.heads
    g = torch.Generator(device=dev).manual_seed(0)

    def normal(*shape, std=0.02):
        return (torch.randn(*shape, generator=g, device=dev) * std).to(dt).requires_grad_()

    def const(value, n):
        return torch.full((n,), value, device=dev, dtype=dt).requires_grad_()

    gpt = args.model == "gpt"
    p = {} if not gpt else {"wte": normal(V, h), "wpe": normal(S, h, std=0.01),
         "ln1.g": const(1, h), "ln1.b": const(0, h),
         "qkv.w": normal(h, 3 * h), "qkv.b": const(0, 3 * h),
         "proj.w": normal(h, h), "proj.b": const(0, h),
         "ln2.g": const(1, h), "ln2.b": const(0, h),
         "fc.w": normal(h, 4 * h), "fc.b": const(0, 4 * h),
         "out.w": normal(4 * h, h), "out.b": const(0, h),
         "lnf.g": const(1, h), "lnf.b": const(0, h), "head": normal(h, V)}
    tokens = torch.randint(0, V, (B, S), generator=g, device=dev)
    targets = torch.randint(0, V, (B, S), generator=g, device=dev)
    positions = torch.arange(S, device=dev).expand(B, S)

    def forward():
        x = F.embedding(tokens, p["wte"]) + F.embedding(positions, p["wpe"])
        a = F.layer_norm(x, (h,), p["ln1.g"], p["ln1.b"], 1e-5)
        qkv = a @ p["qkv.w"] + p["qkv.b"]
        q, k, v = (t.view(B, S, heads, h // heads).transpose(1, 2)
                   for t in qkv.split(h, dim=-1))
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = x + (attn.transpose(1, 2).reshape(B, S, h) @ p["proj.w"] + p["proj.b"])
        m = F.layer_norm(y, (h,), p["ln2.g"], p["ln2.b"], 1e-5)
        m = F.gelu(m @ p["fc.w"] + p["fc.b"], approximate="tanh")
        y = y + (m @ p["out.w"] + p["out.b"])
        logits = F.layer_norm(y, (h,), p["lnf.g"], p["lnf.b"], 1e-5) @ p["head"]
        loss = F.cross_entropy(logits.view(-1, V).float(), targets.view(-1))
        return x, loss

    if args.model == "llama":
        p, forward = llama_stage(args, normal, tokens, targets, positions)

    def timed(fn):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end)

    def clear():
        for t in p.values():
            t.grad = None

    def f():
        clear()
        return timed(forward)

    def b():
        clear()
        x, loss = forward()
        torch.cuda.synchronize()
        return timed(lambda: torch.autograd.grad(loss, x))

    def bw():
        clear()
        _, loss = forward()
        torch.cuda.synchronize()
        return timed(loss.backward)

    samples = {"F": [], "B": [], "BW": []}
    timers = {"F": f, "B": b, "BW": bw}
    for _ in range(args.warmup):
        for timer in timers.values():
            timer()
    for _ in range(args.reps):
        for name, timer in timers.items():
            samples[name].append(timer())
    result = {f"{k}_ms": round(statistics.median(v), 4) for k, v in samples.items()}
    result.update(model=args.model, torch=torch.__version__,
                  gpu=torch.cuda.get_device_name(),
                  hidden=h, heads=heads, seq=S, batch=B, vocab=V, dtype="bfloat16",
                  reps=args.reps)
    with open(args.out, "w") as out:
        json.dump(result, out)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
