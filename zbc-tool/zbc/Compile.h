//===- Compile.h - the compile step `zbc compile` and `zbc run` share -*- C++ -*-===//
//
// A request (ranks, microbatches, schedule, ...; read from the command
// line the two subcommands share) and what compiling it into DIR produced:
// the programs, launch.sh, report.json, schedule.svg (CompileCommand.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_TOOL_COMPILE_H
#define ZBC_TOOL_COMPILE_H

#include "LaunchFiles.h"
#include "ScheduleFile.h"

#include "zbc/Schedule/Simulator.h"
#include "zbc/contracts/DataFile.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace zbc {

struct Request {
  std::string input, costFile; // the model; a cost file or ""
  std::string recompute = "none"; // --recompute: none, full or auto
  std::string offload = "none";   // --offload: none, full or auto
  double copyBandwidth = 0;       // --copy-bandwidth (0: not given)
  int64_t ranks = 0, microbatches = 0;
  /// Stages per rank: --virtual, checked against the schedule; unset for an
  /// interleaved schedule without it, which takes the model's stages over
  /// the ranks (1 for a model zbc cuts itself).
  std::optional<int64_t> virtualStages;
  /// Data-parallel replicas of the pipeline; `microbatches` is each one's
  /// (the job's batch is replicas x microbatches).
  int64_t replicas = 1;
  /// Note [Two memory limits]: --mem-limit, a rank's whole memory in
  /// bytes (0: none, and no default budget either), or --activation-budget,
  /// what the schedule keeps in flight (nullopt: the schedule's default).
  std::optional<int64_t> memoryLimit;
  std::optional<double> activationBudget;
  /// `schedule`: a registered schedule's name, or a schedule file's name.
  std::string schedule, optimizer, dir;
  /// --schedule-file (or a model file that holds its zb.program): where
  /// the order comes from instead of the registry (ScheduleFile.h).
  std::optional<ScheduleFile> scheduleFile;
  /// Which runtime the rank programs link: "cpu" (OpenBLAS, MPI) or
  /// "cuda" (a GPU per rank, NCCL; built where nvcc and NCCL were found).
  std::string backend = "cpu";
  /// Print nothing but errors (zbc run --quiet): no banner.
  bool quiet = false;
  /// --hosts: where the processes run, in blocks (LaunchFiles.h); empty:
  /// wherever mpirun starts them.
  std::vector<std::string> hosts;
};

/// How long each part took, for report.json and the benchmark.
struct Timings {
  double passes = 0, codegen = 0, hostCompile = 0;
};

struct Compiled {
  int ranks = 0, stages = 0;
  std::string model, modelHash; // zb::modelHashOf
  std::vector<int64_t> peak, arena;
  /// Per rank: the offloaded stashes' host peak and arena (0 without).
  std::vector<int64_t> hostPeak, hostArena;
  /// With --mem-limit: the activation budget the schedule was built at
  /// (Note [Rank budget], RankBudget.h).
  std::optional<double> activationBudget;
  double makespan = 0, bubbleRate = 0;
  /// Where the order came from: "" for a registered schedule, else the
  /// file and its format ("PyTorch CSV, compute+comms 'x.csv'").
  std::string scheduleSource;
  Timings seconds;
  /// The schedule and the costs it was built with (the picture's).
  std::optional<sched::Problem> problem;
  sched::ScheduleTable table;
  /// The model's data keys (inputs and labels), as the ranks read them.
  std::vector<rt::DataKey> dataKeys;
  std::set<std::string> paramNames; // every zb.param of the model
  /// The job's processes (rank, replica, host), as launch.sh starts them.
  std::vector<Process> processes;
};

/// The request on the command line; without -o, a fresh temporary DIR
/// unless `outputRequired`.
llvm::Expected<Request> readRequest(bool outputRequired);

/// The data keys (inputs and labels) of the model in `modelPath`, as its
/// ranks read them: what a data file for it must hold (DataFile.h).
llvm::Expected<std::vector<rt::DataKey>>
modelDataKeys(const std::string &modelPath);

/// Makes `dir` (zbc's -o) and locks it for this process's lifetime (Note
/// [Files checked first] in zbc/contracts/Files.h): a second zbc compiling
/// or running into it meanwhile is refused, naming this one. Idempotent.
llvm::Error claimOutputDirectory(const std::string &dir);

/// `zbc compile`, into request.dir (claimed first); prints the summary.
llvm::Expected<Compiled> compile(const Request &request);

} // namespace zbc

#endif // ZBC_TOOL_COMPILE_H
