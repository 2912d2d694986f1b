#!/usr/bin/env python3
"""--init of a Hugging Face checkpoint of about 1 GB on 4 ranks: the time
and the bytes each rank reads.

Writes a Llama-shaped checkpoint (hidden 2048, intermediate 5632, 32 heads,
8 kv heads, vocabulary 32000, untied head, 9 layers: 537M parameters) in
bf16, as Hugging Face ships them, sharded over two files with an index
(about 1.07 GB), imports it (sequence 16, microbatch 1), compiles it for 4
ranks under zb-h1 with 4 microbatches, and runs one step with
`--init DIR --report` several times, reading from each rank's report:
  bytes        the checkpoint bytes of its own tensors (the load's count);
  touched      the growth of its file-backed resident set while it loaded
               (RssFile: the pages of the mapping it read, an outside
               measure; fault-around may add a few neighbouring pages);
  files        the shards it mapped;
  seconds      the load (mapping, widening bf16 to f32 masters, writing the
               arena), inside start-up.
The same step without --init (seeded parameters) is the baseline of the
whole run's wall time. The checkpoint was just written, so every run reads
it from the page cache (these machines do not let a user drop it): a read
from disk is not measured here. The first run is the first mapping of each
file by the ranks; the median of the rest follows.

Usage: bench/init_weights.py [--runs 4] [--build build] [--work DIR]
       [--smoke]
(--smoke: the same on a Llama of hidden 64, 4 layers and vocabulary 256,
two runs of each: a check that it runs and the reports parse, as ctest's
bench family runs it; its times and sizes mean nothing.)
"""
import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time

import numpy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RANKS = 4
CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama",
    "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 9,
    "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000,
    "max_position_embeddings": 2048, "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0, "tie_word_embeddings": False, "hidden_act": "silu",
    "torch_dtype": "bfloat16"}
# --smoke's checkpoint: the same architecture at the smallest sizes.
SMOKE_CONFIG = dict(CONFIG, hidden_size=64, intermediate_size=128,
                    num_hidden_layers=4, num_attention_heads=4,
                    num_key_value_heads=2, vocab_size=256,
                    max_position_embeddings=16)


def shapes(c):
    h, inter, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    kv = c["num_key_value_heads"] * h // c["num_attention_heads"]
    out = {"model.embed_tokens.weight": (v, h), "model.norm.weight": (h,),
           "lm_head.weight": (v, h)}
    for i in range(c["num_hidden_layers"]):
        n = f"model.layers.{i}."
        out.update({n + "input_layernorm.weight": (h,),
                    n + "self_attn.q_proj.weight": (h, h),
                    n + "self_attn.k_proj.weight": (kv, h),
                    n + "self_attn.v_proj.weight": (kv, h),
                    n + "self_attn.o_proj.weight": (h, h),
                    n + "post_attention_layernorm.weight": (h,),
                    n + "mlp.gate_proj.weight": (inter, h),
                    n + "mlp.up_proj.weight": (inter, h),
                    n + "mlp.down_proj.weight": (h, inter)})
    return out


def write_shard(path, tensors, rng):
    """tensors: name -> shape; bf16 values near N(0, 0.02) (norms near 1)."""
    header, offset = {}, 0
    for name, shape in tensors.items():
        size = int(numpy.prod(shape)) * 2
        header[name] = {"dtype": "BF16", "shape": list(shape),
                        "data_offsets": [offset, offset + size]}
        offset += size
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for name, shape in tensors.items():
            values = rng.standard_normal(shape, dtype=numpy.float32) * 0.02
            if len(shape) == 1:
                values += 1
            f.write((values.view(numpy.uint32) >> 16).astype(numpy.uint16)
                    .tobytes())


def write_checkpoint(hf, config=CONFIG):
    os.makedirs(hf, exist_ok=True)
    with open(os.path.join(hf, "config.json"), "w") as f:
        json.dump(config, f)
    all_shapes = shapes(config)
    names = list(all_shapes)
    half = len(names) // 2
    parts = {"model-00001-of-00002.safetensors": names[:half],
             "model-00002-of-00002.safetensors": names[half:]}
    rng = numpy.random.default_rng(0)
    weight_map, total = {}, 0
    for file, part in parts.items():
        write_shard(os.path.join(hf, file), {n: all_shapes[n] for n in part},
                    rng)
        weight_map.update({n: file for n in part})
        total += sum(int(numpy.prod(all_shapes[n])) * 2 for n in part)
    with open(os.path.join(hf, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map},
                  f)
    return total, sum(int(numpy.prod(s)) for s in all_shapes.values())


def run(command):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"failed: {' '.join(command)}\n{result.stdout}{result.stderr}")
    return result.stdout


def one_run(out, report, init):
    for f in os.listdir(report) if os.path.isdir(report) else []:
        os.remove(os.path.join(report, f))
    start = time.perf_counter()
    run([os.path.join(out, "launch.sh"), "--steps", "1", "--lr", "0",
         "--quiet", "--report", report, *(["--init", init] if init else [])])
    wall = time.perf_counter() - start
    reports = [json.load(open(os.path.join(report, f"rank{r}.json")))
               for r in range(RANKS)]
    return wall, [r["init"] for r in reports]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--work", default=None)
    parser.add_argument("--smoke", action="store_true",
                        help="a tiny checkpoint, two runs: checks that it runs")
    args = parser.parse_args()
    if args.smoke:
        args.runs = 2
    if args.runs < 2:
        parser.error("--runs must be at least 2 (the first, then the median "
                     "of the rest)")
    work = os.path.abspath(args.work or tempfile.mkdtemp(prefix="zbc-init-"))
    zbc = os.path.join(args.build, "bin", "zbc")
    hf = os.path.join(work, "hf")
    total, parameters = write_checkpoint(
        hf, SMOKE_CONFIG if args.smoke else CONFIG)
    print(f"checkpoint: {parameters / 1e6:.0f}M parameters, {total / 1e9:.3f} "
          f"GB of bf16 in 2 shards ({hf})", flush=True)
    model = os.path.join(work, "model.mlir")
    run([zbc, "import-hf", hf, "-o", model, "--seq-len", "16",
         "--microbatch-size", "1"])
    out = os.path.join(work, "out")
    print(run([zbc, "compile", model, "--ranks", str(RANKS), "--microbatches",
               "4", "--schedule", "zb-h1", "-o", out]).strip(), flush=True)
    report = os.path.join(work, "report")

    runs = [one_run(out, report, hf) for _ in range(args.runs)]
    seeded = [one_run(out, report, None)[0] for _ in range(args.runs)]
    print("\nrank  tensors  files  bytes (share)        touched    1st s  "
          "median s")
    for r in range(RANKS):
        first = runs[0][1][r]
        warm = statistics.median(run_[1][r]["seconds"] for run_ in runs[1:])
        print(f"{r:4}  {first['tensors']:7}  {first['files']:5}  "
              f"{first['bytes'] / 1e6:8.1f} MB ({first['bytes'] / total:5.1%})"
              f"  {runs[-1][1][r]['file_pages_touched_bytes'] / 1e6:7.1f} MB"
              f"  {first['seconds']:6.2f}  {warm:6.2f}")
    read = sum(runs[0][1][r]["bytes"] for r in range(RANKS))
    print(f"\nall ranks read {read / 1e6:.1f} MB of the checkpoint's "
          f"{total / 1e6:.1f} MB ({read / total:.1%}: each tensor once)")
    warm_wall = statistics.median(w for w, _ in runs[1:])
    print(f"whole run (launch, start-up, one step, exit): --init first "
          f"{runs[0][0]:.2f} s, median {warm_wall:.2f} s; seeded "
          f"{statistics.median(seeded):.2f} s (medians of {args.runs - 1} "
          f"later runs and {args.runs} seeded)")


if __name__ == "__main__":
    main()
