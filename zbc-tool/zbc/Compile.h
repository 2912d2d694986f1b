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
#include "OutputFile.h"
#include "ScheduleFile.h"

#include "zbc/Options/CompileOptions.h"
#include "zbc/Schedule/Simulator.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace zbc {
namespace zb {
class PipelineOp;
class ProgramOp;
} // namespace zb

/// What `zbc compile` and `zbc run` are asked to do: the compile itself as
/// typed options (CompileOptions.h: its microbatches are one replica's),
/// and what only the tool decides (the model file, the ranks, the
/// replicas, the backend, the output directory, the hosts).
struct Request {
  std::string input; // the model
  CompileOptions options;
  int64_t ranks = 0;
  /// --schedule-file (or a model file that holds its zb.program): where
  /// the order comes from instead of the registry (ScheduleFile.h);
  /// `options.schedule` is then the file's name.
  std::optional<ScheduleFile> scheduleFile;
  /// Which runtime the rank programs link: "cpu" (OpenBLAS, MPI) or
  /// "cuda" (a GPU per rank, NCCL; built where nvcc and NCCL were found).
  std::string backend = "cpu";
  std::string dir;
  /// Print nothing but errors (zbc run --quiet): no banner.
  bool quiet = false;
  /// zbc launches the job itself (zbc run, zbc profile): the banner does
  /// not tell the user to run launch.sh.
  bool launches = false;
  /// --hosts: where the processes run, in blocks (LaunchFiles.h); empty:
  /// wherever mpirun starts them.
  std::vector<std::string> hosts;
};

/// How long each part took, for report.json and the benchmark.
struct Timings {
  double passes = 0, codegen = 0, hostCompile = 0;
};

/// What compiling a request made, as its program records it (Note [Costs
/// in the IR], zb.program's predictions and levers): read, not recomputed.
struct Compiled {
  int ranks = 0, stages = 0;
  std::string model, modelHash; // zb::modelHashOf
  std::vector<int64_t> peak, arena;
  /// Per rank: its parameters' elements, and the bytes their weights,
  /// gradients, masters and optimizer state take (Note [Master weights],
  /// Note [Sharded optimizer]).
  std::vector<int64_t> paramElements, paramBytes;
  /// Per rank: the offloaded stashes' host peak and arena (0 without).
  std::vector<int64_t> hostPeak, hostArena;
  /// The activation budget the schedule was built at (given, or fitted to
  /// the memory limit: Note [Rank budget]).
  std::optional<double> activationBudget;
  double makespan = 0, bubbleRate = 0;
  /// The memory levers the order was built with (zb.program's `levers`):
  /// recompute and offload as chosen ("none", "full", "selective", "auto")
  /// and the backward "stored" or "checkpointed".
  std::string recompute = "none", offload = "none", backward = "stored";
  /// Where the order came from: "" for a registered schedule, else the
  /// file and its format ("PyTorch CSV, compute+comms 'x.csv'").
  std::string scheduleSource;
  Timings seconds;
  /// The costs the schedule was built with (the stages' on the IR) and
  /// the schedule: the picture's, the measured picture's, the profile's.
  sched::Problem problem;
  std::string timeUnit; // the costs': "FLOPs" or "ms"
  sched::ScheduleTable table;
  /// The order's timeline as predicted, for the picture.
  sched::SimResult predicted;
  /// The job's processes (rank, replica, host), as launch.sh starts them.
  std::vector<Process> processes;
};

/// The request on the command line; without -o, a fresh temporary DIR
/// unless `outputRequired`.
llvm::Expected<Request> readRequest(bool outputRequired);

/// Makes `dir` (zbc's -o) and locks it for this process's lifetime (Note
/// [Files checked first] in zbc/contracts/Files.h): a second zbc compiling
/// or running into it meanwhile is refused, naming this one. Idempotent.
llvm::Error claimOutputDirectory(const std::string &dir);

/// `zbc compile`, into request.dir (claimed first); prints the summary.
llvm::Expected<Compiled> compile(const Request &request);

/// What the passes recorded on `program` (its pipeline `pipeline`) into
/// `compiled`: every rank's peak and arena, the budget, the prediction and
/// the levers, the order and its costs (CompileReport.cpp).
llvm::Error readProgram(zb::ProgramOp program, zb::PipelineOp pipeline,
                        Compiled &compiled);
/// schedule.svg: the predicted timeline of `compiled`.
void writePredictedSVG(const Compiled &compiled, llvm::raw_ostream &os,
                       llvm::StringRef title);
/// report.json and the banner `zbc compile` prints (CompileReport.cpp).
llvm::Error writeReport(const Request &request, const Compiled &compiled);
void printBanner(const Request &request, const Compiled &compiled);

} // namespace zbc

#endif // ZBC_TOOL_COMPILE_H
