//===- Main.cpp - zbc_rt_main: start-up, the training loop, the end -------===//
//
// The options, start-up (StartUp.cpp), the training loop (the generated
// `step`, the end of step: outstanding transfers, the deferred optimizer
// steps, the ledger's sweep, Note [Non-finite stops the run], the progress
// line; the held-out evaluation and the checkpoints between steps), and the
// end (the memory line, --save, --report). Failures: in a step the failing
// rank prints where and why and aborts the job, so no rank waits forever
// for a peer that stopped (Note [Lost ranks] in Watchdog.h for a peer that
// dies or hangs).
//
//===----------------------------------------------------------------------===//

#include "Checkpoint.h"
#include "Rank.h"
#include "StartUp.h"

#include "zbc/contracts/Files.h"
#include "zbc/contracts/SafeTensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>

namespace zbc::rt {
namespace {

/// Writes the parameters after `stepsDone` steps to DIR/rankR.safetensors.
std::string saveParams(zbc_rt_rank *rank, const std::string &dir,
                       int64_t stepsDone) {
  const zbc_rt_program &p = *rank->program;
  if (std::string error = makeDirectories(dir); !error.empty())
    return error;
  TensorFile file;
  std::vector<float> weights;
  for (int32_t i = 0; i < p.param_count; ++i) {
    const zbc_rt_param &param = p.params[i];
    if (std::string error = readWholeWeights(rank, param, weights);
        !error.empty())
      return error;
    StoredTensor t;
    t.dtype = "F32";
    t.shape.assign(param.shape, param.shape + param.rank_of_shape);
    t.data.resize(weights.size() * 4);
    std::memcpy(t.data.data(), weights.data(), t.data.size());
    file[param.name] = std::move(t);
  }
  return writeSafeTensors(fmt::format("{}/rank{}.safetensors", dir, p.rank),
                          file, savedMetadata(p, stepsDone));
}

/// What the run measured, for the progress lines and --report; start-up's
/// findings first.
struct RunLog : StartedRun {
  std::vector<double> losses;
  std::vector<std::pair<int64_t, double>> evals; // (steps done, loss)
  int64_t allocations = -1, deviceAllocations = -1;
  double seconds = 0;
};

[[noreturn]] void failRun(zbc_rt_rank *rank) {
  std::string message = rank->error.empty() ? "failed" : rank->error;
  fmt::print(stderr, "zbc rank {}: error: {}\n", rank->program->rank, message);
  std::fflush(stderr);
  rank->watchdog.status("failed: " + message + "\n");
  rank->transport->abort(1);
  std::_Exit(1); // abort does not return; this says so to the compiler
}

/// A compute op's device time (op -1: the optimizer steps'), into the
/// profile (a GPU's events).
void addComputeSeconds(void *context, int32_t op, double seconds) {
  auto *rank = static_cast<zbc_rt_rank *>(context);
  if (rank->evaluating)
    return;
  if (op < 0) {
    rank->profile.optimizerSeconds += seconds;
    return;
  }
  const zbc_rt_op &o = rank->program->ops[op];
  rank->profile.computeSeconds[static_cast<size_t>(o.stage) * ZBC_RT_COMPUTE_KIND_COUNT + o.what] +=
      seconds;
}

/// One pass of the order and its end: the outstanding transfers, the
/// deferred optimizer steps, the ledger's sweep.
void runOrder(zbc_rt_rank *rank, zbc_rt_step_fn step) {
  rank->lossSum = 0;
  rank->ledger.beginStep();
  if (step(rank) != ZBC_RT_OK)
    failRun(rank);
  rank->op = -1;
  double waitBegin = Profile::now();
  std::string waitError;
  {
    InsideMPI mpi(rank, "the step's last transfers");
    waitError = rank->transport->waitAll(transferDone, rank);
  }
  if (!waitError.empty()) {
    fail(rank, waitError);
    failRun(rank);
  }
  if (!rank->evaluating)
    rank->profile.commSeconds += Profile::now() - waitBegin;
  if (finishOptimizerStep(rank) != ZBC_RT_OK)
    failRun(rank);
  // A GPU ran the step's kernels behind the calls: their end, and the
  // first failure any met, are known here.
  std::string deviceError;
  {
    InsideMPI mpi(rank, "the step's kernels on the device");
    deviceError = rank->device->synchronize();
  }
  if (!deviceError.empty()) {
    fail(rank, deviceError);
    failRun(rank);
  }
  // Copies no op waited for are done now that the device is drained.
  finishCopies(rank);
  rank->lossSum = rank->device->takeStepLoss();
  rank->device->takeComputeSeconds(addComputeSeconds, rank);
  rank->ledger.endStep();
}

/// A loss summed over this replica's microbatches, as the mean over the
/// job's `microbatches` (collective among the replicas of the rank that
/// holds the loss).
double globalMean(zbc_rt_rank *rank, double sum, int64_t microbatches) {
  double total;
  {
    InsideMPI mpi(rank, "the all-reduce of the loss over the replicas");
    total = rank->transport->sumOverReplicas(sum);
  }
  return total / double(microbatches);
}

/// The mean loss over the held-out split (Note [Token data]); on ranks that
/// hold no loss, NaN.
double evaluate(zbc_rt_rank *rank, zbc_rt_step_fn step, int64_t batches) {
  const zbc_rt_program &p = *rank->program;
  rank->evaluating = true;
  rank->timeline.pause();
  double sum = 0;
  for (int64_t e = 0; e < batches; ++e) {
    rank->evalBatch = e;
    runOrder(rank, step);
    sum += rank->lossSum;
  }
  rank->evaluating = false;
  return p.loss >= 0 ? globalMean(rank, sum, rank->evalMicrobatches)
                     : std::numeric_limits<double>::quiet_NaN();
}

/// Note [Non-finite stops the run]
/// After every step each rank checks its loss (the rank that holds one) and
/// its parameters as the step's updates left them; one collective tells
/// every rank whether any found a NaN or an infinity. If one did, every
/// rank stops there, before any checkpoint, --save or report of the state:
/// a rank that found one names the step, itself and what (the loss, the
/// first non-finite parameter), the others say which rank stopped them, and
/// all exit 1. (An update that overflows, a learning rate that blows the
/// weights up, a NaN in the data the checks at start-up missed: each shows
/// here within one step.) Returns true if the run stops.
bool nonFiniteStopsRun(zbc_rt_rank *rank, int64_t stepsDone, double loss) {
  const zbc_rt_program &p = *rank->program;
  std::string parameter;
  std::string error = findNonFiniteParameter(rank, parameter);
  if (!error.empty()) {
    fail(rank, error);
    failRun(rank);
  }
  bool lossBad = p.loss >= 0 && !std::isfinite(loss);
  bool bad = lossBad || !parameter.empty();
  Transport &transport = *rank->transport;
  int64_t first;
  {
    InsideMPI mpi(rank, "the agreement that every value is finite");
    // The lowest job rank that found one: size - max(size - rank).
    first = transport.size() -
            transport.maximum(bad ? transport.size() - transport.rank() : 0);
  }
  if (first == transport.size())
    return false;
  std::string where = fmt::format("rank {}{}", p.rank,
                                  transport.replicas() > 1
                                      ? fmt::format(" of replica {}",
                                                    transport.replica())
                                      : std::string());
  std::string message;
  if (bad) {
    std::vector<std::string> what;
    if (lossBad)
      what.push_back(fmt::format("the loss is {}",
                                 std::isnan(loss) ? "NaN"
                                 : loss > 0       ? "+infinity"
                                                  : "-infinity"));
    if (!parameter.empty())
      what.push_back(fmt::format("parameter '{}' is not finite after the "
                                 "step's update (the first on this rank)",
                                 parameter));
    message = fmt::format("step {}: {}: {}; the run stops here, before any "
                          "checkpoint of this state (lower --lr, clip with "
                          "--clip-norm, or check the data)",
                          stepsDone, where, fmt::join(what, "; "));
    fmt::print(stderr, "zbc rank {}: error: {}\n", p.rank, message);
    rank->watchdog.status("failed: " + message + "\n");
  } else {
    message = fmt::format("step {}: stopping: job rank {} found a NaN or an "
                          "infinity (that rank's own message says where)",
                          stepsDone, first);
    fmt::print(stderr, "zbc rank {}: error: {}\n", p.rank, message);
    rank->watchdog.status("stopped: " + message + "\n");
  }
  std::fflush(stderr);
  return true;
}

void printProgress(const zbc_rt_rank *rank, int64_t s, double loss,
                   double stepSeconds, double elapsed, int64_t stepsRun) {
  const zbc_rt_program &p = *rank->program;
  const Options &o = rank->options;
  double eta = elapsed / double(stepsRun) * double(o.steps - s - 1);
  std::string norm =
      rank->gradNorm >= 0 ? fmt::format("  norm {:.3f}", rank->gradNorm) : "";
  std::string line = fmt::format(
      "step {:>{}}/{}  loss {:.6f}  lr {:.2e}{}  {:.0f} tokens/s  step {:.3f} s"
      "  eta {:.1f} s",
      s + 1, std::to_string(o.steps).size(), o.steps, loss, rank->learningRate,
      norm, double(p.tokens_per_microbatch * p.microbatches) / stepSeconds,
      stepSeconds, eta);
  if (o.progressBar) {
    constexpr int kWidth = 24;
    int done = static_cast<int>(kWidth * (s + 1) / o.steps);
    fmt::print("\r[{}{}] {}\x1b[K", std::string(done, '#'),
               std::string(kWidth - done, '.'), line);
  } else {
    fmt::print("{}\n", line);
  }
  std::fflush(stdout);
}

/// `value` as a JSON number, or null if it is not finite (JSON has no NaN).
std::string jsonNumber(double value) {
  return std::isfinite(value) ? fmt::format("{:.6f}", value)
                              : std::string("null");
}

std::string writeReport(zbc_rt_rank *rank, const RunLog &log) {
  const zbc_rt_program &p = *rank->program;
  if (std::string error = makeDirectories(rank->options.reportDir);
      !error.empty())
    return error;
  std::string path =
      fmt::format("{}/rank{}.json", rank->options.reportDir, p.rank);
  std::ofstream out(path);
  if (!out)
    return fmt::format("cannot write '{}'", path);
  const Profile &profile = rank->profile;
  std::string computes;
  for (size_t i = 0; i < profile.computeCount.size(); ++i)
    if (profile.computeCount[i])
      computes += fmt::format(
          "{}{{\"stage\": {}, \"kind\": \"{}\", \"count\": {}, "
          "\"seconds\": {}}}",
          computes.empty() ? "" : ", ", i / ZBC_RT_COMPUTE_KIND_COUNT,
          zbc_rt_op_spelling(static_cast<int32_t>(i % ZBC_RT_COMPUTE_KIND_COUNT)),
          profile.computeCount[i], jsonNumber(profile.computeSeconds[i]));
  std::string evals;
  for (auto [steps, loss] : log.evals)
    evals += fmt::format("{}[{}, {}]", evals.empty() ? "" : ", ", steps,
                         jsonNumber(loss));
  std::string init = "null";
  if (log.init)
    init = fmt::format("{{\"tensors\": {}, \"bytes\": {}, \"files\": {}, "
                       "\"file_pages_touched_bytes\": {}, \"seconds\": {}}}",
                       log.init->tensors, log.init->bytes, log.init->files,
                       log.init->filePagesTouched, jsonNumber(log.init->seconds));
  std::string losses;
  for (double loss : log.losses)
    losses += fmt::format("{}{}", losses.empty() ? "" : ", ",
                          jsonNumber(loss));
  out << fmt::format(
      "{{\"rank\": {}, \"steps\": {}, \"first_step\": {}, "
      "\"measured_peak_bytes\": {}, \"predicted_peak_bytes\": {}, "
      "\"arena_bytes\": {}, \"measured_host_peak_bytes\": {}, "
      "\"predicted_host_peak_bytes\": {}, \"host_arena_bytes\": {}, "
      "\"seconds\": {}, \"losses\": [{}], "
      "\"evals\": [{}], \"unigram_entropy\": {}, \"init\": {}, "
      "\"allocations_in_steps\": {}, \"device_allocations_in_steps\": {}, "
      "\"device\": \"{}\", \"profile\": {{\"step_seconds\": "
      "{}, \"kernel_seconds\": {}, \"comm_seconds\": {}, "
      "\"optimizer_seconds\": {}, \"copies\": {}, "
      "\"copy_wait_seconds\": {}, \"collective_wait_seconds\": {}, "
      "\"computes\": [{}]}}}}\n",
      p.rank, rank->options.steps, log.firstStep, rank->ledger.peak(),
      p.peak_bytes, p.arena_bytes, rank->ledger.hostPeak(), p.host_peak_bytes,
      p.host_arena_bytes, jsonNumber(log.seconds), losses, evals,
      jsonNumber(log.entropy), init,
      log.allocations, log.deviceAllocations, rank->device->name(),
      jsonNumber(profile.stepSeconds), jsonNumber(profile.kernelSeconds),
      jsonNumber(profile.commSeconds), jsonNumber(profile.optimizerSeconds),
      profile.copyCount, jsonNumber(profile.copyWaitSeconds),
      jsonNumber(profile.collectiveWaitSeconds), computes);
  return out ? "" : fmt::format("cannot write '{}'", path);
}

} // namespace
} // namespace zbc::rt

using namespace zbc::rt;

extern "C" int zbc_rt_main(int argc, char **argv,
                           const zbc_rt_program *program,
                           zbc_rt_step_fn step) {
  // A file-size limit (ulimit -f) fails the write with EFBIG, which the
  // rank reports, instead of killing it without a word (SIGXFSZ).
  std::signal(SIGXFSZ, SIG_IGN);
  auto *rank = new zbc_rt_rank();
  rank->program = program;
  std::string error = parseOptions(argc, argv, rank->options);
  if (rank->options.help) {
    fmt::print("{}", optionsHelp(argv[0]));
    return 0;
  }
  if (!error.empty()) {
    fmt::print(stderr, "zbc rank {}: error: {}\n", program->rank, error);
    writeEarlyStatus(argc, argv, program->rank, "failed: " + error + "\n");
    return 1;
  }
  if (rank->options.checkOnly)
    return 0;
  RunLog log;
  if (int code = startUp(rank, argc, argv, log))
    return code;
  const zbc_rt_program &p = *program;
  const Options &o = rank->options;
  // Like --save: the first replica writes for all (they hold the same,
  // once a sharded optimizer's shards are gathered).
  if (!o.saveInitDir.empty() && gatherParameters(rank) != ZBC_RT_OK)
    failRun(rank);
  if (!o.saveInitDir.empty() && rank->transport->replica() == 0)
    if (std::string e = saveParams(rank, o.saveInitDir, log.firstStep);
        !e.empty()) {
      rank->error = e;
      failRun(rank);
    }

  log.losses.reserve(static_cast<size_t>(std::max<int64_t>(o.steps, 0)));
  log.allocations = zbc_rt_test_allocations ? 0 : -1;
  log.deviceAllocations = zbc_rt_test_device_allocations ? 0 : -1;
  bool first = rank->transport->replica() == 0; // the replica that speaks
  bool reports = p.loss >= 0 && !o.quiet && first;
  double base = baseLearningRate(rank);
  LearningRateSchedule schedule = learningRateSchedule(rank);
  auto begin = std::chrono::steady_clock::now();
  for (int64_t s = log.firstStep; s < o.steps; ++s) {
    rank->step = s;
    rank->learningRate = learningRateAt(base, s, schedule);
    uint64_t allocationsBefore =
        zbc_rt_test_allocations ? zbc_rt_test_allocations() : 0;
    uint64_t deviceAllocationsBefore =
        zbc_rt_test_device_allocations ? zbc_rt_test_device_allocations() : 0;
    auto stepBegin = std::chrono::steady_clock::now();
    rank->timeline.beginStep(s);
    runOrder(rank, step);
    if (zbc_rt_test_allocations)
      log.allocations += zbc_rt_test_allocations() - allocationsBefore;
    if (zbc_rt_test_device_allocations)
      log.deviceAllocations +=
          zbc_rt_test_device_allocations() - deviceAllocationsBefore;
    auto now = std::chrono::steady_clock::now();
    double stepSeconds = std::chrono::duration<double>(now - stepBegin).count();
    rank->profile.stepSeconds += stepSeconds;
    double loss = std::numeric_limits<double>::quiet_NaN();
    if (p.loss >= 0) {
      loss = globalMean(rank, rank->lossSum,
                        int64_t(p.microbatches) * rank->transport->replicas());
      log.losses.push_back(loss);
      if (reports)
        printProgress(rank, s, loss, stepSeconds,
                      std::chrono::duration<double>(now - begin).count(),
                      s + 1 - log.firstStep);
    }
    if (nonFiniteStopsRun(rank, s + 1, loss)) {
      if (o.progressBar && reports)
        fmt::print("\n");
      std::fflush(stdout);
      {
        InsideMPI mpi(rank, "the end of the job (MPI_Finalize)");
        rank->transport->finish();
      }
      rank->watchdog.stop();
      return 1;
    }
    bool last = s + 1 == o.steps;
    if (o.evalEvery && ((s + 1) % o.evalEvery == 0 || last)) {
      double heldOut = evaluate(rank, step, log.evalBatches);
      if (p.loss >= 0) {
        log.evals.emplace_back(s + 1, heldOut);
        if (reports)
          fmt::print("{}eval after step {}: held-out loss {:.6f}{}\n",
                     o.progressBar ? "\n" : "", s + 1, heldOut,
                     rank->data.kind() == DataSource::Kind::Tokens
                         ? fmt::format(" (unigram entropy {:.4f})",
                                       log.entropy)
                         : " (per counted label of --eval-data)");
      }
    }
    if (o.checkpointEvery && ((s + 1) % o.checkpointEvery == 0 || last)) {
      if (std::string e = writeCheckpoint(rank, s + 1); !e.empty()) {
        rank->op = -1;
        fail(rank, "cannot checkpoint: " + e);
        failRun(rank);
      }
      if (p.rank == 0 && first && !o.quiet)
        fmt::print("{}checkpoint after step {}: {}/step-{}\n",
                   o.progressBar ? "\n" : "", s + 1, o.checkpointDir, s + 1);
    }
  }
  if (o.progressBar && reports)
    fmt::print("\n");
  log.seconds = std::chrono::duration<double>(
                    std::chrono::steady_clock::now() - begin)
                    .count();
  if (!o.quiet && first)
    fmt::print("rank {}: peak live bytes {} measured, {} predicted; arena "
               "{}{}\n",
               p.rank, rank->ledger.peak(), p.peak_bytes, p.arena_bytes,
               p.host_arena_bytes
                   ? fmt::format("; on the host {} measured, {} predicted, "
                                 "arena {}",
                                 rank->ledger.hostPeak(), p.host_peak_bytes,
                                 p.host_arena_bytes)
                   : "");
  // The replicas hold the same parameters (a sharded optimizer's once its
  // shards are gathered): the first writes for them all.
  if (!o.saveDir.empty() && gatherParameters(rank) != ZBC_RT_OK)
    failRun(rank);
  std::string e;
  if (first && !o.saveDir.empty())
    e = saveParams(rank, o.saveDir, std::max(log.firstStep, o.steps));
  if (first && e.empty() && !o.reportDir.empty())
    e = writeReport(rank, log);
  if (first && e.empty() && !o.traceDir.empty())
    e = rank->timeline.write(o.traceDir);
  if (!e.empty()) {
    fmt::print(stderr, "zbc rank {}: error: {}\n", p.rank, e);
    rank->watchdog.status("failed: " + e + "\n");
    rank->transport->abort(1);
  }
  std::fflush(stdout);
  {
    InsideMPI mpi(rank, "the end of the job (MPI_Finalize)");
    rank->transport->finish();
  }
  rank->watchdog.status("done\n");
  rank->watchdog.stop();
  delete rank;
  return 0;
}
