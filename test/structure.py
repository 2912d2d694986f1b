#!/usr/bin/env python3
"""The layering rules the code keeps, checked on its #includes.

  1. The schedule core (the problem, the table, the dependences, programs
     with transfers and their proof, the simulator) includes no format:
     not the PyTorch CSV (TorchCSV.h), the exports (Export.h) or the cost
     file (CostFile.h). Formats read and write the core, never the reverse.
  2. The runtime's core, the code every backend shares (runtime/src/*.cpp
     and *.h outside cpu/ and cuda/: the seams Device.h and Transport.h,
     Main, Rank, Optimizer, the ledger, the kernel calls' checks), includes
     no backend: nothing under runtime/src/cpu or runtime/src/cuda, no
     CUDA, NCCL, MPI or OpenBLAS header.
  3. The dialect includes nothing of the passes, the code generator or the
     runtime's sources (zbc/Support is the shared bottom); of the runtime
     only its kernel table (zbc/runtime/KernelTable.h), which holds the
     kernel ops' shapes to their rows (KernelShape.h) and includes nothing
     but <stdint.h>.
  4. The contracts the tools and the ranks share (runtime/contracts) include
     only themselves, the runtime's C ABI (zbc/runtime/zbc_runtime.h), fmt
     and the C/C++ and POSIX headers: no runtime source, backend, LLVM or
     MLIR. The tool (zbc-tool) reads them and includes nothing else of the
     runtime's.

Exits 1 naming each file, line and include that breaks a rule.
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')

# The core's public headers, and every file of the library's Core and
# Program folders (passes/lib/Schedule/CMakeLists.txt names the folders).
SCHEDULE_CORE_HEADERS = [
    "passes/include/zbc/Schedule/Problem.h",
    "passes/include/zbc/Schedule/ScheduleTable.h",
    "passes/include/zbc/Schedule/Dependences.h",
    "passes/include/zbc/Schedule/Program.h",
    "passes/include/zbc/Schedule/Simulator.h",
]
SCHEDULE_CORE_FOLDERS = ["passes/lib/Schedule/Core",
                         "passes/lib/Schedule/Program"]
FORMATS = ("zbc/Schedule/TorchCSV.h", "zbc/Schedule/Export.h",
           "zbc/Schedule/CostFile.h")

RUNTIME_CORE = "runtime/src"  # its files, not its backend folders
SEAMS = ["runtime/src/Device.h", "runtime/src/Transport.h"]
KERNEL_TABLE = "runtime/include/zbc/runtime/KernelTable.h"
# What a contract may include besides the standard and POSIX headers
# (<...> without a slash, or sys/).
CONTRACT_ALLOWED = re.compile(r"^(zbc/contracts/|zbc/runtime/zbc_runtime\.h$"
                              r"|fmt/|sys/|[a-z_]+(\.h)?$)")
BACKEND = re.compile(r"^(cpu/|cuda/|\.\./cpu/|\.\./cuda/|cuda|cublas|nccl"
                     r"|mpi\.h|cblas\.h|openblas)")


def includes(path):
    with open(os.path.join(ROOT, path)) as f:
        for number, line in enumerate(f, 1):
            match = INCLUDE.match(line)
            if match:
                yield number, match.group(1)


def core_sources(folder):
    """The C++ files directly in `folder` (not its subfolders), sorted."""
    return sorted(os.path.join(folder, f)
                  for f in os.listdir(os.path.join(ROOT, folder))
                  if f.endswith((".h", ".cpp")))


def sources(folder):
    """The C++ files under `folder`, relative to the root, sorted."""
    found = []
    for directory, _, files in os.walk(os.path.join(ROOT, folder)):
        found += [os.path.relpath(os.path.join(directory, f), ROOT)
                  for f in files if f.endswith((".h", ".cpp"))]
    return sorted(found)


def main():
    broken = []
    core = SCHEDULE_CORE_HEADERS + [path for folder in SCHEDULE_CORE_FOLDERS
                                    for path in sources(folder)]
    if len(core) == len(SCHEDULE_CORE_HEADERS):
        broken.append("found no sources under " +
                      ", ".join(SCHEDULE_CORE_FOLDERS))
    for path in core:
        for number, name in includes(path):
            if name in FORMATS or name.startswith("Formats/"):
                broken.append(f"{path}:{number}: the schedule core includes "
                              f"the format '{name}'")
    runtime_core = core_sources(RUNTIME_CORE)
    for seam in SEAMS:
        if seam not in runtime_core:
            broken.append(f"{seam} is not in the runtime's core any more")
    for path in runtime_core:
        for number, name in includes(path):
            if BACKEND.match(name):
                broken.append(f"{path}:{number}: the runtime's core includes "
                              f"the backend header '{name}'")
    for path in sources("dialect"):
        for number, name in includes(path):
            if name.startswith(("zbc/Passes/", "zbc/Schedule/",
                                "zbc/Analysis/", "zbc/Codegen/")):
                broken.append(f"{path}:{number}: the dialect includes "
                              f"'{name}' from a layer above it")
            elif (name.startswith(("zbc/runtime/", "zbc/contracts/"))
                  or "runtime/" in name) and name != "zbc/runtime/KernelTable.h":
                broken.append(f"{path}:{number}: the dialect includes "
                              f"'{name}'; of the runtime it may include only "
                              "zbc/runtime/KernelTable.h")
    for number, name in includes(KERNEL_TABLE):
        if name != "stdint.h":
            broken.append(f"{KERNEL_TABLE}:{number}: the kernel table, which "
                          f"the dialect includes, includes '{name}'")
    contracts = sources("runtime/contracts")
    if not contracts:
        broken.append("found no sources under runtime/contracts")
    for path in contracts:
        for number, name in includes(path):
            if not CONTRACT_ALLOWED.match(name):
                broken.append(f"{path}:{number}: a contract includes "
                              f"'{name}', which is not a contract, the "
                              "runtime's C ABI, fmt or a system header")
    for path in sources("zbc-tool"):
        for number, name in includes(path):
            if name.startswith("zbc/runtime/") or "runtime/src" in name:
                broken.append(f"{path}:{number}: the tool includes the "
                              f"runtime's '{name}'; what it shares with the "
                              "ranks is in zbc/contracts")
    for line in broken:
        print(f"error: {line}")
    checked = len(core) + len(runtime_core) + len(contracts)
    if broken:
        return 1
    print(f"ok: {checked} schedule core, runtime core and contract files, "
          "the dialect and the tool keep the layering")
    return 0


if __name__ == "__main__":
    sys.exit(main())
