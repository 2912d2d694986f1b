"""The e2e mode of deployment on several hosts (driven by e2e.py).

  hosts  the example GPT on 4 ranks (AdamW, 3 steps of synthetic data),
         launched three ways, with the same parameters after them bit for
         bit:
           - on this host: launch.sh oversubscribes only when the 4
             processes outnumber the cores;
           - `zbc compile --hosts localhost,127.0.0.1`: two host names that
             both resolve here, written to DIR/hostfile in blocks (ranks
             0-1 on the first, 2-3 on the second), the banner and
             report.json saying which process runs which rank, replica and
             host; launch.sh over the hostfile;
           - launch-slurm.sh, under a stand-in for srun (this machine has
             no Slurm) that starts each task of the --multi-prog file it
             wrote as one MPI process, in task order;
         then what is refused: a host named twice, more hosts than
         processes, a name that is not one, and an argument a --multi-prog
         file cannot carry.
"""
import json
import os
import stat
import sys

from zbc_e2e import expect_failure, fresh_dir, run
from zbc_models import gpt

HOSTS = ["localhost", "127.0.0.1"]
TRAIN = ["--steps", "3", "--quiet"]

# A stand-in for srun: the tasks of a --multi-prog file as one MPI job,
# task k as process k (what srun does inside an allocation).
FAKE_SRUN = r'''#!/usr/bin/env python3
import os, sys
args = sys.argv[1:]
tasks = int(next(a for a in args if a.startswith("--ntasks=")).split("=")[1])
conf = args[args.index("--multi-prog") + 1]
lines = [l.split() for l in open(conf) if l.strip() and not l.startswith("#")]
if [int(l[0]) for l in lines] != list(range(tasks)):
    sys.exit(f"srun: the file's tasks are not 0..{tasks - 1}")
cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to",
       "none"]
for k, line in enumerate(lines):
    cmd += ([":"] if k else []) + ["-np", "1"] + line[1:]
os.execvp(cmd[0], cmd)
'''


def _saved(path):
    """rank file -> its bytes, of a --save directory."""
    return {f: open(os.path.join(path, f), "rb").read()
            for f in sorted(os.listdir(path))}


def hosts(args):
    zbc = os.path.join(args.bin, "zbc")
    work = fresh_dir(args.work, "hosts")
    model = os.path.join(work, "gpt.mlir")
    with open(model, "w") as f:
        f.write(gpt(os.path.join(args.bin, "zbc-dsl-gpt"), 4))
    compile_ = [zbc, "compile", model, "--ranks", "4", "--microbatches", "8",
                "--optimizer", "adamw"]

    one = os.path.join(work, "one-host")
    run(compile_ + ["-o", one])
    script = open(os.path.join(one, "launch.sh")).read()
    if 'if [ "$(nproc)" -lt 4 ]; then over=--oversubscribe; fi' not in script:
        sys.exit("FAILED: launch.sh does not oversubscribe only when the "
                 f"processes outnumber the cores:\n{script}")
    if os.path.exists(os.path.join(one, "hostfile")):
        sys.exit("FAILED: a hostfile without --hosts")
    run([os.path.join(one, "launch.sh"), *TRAIN, "--save",
         os.path.join(work, "saved-one")])
    want = _saved(os.path.join(work, "saved-one"))

    two = os.path.join(work, "two-hosts")
    said = run(compile_ + ["--hosts", ",".join(HOSTS), "-o", two]).stdout
    hostfile = open(os.path.join(two, "hostfile")).read().split()
    if hostfile != [HOSTS[0]] * 2 + [HOSTS[1]] * 2:
        sys.exit(f"FAILED: the hostfile is {hostfile}")
    for k in range(4):
        line = f"process {k}: rank {k} of replica 0 on {HOSTS[k // 2]}"
        if line not in said:
            sys.exit(f"FAILED: the banner lacks '{line}':\n{said}")
    report = json.load(open(os.path.join(two, "report.json")))
    placed = [(p["process"], p["rank"], p["replica"], p["host"])
              for p in report["processes"]]
    if placed != [(k, k, 0, HOSTS[k // 2]) for k in range(4)]:
        sys.exit(f"FAILED: report.json's processes are {placed}")
    stages = [m["stages"] for m in report["memory"]]
    if stages != [[0], [1], [2], [3]]:
        sys.exit(f"FAILED: report.json's stages per rank are {stages}")
    run([os.path.join(two, "launch.sh"), *TRAIN, "--save",
         os.path.join(work, "saved-two")])
    if _saved(os.path.join(work, "saved-two")) != want:
        sys.exit("FAILED: the run over the hostfile saved other parameters "
                 "than the run on one host")
    print(f"ok: --hosts {','.join(HOSTS)}: hostfile and report name ranks "
          "0-1 on the first, 2-3 on the second; 3 AdamW steps over it equal "
          "the one-host run bit for bit", flush=True)

    srun = os.path.join(work, "srun")
    with open(srun, "w") as f:
        f.write(FAKE_SRUN)
    os.chmod(srun, os.stat(srun).st_mode | stat.S_IXUSR)
    env = dict(os.environ, ZBC_SRUN=srun)
    run([os.path.join(two, "launch-slurm.sh"), *TRAIN, "--save",
         os.path.join(work, "saved-slurm")], env=env)
    conf = [l.split() for l in open(os.path.join(two, "multi-prog.conf"))
            if not l.startswith("#")]
    want_conf = [[str(k), os.path.join(two, f"rank{k}"), *TRAIN, "--save",
                  os.path.join(work, "saved-slurm")] for k in range(4)]
    if conf != want_conf:
        sys.exit(f"FAILED: multi-prog.conf is {conf}, want {want_conf}")
    if _saved(os.path.join(work, "saved-slurm")) != want:
        sys.exit("FAILED: the --multi-prog run saved other parameters than "
                 "the run on one host")
    print("ok: launch-slurm.sh's --multi-prog file (task k: rank k and the "
          "arguments) trains as the one-host run", flush=True)

    for hosts_, message in [("a,b,a", "'a' is named twice"),
                            ("a,b,c,d,e", "names 5 hosts for 4 processes"),
                            ("a,b c", "'b c' is not a host name")]:
        expect_failure(compile_ + ["--hosts", hosts_, "-o",
                                   os.path.join(work, "refused")], 1, message)
    expect_failure([os.path.join(two, "launch-slurm.sh"), "--data",
                    "my data.txt"], 1, "holds a space or a quote", env=env)
    print("ok: refused: a host named twice, more hosts than processes, a "
          "bad name, an argument --multi-prog cannot carry", flush=True)


MODES = {"hosts": hosts}
