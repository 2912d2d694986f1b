//===- LaunchFiles.h - where each process runs, and the scripts ---*- C++ -*-===//
//
// A compiled pipeline runs as ranks x replicas processes, process k = d P + r
// (rank r of replica d: replica after replica, as MPI numbers them). This
// decides which host each runs on (zbc compile --hosts: consecutive blocks,
// so that neighbouring stages share a host and only a block's edge crosses
// the network) and writes the files that start them: DIR/launch.sh (mpirun
// MPMD; with --hosts, over DIR/hostfile) and DIR/launch-slurm.sh (srun
// --multi-prog, inside a Slurm allocation). docs/user-guide.md, "On two or more hosts".
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_TOOL_LAUNCHFILES_H
#define ZBC_TOOL_LAUNCHFILES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace zbc {

/// One process of the job: which rank executable, which replica, where.
struct Process {
  int rank = 0, replica = 0;
  std::string host; // "" without --hosts: wherever mpirun starts it
};

/// The job's processes in MPI order, placed on `hosts` (may be empty) in
/// consecutive blocks of ceil(processes / hosts).
std::vector<Process> placeProcesses(int ranks, int replicas,
                                    llvm::ArrayRef<std::string> hosts);

/// --hosts's value: comma-separated host names, each once, at most one per
/// process; an error names the bad one.
llvm::Expected<std::vector<std::string>> parseHosts(llvm::StringRef list,
                                                    int processes);

/// Writes DIR/launch.sh and DIR/launch-slurm.sh for `processes`, and
/// DIR/hostfile when they name hosts (else removes a stale one).
llvm::Error writeLaunchFiles(llvm::StringRef dir, int ranks,
                             llvm::ArrayRef<Process> processes);

} // namespace zbc

#endif // ZBC_TOOL_LAUNCHFILES_H
