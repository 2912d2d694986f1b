#!/usr/bin/python3
"""PyTorch's time for single ops of one GPT block, beside zbc's kernels.

The counterpart of zbc-bench-gpt-layer-kernels (bench/gpt_layer_kernels.cpp)
for the ops where the two can differ: the elementwise and row-wise ones and
attention (bench/gpt_layer_torch.py's causal_attention), plus one GEMM of
the MLP for reference (both link the same OpenBLAS). One thread, fp32,
h=512, S=256, microbatch 4, 8 heads; median of 21 calls after one untimed.
Backwards are torch.autograd.grad for the op's input only, on a graph kept
with retain_graph. Prints a markdown table.

Usage: taskset -c 1 /usr/bin/python3 bench/gpt_layer_ops_torch.py [--smoke]
(--smoke: h=32, S=8, microbatch 1, 2 heads, 3 calls each: a check that it
runs, as ctest's bench family runs it; its times mean nothing.)
"""
import argparse
import os
import statistics
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from gpt_layer_torch import causal_attention  # noqa: E402


def median_ms(call, runs=21):
    call()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true",
                        help="the smallest sizes, 3 calls: checks that it runs")
    args = parser.parse_args()
    torch.set_num_threads(1)
    h, S, B, heads = 512, 256, 4, 8
    runs = 21
    if args.smoke:
        h, S, B, heads, runs = 32, 8, 1, 2, 3
    rows = B * S
    gen = torch.Generator().manual_seed(0)
    randn = lambda *shape: torch.randn(*shape, generator=gen) * 0.5
    x, dy = randn(rows, h), randn(rows, h)
    f, df, w = randn(rows, 4 * h), randn(rows, 4 * h), randn(h, 4 * h)
    gamma, beta = torch.ones(h), torch.zeros(h)
    mask = torch.ones(S, S, dtype=torch.bool).triu(1)

    def backward(op, inp, grad):
        leaf = inp.clone().requires_grad_()
        out = op(leaf)
        return lambda: torch.autograd.grad(out, leaf, grad, retain_graph=True)

    gelu = lambda t: F.gelu(t, approximate="tanh")
    layer_norm = lambda t: F.layer_norm(t, (h,), gamma, beta, 1e-5)
    attention = lambda t: causal_attention(t, heads, mask)
    qkv, dattn = randn(B, S, 3 * h), randn(B, S, h)
    ops = [
        (f"linear (fc) {rows}x{h} @ {h}x{4 * h}", lambda: x @ w),
        (f"gelu (tanh) {rows * 4 * h}", lambda: gelu(f)),
        (f"gelu backward {rows * 4 * h}", backward(gelu, f, df)),
        (f"layer_norm {rows}x{h}", lambda: layer_norm(x)),
        (f"layer_norm backward, input {rows}x{h}", backward(layer_norm, x, dy)),
        (f"causal attention {B}x{S}x{3 * h}, {heads} heads",
         lambda: attention(qkv)),
        ("causal attention backward", backward(attention, qkv, dattn)),
    ]
    print(f"torch {torch.__version__}, 1 thread; median of {runs} calls\n")
    print("| op | ms |\n|---|---|")
    for name, call in ops:
        print(f"| {name} | {median_ms(call, runs):.3f} |")


if __name__ == "__main__":
    main()
