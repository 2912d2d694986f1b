"""The e2e modes of the runtime's backends (driven by e2e.py).

  cuda-without-gpu  (built where the CUDA backend is) the example MLP and GPT,
                    fp32 and bf16, compile with --backend cuda into rank
                    executables that link the CUDA runtime, cuBLASLt and
                    NCCL; on a machine without a GPU each rank of a launch
                    exits 1 within seconds saying "no CUDA device", and so
                    does `zbc run --backend cuda`; an unknown backend is
                    refused before anything is built. (bench/gpu/run.sh
                    runs the same executables on a GPU.)
"""
import os
import sys
import time

from zbc_e2e import expect_failure, fresh_dir, run
from zbc_models import gpt, mlp


def cuda_without_gpu(args):
    zbc = os.path.join(args.bin, "zbc")
    dsl_gpt = os.path.join(args.bin, "zbc-dsl-gpt")
    fresh_dir(args.work)
    models = {"mlp": mlp(2), "gpt": gpt(dsl_gpt, 2)}
    models["gpt-bf16"] = gpt(dsl_gpt, 2, "--bf16")
    for name, text in models.items():
        source = os.path.join(args.work, f"{name}.mlir")
        with open(source, "w") as f:
            f.write(text)
        out = os.path.join(args.work, name)
        run([zbc, "compile", source, "--ranks", "2", "--microbatches", "4",
             "--backend", "cuda", "-o", out])
        log = open(os.path.join(out, "build.log")).read()
        if "libzbc_runtime_cuda.a" not in log or "-lnccl" not in log:
            sys.exit(f"FAILED: {name}: the ranks were not linked against the "
                     f"CUDA runtime:\n{log}")
        begin = time.monotonic()
        expect_failure([os.path.join(out, "launch.sh"), "--steps", "1"], 2,
                       "no CUDA device")
        seconds = time.monotonic() - begin
        if seconds > 30:
            sys.exit(f"FAILED: {name}: the launch took {seconds:.0f} s to fail")
        print(f"ok {name}: compiled for the CUDA backend; without a GPU every "
              f"rank says so ({seconds:.1f} s)")
    expect_failure([zbc, "run", os.path.join(args.work, "mlp.mlir"),
                    "--ranks", "2", "--microbatches", "4", "--backend",
                    "cuda", "-o", os.path.join(args.work, "run")], 2,
                   "no CUDA device")
    expect_failure([zbc, "compile", os.path.join(args.work, "mlp.mlir"),
                    "--ranks", "2", "--microbatches", "4", "--backend", "tpu",
                    "-o", os.path.join(args.work, "tpu")], 1,
                   "--backend must be 'cpu' or 'cuda'")
    print("ok zbc run --backend cuda fails clearly; an unknown backend is "
          "refused")


MODES = {"cuda-without-gpu": cuda_without_gpu}
