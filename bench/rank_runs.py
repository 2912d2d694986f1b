"""What the benchmarks that train on the CPU ranks share: running a tool,
and one training run of a compiled output directory with its ranks'
reports (the rank programs' --report: losses, peaks, where the step time
went)."""
import json
import os
import subprocess
import sys


def run(cmd):
    """Runs `cmd`; exits with its output if it fails."""
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{result.stdout}{result.stderr}")
    return result


def train(out, steps, report):
    """Trains the compiled `out` for `steps` steps (its launch.sh), each
    process reporting into `report`; their reports, by file name."""
    run([os.path.join(out, "launch.sh"), "--steps", str(steps), "--quiet",
         "--report", report])
    reports = []
    for name in sorted(os.listdir(report)):
        with open(os.path.join(report, name)) as f:
            reports.append(json.load(f))
    return reports
