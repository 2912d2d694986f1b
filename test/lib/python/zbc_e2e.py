"""Running commands in the e2e suites: timeouts, expected failures.

Every command runs under a timeout, so a hang fails the test instead of
stalling the suite.
"""
import os
import shutil
import subprocess
import sys

TIMEOUT = 300


def fresh_dir(*parts):
    """The directory os.path.join(*parts), emptied (made if missing)."""
    path = os.path.join(*parts)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path
EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples")


def schedule_only():
    """The environment of a `zbc compile` whose rank executables nothing runs
    (a probe of what fits a limit): $ZBC_CXX, the host compiler zbc calls,
    is `true`, so zbc compiles, proves and writes everything but the
    executables, about half of a small pipeline's compile time."""
    return dict(os.environ, ZBC_CXX=shutil.which("true") or "/bin/true")


def run(cmd, env=None, check=True, timeout=TIMEOUT):
    """Runs `cmd`; a timeout or (with check) a non-zero exit fails the test."""
    try:
        result = subprocess.run(cmd, text=True, capture_output=True, env=env,
                                timeout=timeout)
    except subprocess.TimeoutExpired:
        sys.exit(f"FAILED: timed out after {timeout} s (a hang): {' '.join(cmd)}")
    if check and result.returncode != 0:
        sys.exit(f"FAILED: exit {result.returncode}: {' '.join(cmd)}\n"
                 f"{result.stdout}\n{result.stderr}")
    return result


def expect_failure(cmd, ranks, message, env=None):
    """`cmd` must exit non-zero, each of `ranks` ranks saying `message`."""
    result = run(cmd, env=env, check=False, timeout=120)
    said = (result.stdout + result.stderr).count(message)
    if result.returncode == 0 or said < ranks:
        sys.exit(f"FAILED: {' '.join(cmd)} exited {result.returncode} with "
                 f"'{message}' {said} times (want non-zero, {ranks} times):\n"
                 f"{result.stdout}\n{result.stderr}")
    print(f"ok: exit {result.returncode}, '{message}' from {said} ranks: "
          f"{' '.join(os.path.basename(c) for c in cmd[:2])}")
