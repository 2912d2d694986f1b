//===- LaunchFiles.cpp - where each process runs, and the scripts ---------===//
//
// LaunchFiles.h says what; the scripts say why in their own comments, which
// users read.
//
//===----------------------------------------------------------------------===//

#include "LaunchFiles.h"
#include "Options.h"
#include "HostCompiler.h"
#include "OutputFile.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace zbc;

namespace {


/// Writes `text` to DIR/NAME, executable when `script` (OutputFile.h).
Error writeFileIn(StringRef dir, StringRef name, StringRef text, bool script) {
  return writeFile((dir + "/" + name).str(), text, script);
}

/// The check every script starts with: each executable is there.
std::string executablesCheck(StringRef script, int ranks) {
  return formatv("here=$(cd \"$(dirname \"$0\")\" && pwd) || exit 1\n"
                 "for r in $(seq 0 {0}); do\n"
                 "  if [ ! -x \"$here/rank$r\" ]; then\n"
                 "    echo \"{1}: error: $here/rank$r is missing; rebuild "
                 "with zbc compile\" >&2\n"
                 "    exit 1\n"
                 "  fi\n"
                 "done\n",
                 ranks - 1, script)
      .str();
}

std::string launchScript(int ranks, ArrayRef<Process> processes,
                         bool hostfile) {
  std::string mpmd;
  for (auto [k, p] : enumerate(processes))
    mpmd += formatv("{0} -np 1 \"$here/rank{1}\" \"$@\"", k ? " :" : "",
                    p.rank);
  std::string common =
      (mpirunPath() + " --allow-run-as-root --bind-to none"
                      " --mca btl_vader_free_list_num 512")
          .str();
  std::string text =
      "#!/bin/sh\n"
      "# Runs this pipeline: one MPI process per rank executable (and\n"
      "# data-parallel replica), each given this script's arguments\n"
      "# (./rank0 --help lists them). Written by zbc compile; its report.json\n"
      "# says which process runs which rank, replica and host.\n"
      "# Paths in the arguments stay relative to the caller's directory.\n" +
      executablesCheck("launch.sh", ranks) +
      "# --bind-to none: each rank gets a core of its own or shares.\n"
      "# MPI's shared-memory transport grows its list of message\n"
      "# fragments on demand, a heap allocation in the middle of a step:\n"
      "# start it at its largest (the runtime allocates nothing itself).\n"
      "# Every NCCL_, ZBC_, OMP_, OPENBLAS_ and CUDA_ variable goes to every\n"
      "# process (-x); mpirun passes OMPI_MCA_ ones itself.\n"
      "# $ZBC_MPIRUN_ARGS goes to mpirun as it is (inside a Slurm\n"
      "# allocation mpirun finds the hosts itself; or launch-slurm.sh).\n"
      "exports=$(env | sed -n "
      "'s/^\\(\\(NCCL\\|ZBC\\|OMP\\|OPENBLAS\\|CUDA\\)_[A-Za-z0-9_]*\\)=.*/-x "
      "\\1/p')\n";
  if (hostfile)
    text += "# The hosts of zbc compile --hosts, in order: one line per\n"
            "# process, so that mpirun fills each host's block in turn.\n"
            "exec " +
            common +
            " --hostfile \"$here/hostfile\" --map-by slot $exports "
            "$ZBC_MPIRUN_ARGS" +
            mpmd + "\n";
  else
    text += formatv("# This host: oversubscribed only when the {0} processes "
                    "outnumber its cores.\n"
                    "over=\n"
                    "if [ \"$(nproc)\" -lt {0} ]; then over=--oversubscribe; "
                    "fi\n",
                    processes.size())
                .str() +
            "exec " + common + " $over $exports $ZBC_MPIRUN_ARGS" + mpmd + "\n";
  return text;
}

std::string slurmScript(int ranks, ArrayRef<Process> processes) {
  std::string tasks;
  for (auto [k, p] : enumerate(processes))
    tasks += formatv("  echo \"{0} $here/rank{1} $*\"\n", k, p.rank);
  return "#!/bin/sh\n"
         "# Runs this pipeline under Slurm, inside an allocation of " +
         std::to_string(processes.size()) +
         " tasks\n"
         "# (sbatch or salloc -n " +
         std::to_string(processes.size()) +
         "): srun --multi-prog, task k running process k\n"
         "# of report.json. The executables must be at this same path on "
         "every\n"
         "# node. Writes multi-prog.conf beside it (each task's program and "
         "this\n"
         "# script's arguments), then runs srun on it ($ZBC_SRUN, if set, "
         "in its\n"
         "# place); $ZBC_SRUN_ARGS goes to srun as it is. srun passes the\n"
         "# environment on (NCCL_*, ...).\n" +
         executablesCheck("launch-slurm.sh", ranks) +
         "for a in \"$here\" \"$@\"; do\n"
         "  case \"$a\" in\n"
         "    *[[:space:]\\\"\\']*)\n"
         "      echo \"launch-slurm.sh: error: '$a' holds a space or a quote, "
         "which a\" \\\n"
         "        \"--multi-prog file cannot carry\" >&2\n"
         "      exit 2;;\n"
         "  esac\n"
         "done\n"
         "{\n"
         "  echo \"# Written by launch-slurm.sh: task, program, arguments.\"\n" +
         tasks + "} > \"$here/multi-prog.conf\" || exit 1\n" +
         formatv("exec ${{ZBC_SRUN:-srun} --ntasks={0} $ZBC_SRUN_ARGS "
                 "--multi-prog \"$here/multi-prog.conf\"\n",
                 processes.size())
             .str();
}

} // namespace

std::vector<Process> zbc::placeProcesses(int ranks, int replicas,
                                         ArrayRef<std::string> hosts) {
  std::vector<Process> processes;
  int total = ranks * replicas;
  int block = hosts.empty()
                  ? total
                  : (total + static_cast<int>(hosts.size()) - 1) /
                        static_cast<int>(hosts.size());
  for (int d = 0; d < replicas; ++d)
    for (int r = 0; r < ranks; ++r) {
      Process p;
      p.rank = r;
      p.replica = d;
      if (!hosts.empty())
        p.host = hosts[processes.size() / block];
      processes.push_back(p);
    }
  return processes;
}

Expected<std::vector<std::string>> zbc::parseHosts(StringRef list,
                                                   int processes) {
  std::vector<std::string> hosts;
  StringSet<> seen;
  SmallVector<StringRef> names;
  list.split(names, ',');
  for (StringRef name : names) {
    name = name.trim();
    bool valid = !name.empty() && all_of(name, [](char c) {
      return isAlnum(c) || c == '-' || c == '.' || c == '_';
    });
    if (!valid)
      return fail("--hosts: '" + name +
                  "' is not a host name (letters, digits, '-', '.', '_')");
    if (!seen.insert(name).second)
      return fail("--hosts: '" + name + "' is named twice");
    hosts.push_back(name.str());
  }
  if (static_cast<int>(hosts.size()) > processes)
    return fail(formatv("--hosts names {0} hosts for {1} processes (one "
                        "process at least per host)",
                        hosts.size(), processes));
  return hosts;
}

Error zbc::writeLaunchFiles(StringRef dir, int ranks,
                            ArrayRef<Process> processes) {
  bool hosted = !processes.empty() && !processes.front().host.empty();
  std::string hostfile;
  for (const Process &p : processes)
    hostfile += p.host + "\n";
  std::string hostfilePath = (dir + "/hostfile").str();
  if (hosted) {
    if (Error e = writeFileIn(dir, "hostfile", hostfile, false))
      return e;
  } else if (std::error_code ec = sys::fs::remove(hostfilePath)) {
    return fail("cannot remove '" + hostfilePath + "': " + ec.message());
  }
  if (Error e = writeFileIn(dir, "launch.sh",
                            launchScript(ranks, processes, hosted), true))
    return e;
  return writeFileIn(dir, "launch-slurm.sh", slurmScript(ranks, processes),
                     true);
}
