"""The reference implementation's scheduler code, loaded unchanged.

sail-sg's zero-bubble-pipeline-parallelism keeps its schedulers in
megatron/core/pipeline_parallel/zerobubble/scheduler/. The files the
benchmarks run need only the standard library once their imports resolve,
but the megatron package they sit in needs torch, so `load` copies them into
a temporary package of the same name instead of importing megatron, and puts
stand-ins into sys.modules for the modules a file imports and never calls on
the path the benchmark runs (zb.py imports torch for a type annotation and
pulp for its ILP).

The reference: `git clone https://github.com/sail-sg/zero-bubble-pipeline-parallelism`
(measured at its commit 39f2c186), or the git directory the library's fetch
tool brings.
"""
import importlib
import os
import subprocess
import sys
import tempfile
import time
import types

SCHED_DIR = "megatron/core/pipeline_parallel/zerobubble/scheduler"
PACKAGE = SCHED_DIR.replace("/", ".")


def read(ref, name):
    """One file of the reference, from a checkout or a bare git directory."""
    path = os.path.join(ref, SCHED_DIR, name)
    if os.path.exists(path):
        with open(path) as f:
            return f.read()
    return subprocess.run(["git", "--git-dir", ref, "show", f"HEAD:{SCHED_DIR}/{name}"],
                          check=True, capture_output=True, text=True).stdout


def load(ref, files, stand_ins=None):
    """Imports the reference's `files` (names without .py), unchanged; each
    module in `stand_ins` (name: its attributes; one the files import but
    the caller's path never uses) is put in place first."""
    for name, attributes in (stand_ins or {}).items():
        module = sys.modules.setdefault(name, types.ModuleType(name))
        for key, value in attributes.items():
            setattr(module, key, value)
    root = tempfile.mkdtemp(prefix="zbref-")
    package = root
    for part in SCHED_DIR.split("/"):
        package = os.path.join(package, part)
        os.makedirs(package, exist_ok=True)
        open(os.path.join(package, "__init__.py"), "w").close()
    for name in files:
        with open(os.path.join(package, name + ".py"), "w") as f:
            f.write(read(ref, name + ".py"))
    sys.path.insert(0, root)
    return [importlib.import_module(f"{PACKAGE}.{name}") for name in files]


def run_retrying(args):
    """subprocess.run, retried for a minute while a rebuild replaces zbc."""
    for attempt in range(30):
        try:
            return subprocess.run(args, capture_output=True, text=True)
        except OSError:  # the binary is being written (ETXTBSY, EACCES)
            if attempt == 29:
                raise
            time.sleep(2)
