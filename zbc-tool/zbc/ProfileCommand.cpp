//===- ProfileCommand.cpp - `zbc profile`: measured stage costs -----------===//
//
//   zbc profile MODEL.mlir [--stages N] [--microbatches M] [--steps R]
//       [--data FILE] [-o COSTS.json]
//
// Measures what each stage's F, B and W take on this machine's backend:
// compiles the model into N stages on N ranks under ZB-H1 (B and W apart),
// trains 3 warm-up steps and R recorded ones (Note [Timelines]), and takes
// per stage and kind the median duration over every microbatch of the
// recorded steps. The stages' bytes (M_B: what F keeps for B, M_W: what B
// keeps for W) are the memory model's, which the ranks' ledgers measure
// exactly. `comm` is the shortest transfer seen (issue to completion), a
// lower bound of one message. `copy_bandwidth` (bytes per millisecond) is
// the median over the copies of a second, short run that offloads every
// stash (Note [Offload in the IR]): a copy's bytes (its stage's M_offload)
// over the time the rank's copy queue ran it. `collective_bandwidth` (bytes
// per millisecond) comes from a third run of two replicas (Note [Collective
// bandwidth]). Writes, in milliseconds and bytes, the cost
// file `zbc schedule|compile|run --cost-file` read, naming the model and its
// IR hash so that no other model takes it.
//
//===----------------------------------------------------------------------===//

#include "Compile.h"
#include "Launch.h"
#include "MeasuredTimeline.h"
#include "zbc/Options/OptionValues.h"
#include "Options.h"

#include "zbc/contracts/Files.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <map>

using namespace llvm;
using namespace zbc;

namespace {

#define PROFILE cl::sub(zbc::profileCommand()), cl::cat(zbcCategory)
cl::opt<std::string> modelFile(cl::Positional, cl::Required,
                               cl::desc("<model.mlir>"), PROFILE);
cl::opt<std::string> stagesOpt("stages",
                               cl::desc("Stages to cut the model into (one "
                                        "rank each; default 2)"),
                               cl::value_desc("N"), cl::init("2"), PROFILE);
cl::opt<std::string> microbatchesOpt("microbatches",
                                     cl::desc("Microbatches per step "
                                              "(default 2N)"),
                                     cl::value_desc("M"), PROFILE);
cl::opt<std::string> stepsOpt("steps",
                              cl::desc("Recorded steps after 3 of warm-up "
                                       "(default 10)"),
                              cl::value_desc("R"), cl::init("10"), PROFILE);
cl::opt<std::string> dataOpt("data", cl::desc("Data for the ranks (--data)"),
                             cl::value_desc("FILE"), PROFILE);
cl::opt<std::string> dataDtypeOpt("data-dtype",
                                  cl::desc("The ids of a .bin --data file "
                                           "(the ranks' --data-dtype)"),
                                  cl::value_desc("T"), PROFILE);
cl::opt<std::string> outputFile("o", cl::desc("The cost file (default "
                                              "costs.json)"),
                                cl::value_desc("FILE"), cl::init("costs.json"),
                                PROFILE);
#undef PROFILE

constexpr int kWarmUpSteps = 3;


/// Milliseconds to a tenth of a microsecond: what the clock resolves.
double rounded(double ms) { return std::round(ms * 1e4) / 1e4; }

/// Runs the `processes` compiled into `dir` (`ranks` a replica) for `steps`
/// steps, the last `recorded` traced into DIR/trace, and reads the trace
/// back. `extra`: more options for the ranks.
Expected<MeasuredRun> runTraced(const std::string &dir, int ranks,
                                int processes, int64_t steps,
                                int64_t recorded,
                                const std::vector<std::string> &extra = {}) {
  std::string trace = dir + "/trace";
  std::vector<std::string> argv = {dir + "/launch.sh",
                                   "--steps",
                                   std::to_string(steps),
                                   "--trace",
                                   trace,
                                   "--trace-steps",
                                   std::to_string(recorded),
                                   "--quiet"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  if (!dataOpt.empty())
    argv.insert(argv.end(), {"--data", dataOpt});
  if (!dataDtypeOpt.empty())
    argv.insert(argv.end(), {"--data-dtype", dataDtypeOpt});
  std::string statusDir = dir + "/status";
  sys::fs::create_directories(statusDir);
  argv.insert(argv.end(), {"--status-dir", statusDir});
  if (JobEnd end = runLauncher(argv); !end.succeeded()) {
    explainJobFailure(end, statusDir, processes, ranks);
    return fail(end.forwardedSignal
                    ? "the profiling run was stopped"
                    : formatv("the profiling run failed (exit {0}; the "
                              "ranks' messages are above)",
                              end.exitCode)
                          .str());
  }
  return readMeasuredRun(trace, ranks);
}

double median(std::vector<double> xs) {
  if (xs.empty())
    return 0;
  std::sort(xs.begin(), xs.end());
  size_t n = xs.size();
  return n % 2 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
}

/// Note [Collective bandwidth]: the simulator times a ring all-reduce of B
/// bytes over n members as comm + 2 (n - 1) / n B / collective_bandwidth
/// (Note [Collectives in the simulator]). The profile runs two replicas of
/// the same stages, each rank waiting for every gradient all-reduce as it
/// issues it (--wait-collectives), so that each one's trace interval is its
/// own time, and inverts that formula on each all-reduce over the replicas:
/// the median over the ops of its fastest recorded step, in bytes per
/// millisecond (0 where none took longer than comm, and the cost file
/// leaves it out). *Why the fastest:* an interval also holds the wait for
/// the other replica to issue its match, which the scheduling of the ranks'
/// processes stretches at random; the fastest is the nearest to the
/// transfer alone.
Expected<double> measureCollectives(const Request &request, double comm) {
  Request summing = request;
  summing.options.replicas = 2;
  summing.dir = request.dir + "/collectives";
  Expected<Compiled> compiled = compile(summing);
  if (!compiled)
    return compiled.takeError();
  Expected<MeasuredRun> run =
      runTraced(summing.dir, compiled->ranks, 2 * compiled->ranks, 8, 5,
                {"--wait-collectives"});
  if (!run)
    return run.takeError();
  double latency = std::isfinite(comm) ? comm : 0.0;
  std::map<std::pair<int, std::string>, double> fastest; // rank, op: ms
  std::map<std::pair<int, std::string>, int64_t> bytesOf;
  for (const auto &step : run->events)
    for (auto [r, line] : llvm::enumerate(step))
      for (const TraceEvent &e : line)
        if (e.what == "all-reduce" && e.over == "replicas" && e.bytes > 0) {
          std::pair<int, std::string> op{static_cast<int>(r), e.name};
          double ms = (e.end - e.begin) * 1e3;
          auto [it, fresh] = fastest.try_emplace(op, ms);
          it->second = std::min(it->second, ms);
          bytesOf[op] = e.bytes;
        }
  std::vector<double> bandwidths;
  for (const auto &[op, ms] : fastest)
    if (ms > latency) // two members: 2 (n - 1) / n = 1
      bandwidths.push_back(double(bytesOf[op]) / (ms - latency));
  return std::round(median(bandwidths));
}

Error profile() {
  // The cost file's place first: a profile is minutes of work to lose.
  if (std::string e = rt::checkWritableFile(outputFile, "-o"); !e.empty())
    return fail(e);
  Expected<int64_t> stages = parseInteger("--stages", stagesOpt, 1, 64);
  if (!stages)
    return stages.takeError();
  Expected<int64_t> steps = parseInteger("--steps", stepsOpt, 1, 1000);
  if (!steps)
    return steps.takeError();
  Request request;
  request.input = modelFile;
  request.ranks = *stages;
  request.options.microbatches = 2 * *stages;
  if (microbatchesOpt.getNumOccurrences()) {
    Expected<int64_t> m = parseInteger("--microbatches", microbatchesOpt, 1, 4096);
    if (!m)
      return m.takeError();
    request.options.microbatches = *m;
  }
  request.options.schedule = "zb-h1";
  request.options.optimizer = Optimizer::SGD;
  SmallString<128> dir;
  if (std::error_code ec = sys::fs::createUniqueDirectory("zbc-profile", dir))
    return fail("cannot make a build directory: " + ec.message());
  request.dir = dir.str().str();
  request.launches = true;
  Expected<Compiled> compiled = compile(request);
  if (!compiled)
    return compiled.takeError();

  outs() << formatv("zbc: profiling {0} stages: {1} warm-up and {2} recorded "
                    "steps of {3} microbatches\n",
                    *stages, kWarmUpSteps, *steps, request.options.microbatches);
  outs().flush();
  Expected<MeasuredRun> run =
      runTraced(request.dir, compiled->ranks, compiled->ranks,
                kWarmUpSteps + *steps, *steps);
  if (!run)
    return run.takeError();
  // Per stage and kind, every duration recorded; the shortest transfer.
  std::map<std::pair<int, std::string>, std::vector<double>> durations;
  double comm = INFINITY;
  for (const auto &step : run->events)
    for (const auto &line : step)
      for (const TraceEvent &e : line) {
        double ms = (e.end - e.begin) * 1e3;
        if (e.what == "send" || e.what == "recv" || e.what == "group")
          comm = std::min(comm, ms);
        else
          durations[{e.stage, e.what}].push_back(ms);
      }
  const sched::Problem &problem = compiled->problem;
  json::Array F, B, W, memB, memW;
  for (int s = 0; s < problem.numStages(); ++s) {
    double f = median(durations[{s, "F"}]), b = median(durations[{s, "B"}]),
           w = median(durations[{s, "W"}]);
    if (f <= 0)
      return fail(formatv("stage {0}'s F was never recorded", s));
    F.push_back(rounded(f));
    B.push_back(rounded(b));
    W.push_back(rounded(w));
    memB.push_back(problem.stages[s].memB);
    memW.push_back(problem.stages[s].memW);
    outs() << formatv("  stage {0}: F {1:F3} ms, B {2:F3} ms, W {3:F3} ms "
                      "(median of {4}); M_B {5} bytes, M_W {6} bytes\n",
                      s, f, b, w, durations[{s, "F"}].size(),
                      int64_t(problem.stages[s].memB),
                      int64_t(problem.stages[s].memW));
  }
  // The copy queues' speed: the same stages with every stash offloaded, a
  // step of warm-up and two recorded.
  Request copying = request;
  copying.options.offload = OffloadLever::Full;
  copying.options.copyBandwidth = 1; // any: every stash is copied whatever it is
  copying.dir = request.dir + "/copies";
  Expected<Compiled> offloading = compile(copying);
  if (!offloading)
    return offloading.takeError();
  Expected<MeasuredRun> copied = runTraced(
      copying.dir, offloading->ranks, offloading->ranks, 3, 2);
  if (!copied)
    return copied.takeError();
  std::vector<double> bandwidths;
  for (const auto &step : copied->events)
    for (const auto &line : step)
      for (const TraceEvent &e : line) {
        double ms = (e.end - e.begin) * 1e3;
        if ((e.what == "offload" || e.what == "reload") && ms > 0 &&
            e.stage >= 0 && e.stage < problem.numStages())
          if (double bytes = problem.stages[e.stage].offloaded(); bytes > 0)
            bandwidths.push_back(bytes / ms);
      }
  double copyBandwidth = std::round(median(bandwidths));
  Expected<double> collectiveBandwidth = measureCollectives(request, comm);
  if (!collectiveBandwidth)
    return collectiveBandwidth.takeError();
  json::Object costs{{"model", compiled->model},
                     {"model_hash", compiled->modelHash},
                     // What `zbc schedule --cost-file` simulates by
                     // default: the microbatches measured (no `ranks`: a
                     // compile may place these stages on fewer, --virtual;
                     // the schedule counts them from the lists).
                     {"microbatches", request.options.microbatches},
                     {"comm", std::isfinite(comm) ? rounded(comm) : 0.0},
                     {"F", std::move(F)},
                     {"B", std::move(B)},
                     {"W", std::move(W)},
                     {"M_B", std::move(memB)},
                     {"M_W", std::move(memW)}};
  if (copyBandwidth > 0)
    costs["copy_bandwidth"] = copyBandwidth;
  if (*collectiveBandwidth > 0)
    costs["collective_bandwidth"] = *collectiveBandwidth;
  if (Error e = writeFile(outputFile, [&](raw_ostream &out) {
        out << formatv("{0:2}", json::Value(std::move(costs))) << "\n";
      }))
    return e;
  outs() << formatv("  comm {0:F3} ms; copies {1} bytes/ms (median of {2}); "
                    "collectives {3} bytes/ms; cost file {4} (milliseconds, "
                    "bytes)\n",
                    std::isfinite(comm) ? comm : 0.0, copyBandwidth,
                    bandwidths.size(), *collectiveBandwidth, outputFile);
  sys::fs::remove_directories(request.dir);
  return Error::success();
}

} // namespace

int zbc::runProfileCommand() {
  if (Error e = profile()) {
    errs() << "zbc: error: " << toString(std::move(e)) << "\n";
    return 1;
  }
  return 0;
}
