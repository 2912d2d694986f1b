#!/usr/bin/env python3
"""Proves every registered schedule's program on the example models.

For the example GPT (zbc-dsl-gpt, one block per stage) and the example MLP
(its layers, one per stage), with p in {2, 4, 8} ranks and m in {p, 2p, 4p}
microbatches (two stages per rank for V and interleaved schedules), runs
zb-schedule, zb-insert-p2p and zb-verify-schedule and fails on the first
program that does not verify. Used by verify-every-schedule.test.

With `offload` as a fifth argument, every schedule with every stash offloaded
(offload=full: zb.offload and zb.reload, Note [Offload in the IR]) for p in
{2, 4} and m = 2p, planned by zb-plan-memory too (its host arena).

Usage: verify_every_schedule.py ZBC ZBC_OPT ZBC_DSL_GPT WORKDIR [offload]
"""
import concurrent.futures
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "lib",
                                "python"))
from zbc_models import gpt as gpt_model, mlp, schedules  # noqa: E402

ZBC, ZBC_OPT, DSL_GPT, WORK = sys.argv[1:5]
OFFLOAD = sys.argv[5:] == ["offload"]
SIZES = [(p, 2 * p) for p in (2, 4)] if OFFLOAD else \
    [(p, m) for p in (2, 4, 8) for m in (p, 2 * p, 4 * p)]
os.makedirs(WORK, exist_ok=True)


def split(name, text):
    """The model through --zb-backward, written once per model and size."""
    path = os.path.join(WORK, name + ".mlir")
    subprocess.run([ZBC_OPT, "-", "--zb-backward", "-o", path], input=text,
                   text=True, check=True)
    return path


models = {}
for p in sorted({p for p, _ in SIZES}):
    for stages in {p, 2 * p}:
        models[("gpt", stages)] = split(f"gpt{stages}", gpt_model(DSL_GPT, stages))
        models[("mlp", stages)] = split(f"mlp{stages}", mlp(stages))

cases = []
for name, v in schedules(ZBC):
    for p, m in SIZES:
        for model in ("mlp", "gpt"):
            cases.append((name, v, p, m, model))


def prove(case):
    name, v, p, m, model = case
    offload = " offload=full" if OFFLOAD else ""
    costs = ["--zb-stage-costs=copy-bandwidth=0.01"] if OFFLOAD else []
    cmd = [ZBC_OPT, models[(model, v * p)], *costs,
           f"--zb-schedule=schedule={name} microbatches={m} virtual={v}{offload}",
           "--zb-insert-p2p", "--zb-verify-schedule"]
    cmd += ["--zb-plan-memory", "-o", "-"] if OFFLOAD else ["-o", os.devnull]
    run = subprocess.run(cmd, text=True, capture_output=True)
    if OFFLOAD and run.returncode == 0 and "host_arena_bytes" not in run.stdout:
        return case, 1, "no rank has a host arena: nothing was offloaded"
    return case, run.returncode, run.stderr


failed = 0
with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
    for (name, v, p, m, model), rc, err in pool.map(prove, cases):
        if rc != 0:
            failed += 1
            print(f"FAILED: {name} p={p} m={m} {model}:\n{err}")
print(f"{len(cases) - failed} of {len(cases)} programs verified")
sys.exit(1 if failed else 0)
