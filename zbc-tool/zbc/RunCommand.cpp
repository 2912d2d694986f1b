//===- RunCommand.cpp - `zbc run`: compile, check, train, summarise -------===//
//
//   zbc run MODEL.mlir [zbc compile's options] --steps N [--data FILE]
//       [--eval-every K] [--lr X --clip-norm X --warmup N --decay-steps N]
//       [--checkpoint-every N] [--resume DIR] [...]   (zbc run --help)
//
// Compiles into DIR (-o, or a fresh temporary one), checks what the ranks
// would only find out later (numbers, a text data file that is missing,
// empty or too short for the model's sequence, keys text cannot fill, an
// evaluation without a held-out split), then starts DIR/launch.sh with the
// training options, passing its output through. Afterwards it summarises
// the ranks' reports (final and best held-out loss, measured against
// predicted peak bytes per rank); after a failure it reads the ranks'
// status files (Note [Lost ranks] in runtime/src/Watchdog.h), names the
// rank that failed or was lost, and the checkpoint to resume from.
//
//===----------------------------------------------------------------------===//

#include "Compile.h"
#include "MeasuredTimeline.h"
#include "Numbers.h"
#include "Options.h"

#include "zbc/Schedule/Export.h"
#include "zbc/runtime/CheckpointLayout.h"
#include "zbc/runtime/TextData.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <limits>
#include <thread>

using namespace llvm;
using namespace zbc;

namespace {

/// An option every rank receives as given (the rank executables parse it;
/// see DIR/rank0 --help).
struct RankOption {
  enum Kind { Count, Real, Path, Seed } kind;
  cl::opt<std::string> opt;
  RankOption(const char *flag, Kind kind, const char *desc, const char *value)
      : kind(kind), opt(StringRef(flag), cl::desc(desc), cl::value_desc(value),
                        cl::sub(zbc::runCommand()), cl::cat(zbcCategory)) {}
};

RankOption stepsOpt("steps", RankOption::Count, "Training steps (default 1)",
                    "N");
RankOption seedOpt("seed", RankOption::Seed,
                   "Seed of the parameters and the data order", "S");
RankOption dataOpt("data", RankOption::Path,
                   "Train on FILE: a .safetensors file of samples, or any "
                   "other file as text (bytes are tokens)",
                   "FILE");
RankOption evalEveryOpt("eval-every", RankOption::Count,
                        "Print the held-out loss every K steps and at the "
                        "end (text data)",
                        "K");
RankOption lrOpt("lr", RankOption::Real, "Learning rate", "X");
RankOption weightDecayOpt("weight-decay", RankOption::Real, "Weight decay",
                          "X");
RankOption momentumOpt("momentum", RankOption::Real, "SGD's momentum", "X");
RankOption beta1Opt("beta1", RankOption::Real, "AdamW's beta1", "X");
RankOption beta2Opt("beta2", RankOption::Real, "AdamW's beta2", "X");
RankOption epsOpt("eps", RankOption::Real, "AdamW's epsilon", "X");
RankOption clipNormOpt("clip-norm", RankOption::Real,
                       "Clip the global gradient norm to X", "X");
RankOption warmupOpt("warmup", RankOption::Count,
                     "Linear learning-rate warm-up steps", "N");
RankOption decayStepsOpt("decay-steps", RankOption::Count,
                         "Cosine decay of the learning rate until step N",
                         "N");
RankOption minLrOpt("min-lr", RankOption::Real,
                    "Learning rate at the end of the decay (default lr/10)",
                    "X");
RankOption checkpointEveryOpt("checkpoint-every", RankOption::Count,
                              "Write a checkpoint every N steps and at the "
                              "end",
                              "N");
RankOption checkpointDirOpt("checkpoint-dir", RankOption::Path,
                            "Where checkpoints go (default DIR/checkpoints)",
                            "DIR");
RankOption resumeOpt("resume", RankOption::Path,
                     "Continue from a checkpoint (DIR/step-N, or the latest "
                     "under DIR)",
                     "DIR");
RankOption timeoutOpt("timeout", RankOption::Real,
                      "Seconds a rank waits for a peer before it gives up "
                      "(default 30)",
                      "S");
RankOption saveOpt("save", RankOption::Path,
                   "Write the parameters after the run "
                   "(DIR/rankN.safetensors)",
                   "DIR");
RankOption saveInitOpt("save-init", RankOption::Path,
                       "Write the parameters before the first step", "DIR");

RankOption *const kRankOptions[] = {
    &stepsOpt,     &seedOpt,       &dataOpt,           &evalEveryOpt,
    &lrOpt,        &weightDecayOpt, &momentumOpt,      &beta1Opt,
    &beta2Opt,     &epsOpt,        &clipNormOpt,       &warmupOpt,
    &decayStepsOpt, &minLrOpt,     &checkpointEveryOpt, &checkpointDirOpt,
    &resumeOpt,    &timeoutOpt,    &saveOpt,           &saveInitOpt};

Error fail(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

/// Where this run writes checkpoints: --checkpoint-dir, else DIR/checkpoints
/// when it writes any; "" when it writes none.
std::string checkpointDirOf(const Request &request) {
  if (checkpointDirOpt.opt.getNumOccurrences())
    return checkpointDirOpt.opt;
  if (checkpointEveryOpt.opt.getNumOccurrences())
    return request.dir + "/checkpoints";
  return {};
}

/// The rank arguments, each value checked here first.
Expected<std::vector<std::string>> rankArguments(const Request &request) {
  std::vector<std::string> args;
  for (RankOption *o : kRankOptions) {
    if (!o->opt.getNumOccurrences())
      continue;
    std::string flag = ("--" + o->opt.ArgStr).str();
    StringRef value = o->opt;
    switch (o->kind) {
    case RankOption::Count:
      if (Expected<int64_t> n = parseInteger(flag, value,
                                             o == &stepsOpt ? 1 : 0,
                                             int64_t(1) << 40);
          !n)
        return n.takeError();
      break;
    case RankOption::Seed:
      if (Expected<int64_t> n = parseInteger(
              flag, value, 0, std::numeric_limits<int64_t>::max());
          !n)
        return n.takeError();
      break;
    case RankOption::Real:
      if (Expected<double> x = parseNumber(flag, value, o == &timeoutOpt ? 1e-3 : 0,
                                           1e300);
          !x)
        return x.takeError();
      break;
    case RankOption::Path:
      if (value.empty())
        return fail(flag + " needs a path");
      break;
    }
    args.push_back(flag);
    args.push_back(value.str());
  }
  if (!checkpointDirOpt.opt.getNumOccurrences() &&
      !checkpointDirOf(request).empty()) {
    args.push_back("--checkpoint-dir");
    args.push_back(checkpointDirOf(request));
  }
  if (resumeOpt.opt.getNumOccurrences() &&
      rt::latestCheckpoint(resumeOpt.opt).empty())
    return fail("'" + resumeOpt.opt + "' holds no checkpoint (no "
                "manifest.json in it or in a step-N under it)");
  return args;
}

/// What the ranks would find wrong with --data only after start-up.
Error checkData(const Compiled &compiled) {
  std::string path = dataOpt.opt;
  bool evaluates = evalEveryOpt.opt.getNumOccurrences() > 0;
  if (path.empty() || rt::isSafeTensorsPath(path)) {
    if (evaluates)
      return fail("--eval-every needs text data: --data FILE, whose last "
                  "tenth is held out");
    if (!path.empty() && !sys::fs::exists(path))
      return fail("cannot read the data file '" + path + "'");
    return Error::success();
  }
  int64_t sequence = 0;
  for (const rt::TextDataKey &key : compiled.dataKeys)
    if (std::string e = rt::checkTextKey(key, sequence); !e.empty())
      return fail("'" + path + "' as text: " + e);
  rt::TextCorpus corpus;
  if (std::string e = rt::loadTextCorpus(path, sequence, corpus); !e.empty())
    return fail(e);
  return Error::success();
}

std::optional<json::Value> readJson(const std::string &path) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer = MemoryBuffer::getFile(path);
  if (!buffer)
    return std::nullopt;
  Expected<json::Value> value = json::parse((*buffer)->getBuffer());
  if (!value) {
    consumeError(value.takeError());
    return std::nullopt;
  }
  return std::move(*value);
}

/// The end of a run that worked: losses, bubble and memory, from the
/// ranks' reports and traces; writes DIR/trace.json and DIR/timeline.svg.
void printSummary(const std::string &dir, const Compiled &compiled,
                  int processes) {
  std::vector<std::optional<json::Value>> reports;
  for (int r = 0; r < compiled.ranks; ++r)
    reports.push_back(readJson(formatv("{0}/run/rank{1}.json", dir, r).str()));
  outs() << "summary:\n";
  for (const std::optional<json::Value> &report : reports) {
    const json::Object *o = report ? report->getAsObject() : nullptr;
    const json::Array *losses = o ? o->getArray("losses") : nullptr;
    if (!losses || losses->empty())
      continue; // not the rank that holds the loss
    outs() << formatv("  final training loss {0:F4}",
                      losses->back().getAsNumber().value_or(NAN));
    if (std::optional<double> h = o->getNumber("unigram_entropy"))
      outs() << formatv(" (unigram entropy of the text {0:F4})", *h);
    outs() << "\n";
    const json::Array *evals = o->getArray("evals");
    if (!evals || evals->empty())
      continue;
    double best = INFINITY, last = NAN;
    int64_t bestStep = 0;
    for (const json::Value &e : *evals) {
      const json::Array *pair = e.getAsArray();
      if (!pair || pair->size() != 2)
        continue;
      last = (*pair)[1].getAsNumber().value_or(NAN);
      if (last < best) {
        best = last;
        bestStep = (*pair)[0].getAsInteger().value_or(0);
      }
    }
    outs() << formatv("  held-out loss {0:F4} at the end, best {1:F4} after "
                      "step {2}\n",
                      last, best, bestStep);
  }
  Expected<MeasuredRun> run = readMeasuredRun(dir + "/trace", compiled.ranks);
  if (!run) {
    errs() << "zbc: warning: no measured timeline: "
           << toString(run.takeError()) << "\n";
  } else if (run->stepsUsed > 0) {
    std::error_code ec;
    raw_fd_ostream trace(dir + "/trace.json", ec);
    if (!ec)
      writeMeasuredTrace(*run, trace);
    raw_fd_ostream svg(dir + "/timeline.svg", ec);
    if (!ec && compiled.problem)
      sched::writeSVG(*compiled.problem, compiled.table, run->lastStep, svg);
    outs() << formatv("  bubble rate {0:F4} measured (mean of {1} steps), "
                      "{2:F4} predicted\n",
                      run->bubbleRate, run->stepsUsed, compiled.bubbleRate);
    unsigned cores = std::thread::hardware_concurrency();
    if (cores && processes > static_cast<int>(cores))
      outs() << formatv("    ({0} processes on {1} cores share them: the "
                        "measured rate is not the schedule's)\n",
                        processes, cores);
    outs() << formatv("  timelines: {0}/trace.json (Perfetto), "
                      "{0}/timeline.svg beside {0}/schedule.svg\n",
                      dir);
  }
  for (auto [r, report] : llvm::enumerate(reports)) {
    const json::Object *o = report ? report->getAsObject() : nullptr;
    if (o)
      outs() << formatv("  rank {0}: peak {1} bytes measured, {2} predicted\n",
                        r, o->getInteger("measured_peak_bytes").value_or(-1),
                        o->getInteger("predicted_peak_bytes").value_or(-1));
  }
}

/// After a failed run: who failed or was lost, and where to resume.
void explainFailure(const std::string &statusDir, int processes, int ranks,
                    const std::string &checkpointRoot) {
  std::vector<int> lost;
  std::string firstFailure;
  for (int r = 0; r < processes; ++r) {
    ErrorOr<std::unique_ptr<MemoryBuffer>> status =
        MemoryBuffer::getFile(formatv("{0}/rank{1}.status", statusDir, r).str());
    StringRef text = status ? (*status)->getBuffer().trim() : StringRef();
    if (text.empty() || text == "running")
      lost.push_back(r);
    else if (text.starts_with("failed: ") && firstFailure.empty())
      firstFailure = text.drop_front(8).str();
  }
  if (!firstFailure.empty())
    errs() << "zbc: error: " << firstFailure << "\n";
  for (int w : lost)
    errs() << formatv("zbc: error: rank {0}{1} was lost: it ended without a "
                      "word (killed, or it crashed)\n",
                      w % ranks,
                      processes > ranks
                          ? formatv(" of replica {0}", w / ranks).str()
                          : std::string());
  if (std::string latest = checkpointRoot.empty()
                               ? std::string()
                               : rt::latestCheckpoint(checkpointRoot);
      !latest.empty())
    errs() << "zbc: the last checkpoint is '" << latest
           << "': add --resume " << latest << " to continue from it\n";
  else
    errs() << "zbc: no checkpoint to resume from (--checkpoint-every N "
              "writes them)\n";
}

} // namespace

int zbc::runRunCommand() {
  Expected<Request> request = readRequest(/*outputRequired=*/false);
  if (!request) {
    errs() << "zbc: error: " << toString(request.takeError()) << "\n";
    return 1;
  }
  Expected<std::vector<std::string>> rankArgs = rankArguments(*request);
  if (!rankArgs) {
    errs() << "zbc: error: " << toString(rankArgs.takeError()) << "\n";
    return 1;
  }
  Expected<Compiled> compiled = compile(*request);
  if (!compiled) {
    errs() << "zbc: error: " << toString(compiled.takeError()) << "\n";
    return 1;
  }
  if (Error e = checkData(*compiled)) {
    errs() << "zbc: error: " << toString(std::move(e)) << "\n";
    return 1;
  }
  // Where a failed run's last checkpoint would be: this run's, or the one
  // it resumed from.
  std::string checkpointRoot = checkpointDirOf(*request);
  if (checkpointRoot.empty())
    checkpointRoot = resumeOpt.opt;
  std::string statusDir = request->dir + "/status";
  std::string reportDir = request->dir + "/run";
  sys::fs::create_directories(statusDir);
  int processes = compiled->ranks * static_cast<int>(request->replicas);
  for (int r = 0; r < processes; ++r)
    sys::fs::remove(formatv("{0}/rank{1}.status", statusDir, r).str());
  std::string launch = request->dir + "/launch.sh";
  std::vector<StringRef> argv = {launch};
  for (const std::string &arg : *rankArgs)
    argv.push_back(arg);
  std::string traceDir = request->dir + "/trace";
  argv.insert(argv.end(), {"--status-dir", statusDir, "--report", reportDir,
                           "--trace", traceDir});
  if (sys::Process::StandardOutIsDisplayed())
    argv.push_back("--progress-bar");
  std::string message;
  int code = sys::ExecuteAndWait(launch, argv, std::nullopt, {}, 0, 0, &message);
  if (code != 0) {
    errs() << "zbc: error: the training run failed"
           << (message.empty() ? "" : ": " + message) << " (exit " << code
           << "; the ranks' messages are above)\n";
    explainFailure(statusDir, processes, compiled->ranks, checkpointRoot);
    return 1;
  }
  printSummary(request->dir, *compiled, processes);
  return 0;
}
