#!/usr/bin/env python3
"""Proves every registered schedule's program on the example models.

For the example GPT (zbc-dsl-gpt, one block per stage) and the example MLP
(its layers, one per stage), with p in {2, 4, 8} ranks and m in {p, 2p, 4p}
microbatches (two stages per rank for V and interleaved schedules), runs
zb-schedule, zb-insert-p2p and zb-verify-schedule and fails on the first
program that does not verify. Used by verify-every-schedule.test.

Usage: verify_every_schedule.py ZBC ZBC_OPT ZBC_DSL_GPT WORKDIR
"""
import concurrent.futures
import os
import subprocess
import sys

ZBC, ZBC_OPT, DSL_GPT, WORK = sys.argv[1:5]
os.makedirs(WORK, exist_ok=True)


def mlp(stages):
    """The example MLP's layers (linear, bias, ReLU), one per stage."""
    lines = ["zb.model @mlp {",
             '  %x0 = zb.input "x" : tensor<8x16xf32>',
             '  %y = zb.label "y" : tensor<8xi64>']
    width = 16
    for i in range(stages):
        out = 8 if i == stages - 1 else 64
        t_in, t_out = f"tensor<8x{width}xf32>", f"tensor<8x{out}xf32>"
        lines += [
            f'  %w{i} = zb.param "fc{i}.weight" init normal(0.1) : tensor<{width}x{out}xf32>',
            f'  %b{i} = zb.param "fc{i}.bias" init zeros : tensor<{out}xf32>',
            f"  %h{i} = zb.linear %x{i}, %w{i} : ({t_in}, tensor<{width}x{out}xf32>) -> {t_out}",
            f"  %hb{i} = zb.bias_add %h{i}, %b{i} : ({t_out}, tensor<{out}xf32>) -> {t_out}"]
        if i < stages - 1:
            lines += [f"  %r{i} = zb.relu %hb{i} : {t_out}",
                      f"  %x{i + 1} = zb.cut %r{i} : {t_out}"]
        width = out
    lines += [f"  %l = zb.cross_entropy %hb{stages - 1}, %y : (tensor<8x8xf32>, tensor<8xi64>) -> tensor<f32>",
              "  zb.loss %l : tensor<f32>", "}"]
    return "\n".join(lines) + "\n"


def split(name, text):
    """The model through --zb-backward, written once per model and size."""
    path = os.path.join(WORK, name + ".mlir")
    subprocess.run([ZBC_OPT, "-", "--zb-backward", "-o", path], input=text,
                   text=True, check=True)
    return path


def schedules():
    """Every registered schedule, with its stages per rank (1 or 2)."""
    out = subprocess.run([ZBC, "schedule", "--list"], text=True, check=True,
                         capture_output=True).stdout
    result, current = [], None
    for line in out.splitlines():
        if line and not line.startswith(" "):
            current = line.strip()
        elif current and "placement:" in line:
            kind = line.split("placement:")[1].strip()
            result.append((current, 1 if kind == "linear" else 2))
            current = None
    return result


models = {}
for p in (2, 4, 8):
    for stages in {p, 2 * p}:
        gpt = subprocess.run([DSL_GPT, "--layers", str(stages)], text=True,
                             check=True, capture_output=True).stdout
        models[("gpt", stages)] = split(f"gpt{stages}", gpt)
        models[("mlp", stages)] = split(f"mlp{stages}", mlp(stages))

cases = []
for name, v in schedules():
    for p in (2, 4, 8):
        for m in (p, 2 * p, 4 * p):
            for model in ("mlp", "gpt"):
                cases.append((name, v, p, m, model))


def prove(case):
    name, v, p, m, model = case
    cmd = [ZBC_OPT, models[(model, v * p)],
           f"--zb-schedule=kind={name} microbatches={m} virtual={v}",
           "--zb-insert-p2p", "--zb-verify-schedule", "-o", os.devnull]
    run = subprocess.run(cmd, text=True, capture_output=True)
    return case, run.returncode, run.stderr


failed = 0
with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
    for (name, v, p, m, model), rc, err in pool.map(prove, cases):
        if rc != 0:
            failed += 1
            print(f"FAILED: {name} p={p} m={m} {model}:\n{err}")
print(f"{len(cases) - failed} of {len(cases)} programs verified")
sys.exit(1 if failed else 0)
