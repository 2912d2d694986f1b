//===- RunCommand.cpp - `zbc run`: compile, check, train, summarise -------===//
//
//   zbc run MODEL.mlir [zbc compile's options] --steps N [--data FILE]
//       [--eval-every K [--eval-data FILE]] [--lr X --clip-norm X --warmup N --decay-steps N]
//       [--checkpoint-every N] [--resume DIR] [...]   (zbc run --help)
//
// Claims DIR (-o, or a fresh temporary one: locked while zbc runs), checks
// what the ranks would only find out later (numbers, where results go and
// that it can be written, the checkpoint directory's history, a data file
// that is not a regular file, empty, too short for the model's sequence,
// with keys it cannot fill or samples that disagree or are not finite, an
// evaluation without a held-out split, options the ranks would refuse),
// compiles, then starts DIR/launch.sh with the training options, passing
// its output through and a SIGTERM or SIGINT on (Launch.h). Afterwards it
// summarises the ranks' reports (final and best held-out loss, measured
// against predicted peak bytes per rank); after a failure it gives the
// ranks' verdict (explainJobFailure) and the checkpoint to resume from.
//
//===----------------------------------------------------------------------===//

#include "Compile.h"
#include "Launch.h"
#include "MeasuredTimeline.h"
#include "ModelInputs.h"
#include "zbc/Options/OptionValues.h"
#include "Options.h"

#include "zbc/Schedule/Export.h"
#include "zbc/contracts/CheckpointLayout.h"
#include "zbc/contracts/CheckpointManifest.h"
#include "zbc/contracts/DataFile.h"
#include "zbc/contracts/Files.h"
#include "zbc/contracts/HuggingFaceCheckpoint.h"
#include "zbc/contracts/OptimizerConfig.h"
#include "zbc/contracts/TokenData.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <limits>
#include <thread>

using namespace llvm;
using namespace zbc;

namespace {

/// An option every rank receives as given (the rank executables parse it;
/// see DIR/rank0 --help).
struct RankOption {
  enum Kind { Count, Real, Path, Seed, BinTokens } kind;
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
                   "Train on FILE: a .safetensors file of samples, a token "
                   "stream (.npy; .bin of uint16), or any other file as text "
                   "(bytes are tokens)",
                   "FILE");
RankOption dataDtypeOpt("data-dtype", RankOption::BinTokens,
                        "The ids of a .bin --data file: uint16 (default) or "
                        "uint32",
                        "T");
RankOption evalEveryOpt("eval-every", RankOption::Count,
                        "Print the held-out loss every K steps and at the "
                        "end (a token stream's last tenth, or --eval-data)",
                        "K");
RankOption evalDataOpt("eval-data", RankOption::Path,
                       "The held-out samples of a .safetensors --data (zbc "
                       "pack --held-out writes them), evaluated every "
                       "--eval-every K steps",
                       "FILE");
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
RankOption initOpt("init", RankOption::Path,
                   "Parameters from a Hugging Face checkpoint instead of the "
                   "seed: a directory (model.safetensors, or "
                   "model.safetensors.index.json and its shards) or one "
                   ".safetensors file",
                   "PATH");
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

RankOption reportOpt("report", RankOption::Path,
                     "Where the ranks' reports go (DIR/rankN.json: losses, "
                     "peaks, where the step time went; default "
                     "OUT/run)",
                     "DIR");
cl::opt<bool> quietOpt("quiet",
                       cl::desc("Print only errors: no banner, progress "
                                "lines or summary"),
                       cl::sub(zbc::runCommand()), cl::cat(zbcCategory));

RankOption *const kRankOptions[] = {
    &stepsOpt,        &seedOpt,         &dataOpt,       &dataDtypeOpt,
    &evalEveryOpt,    &evalDataOpt,    &lrOpt,           &weightDecayOpt, &momentumOpt,
    &beta1Opt,        &beta2Opt,        &epsOpt,        &clipNormOpt,
    &warmupOpt,       &decayStepsOpt,   &minLrOpt,      &checkpointEveryOpt,
    &checkpointDirOpt, &resumeOpt,      &initOpt,       &timeoutOpt,
    &saveOpt,         &saveInitOpt,     &reportOpt};


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
    case RankOption::BinTokens:
      if (rt::TokenType type; !rt::parseBinTokenType(value, type))
        return fail(flag + " needs uint16 or uint32 (the ids of a .bin "
                    "file), got '" + value + "'");
      break;
    }
    args.push_back(flag);
    args.push_back(value.str());
  }
  if (quietOpt)
    args.push_back("--quiet");
  if (!checkpointDirOpt.opt.getNumOccurrences() &&
      !checkpointDirOf(request).empty()) {
    args.push_back("--checkpoint-dir");
    args.push_back(checkpointDirOf(request));
  }
  return args;
}

/// Where the results go, checked before anything is compiled or trained
/// (Note [Files checked first]), and the checkpoint directory's history
/// (Note [One history per checkpoint directory]).
Error checkOutputs(const Request &request) {
  for (RankOption *o : {&saveOpt, &saveInitOpt, &reportOpt})
    if (o->opt.getNumOccurrences())
      if (std::string e =
              rt::checkWritableDirectory(o->opt, ("--" + o->opt.ArgStr).str());
          !e.empty())
        return fail(e);
  std::string root = checkpointDirOf(request);
  std::string from;
  int64_t start = 0;
  if (resumeOpt.opt.getNumOccurrences()) {
    from = rt::latestCheckpoint(resumeOpt.opt);
    if (from.empty())
      return fail("'" + resumeOpt.opt + "' holds no checkpoint (no "
                  "manifest.json in it or in a step-N under it)");
    rt::CheckpointManifest manifest;
    // A damaged latest one: the ranks fall back to an earlier one (and
    // check the history again then).
    if (!rt::readCheckpointManifest(from, manifest).empty())
      return Error::success();
    start = manifest.step;
  }
  if (root.empty())
    return Error::success();
  if (std::string e =
          rt::checkWritableDirectory(root, "--checkpoint-dir");
      !e.empty())
    return fail(e);
  if (std::string e = rt::checkpointRootConflict(root, from, start); !e.empty())
    return fail(e);
  return Error::success();
}

/// The ranks' own verdict on the options (DIR/rank0 --check-options), so
/// that an option they would refuse stops zbc run before the launch and the
/// rule has one home (runtime/src/Options.cpp).
Error checkRankOptions(const std::string &dir,
                       const std::vector<std::string> &rankArgs) {
  std::string rank0 = dir + "/rank0";
  std::vector<StringRef> argv = {rank0, "--check-options"};
  for (const std::string &a : rankArgs)
    argv.push_back(a);
  SmallString<128> errors;
  if (std::error_code ec =
          sys::fs::createTemporaryFile("zbc-options", "txt", errors))
    return fail("cannot make a temporary file: " + ec.message());
  std::optional<StringRef> redirects[] = {std::nullopt, std::nullopt,
                                          StringRef(errors)};
  std::string message;
  int code = sys::ExecuteAndWait(rank0, argv, std::nullopt, redirects, 0, 0,
                                 &message);
  ErrorOr<std::unique_ptr<MemoryBuffer>> said = MemoryBuffer::getFile(errors);
  sys::fs::remove(errors);
  if (code == 0)
    return Error::success();
  StringRef text = said ? (*said)->getBuffer().trim() : StringRef();
  // "zbc rank 0: error: MESSAGE": the message is the ranks' own.
  size_t at = text.find("error: ");
  return fail(at == StringRef::npos
                  ? "the ranks refuse these options (" + rank0 + " exit " +
                        std::to_string(code) +
                        (message.empty() ? "" : ": " + message) + ")"
                  : text.drop_front(at + 7).str());
}

/// --data and --init against the model (ModelInputs.h), before anything
/// is compiled: what the ranks would refuse only after start-up, under
/// mpirun, zbc refuses here, naming the file and the tensor or key.
Error checkInputFiles(const Request &request) {
  bool evaluates = evalEveryOpt.opt.getNumOccurrences() > 0;
  std::string data = dataOpt.opt, heldOut = evalDataOpt.opt;
  bool samples = data.empty() || rt::isSafeTensorsPath(data);
  if (!heldOut.empty() && !evaluates)
    return fail("--eval-data needs --eval-every K: when to evaluate on it");
  if (!heldOut.empty() && (data.empty() || !samples))
    return fail("--eval-data holds the held-out samples of a .safetensors "
                "--data; a token stream holds out its own last tenth");
  if (evaluates && samples && heldOut.empty())
    return fail("--eval-every needs held-out data: a token stream (--data "
                "FILE: text, .npy or .bin, whose last tenth is held out) or "
                "--eval-data FILE.safetensors beside a .safetensors --data");
  if (data.empty() && !initOpt.opt.getNumOccurrences())
    return Error::success();
  Expected<ModelInputs> inputs = readModelInputs(request.input);
  if (!inputs)
    return inputs.takeError();
  if (!data.empty()) {
    rt::TokenType binTokens = rt::TokenType::U16;
    if (dataDtypeOpt.opt.getNumOccurrences())
      rt::parseBinTokenType(dataDtypeOpt.opt, binTokens); // checked before
    // A .safetensors --data evaluates on --eval-data, checked alike.
    bool ownHeldOut = evaluates && heldOut.empty();
    if (Error e = checkDataFile(data, inputs->dataKeys, binTokens, ownHeldOut))
      return e;
    if (!heldOut.empty())
      if (Error e = checkDataFile(heldOut, inputs->dataKeys, binTokens, false))
        return e;
  }
  if (initOpt.opt.getNumOccurrences())
    if (Error e = checkInitCheckpoint(initOpt.opt, *inputs, quietOpt))
      return e;
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

/// The update the ranks train with, as the banner says it: the optimizer
/// compiled in and each hyperparameter as given, else its default
/// (OptimizerConfig.h), so that a run with neither --optimizer nor
/// --momentum says what it trains with.
std::string optimizerLine(Optimizer optimizer) {
  auto value = [](const RankOption &option, double fallback) {
    if (option.opt.getNumOccurrences())
      return std::string(option.opt);
    char text[32];
    std::snprintf(text, sizeof text, "%g", fallback);
    return std::string(text);
  };
  if (optimizer == Optimizer::AdamW) {
    rt::AdamWConfig d;
    return formatv("adamw: lr {0}, betas {1} {2}, eps {3}, weight decay {4}",
                   value(lrOpt, d.lr), value(beta1Opt, d.beta1),
                   value(beta2Opt, d.beta2), value(epsOpt, d.epsilon),
                   value(weightDecayOpt, d.weightDecay));
  }
  rt::SgdConfig d;
  return formatv("sgd: lr {0}, momentum {1}, weight decay {2}",
                 value(lrOpt, d.lr), value(momentumOpt, d.momentum),
                 value(weightDecayOpt, d.weightDecay));
}

/// The end of a run that worked: losses, bubble and memory, from the
/// ranks' reports and traces, to `os`; writes DIR/trace.json and
/// DIR/timeline.svg.
void printSummary(const std::string &dir, const std::string &reportDir,
                  const Compiled &compiled, int processes, raw_ostream &os) {
  std::vector<std::optional<json::Value>> reports;
  for (int r = 0; r < compiled.ranks; ++r)
    reports.push_back(
        readJson(formatv("{0}/rank{1}.json", reportDir, r).str()));
  os << "summary:\n";
  for (const std::optional<json::Value> &report : reports) {
    const json::Object *o = report ? report->getAsObject() : nullptr;
    const json::Array *losses = o ? o->getArray("losses") : nullptr;
    if (!losses || losses->empty())
      continue; // not the rank that holds the loss
    os << formatv("  final training loss {0:F4}",
                      losses->back().getAsNumber().value_or(NAN));
    if (std::optional<double> h = o->getNumber("unigram_entropy"))
      os << formatv(" (unigram entropy of the text {0:F4})", *h);
    os << "\n";
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
    os << formatv("  held-out loss {0:F4} at the end, best {1:F4} after "
                      "step {2}\n",
                      last, best, bestStep);
  }
  Expected<MeasuredRun> run = readMeasuredRun(dir + "/trace", compiled.ranks);
  if (!run) {
    errs() << "zbc: warning: no measured timeline: "
           << toString(run.takeError()) << "\n";
  } else if (run->stepsUsed > 0) {
    // The run itself worked: a timeline that cannot be written is a
    // warning (naming the file), not a failed run.
    if (Error e = writeFile(dir + "/trace.json", [&](raw_ostream &trace) {
          writeMeasuredTrace(*run, trace);
        }))
      errs() << "zbc: warning: " << toString(std::move(e)) << "\n";
    if (Error e = writeFile(dir + "/timeline.svg", [&](raw_ostream &svg) {
          sched::writeSVG(compiled.problem, compiled.table, run->lastStep, svg,
                          compiled.scheduleSource.empty()
                              ? "measured"
                              : "measured, " + compiled.scheduleSource,
                          "ms");
        }))
      errs() << "zbc: warning: " << toString(std::move(e)) << "\n";
    os << formatv("  bubble rate {0:F4} measured (mean of {1} steps), "
                      "{2:F4} predicted\n",
                      run->bubbleRate, run->stepsUsed, compiled.bubbleRate);
    unsigned cores = std::thread::hardware_concurrency();
    if (cores && processes > static_cast<int>(cores))
      os << formatv("    ({0} processes on {1} cores share them: the "
                        "measured rate is not the schedule's)\n",
                        processes, cores);
    os << formatv("  timelines: {0}/trace.json (Perfetto), "
                      "{0}/timeline.svg beside {0}/schedule.svg\n",
                      dir);
  }
  for (auto [r, report] : llvm::enumerate(reports)) {
    const json::Object *o = report ? report->getAsObject() : nullptr;
    if (o)
      os << formatv("  rank {0}: peak {1} bytes measured, {2} predicted\n",
                        r, o->getInteger("measured_peak_bytes").value_or(-1),
                        o->getInteger("predicted_peak_bytes").value_or(-1));
  }
}

} // namespace

int zbc::runRunCommand() {
  auto error = [](Error e) {
    errs() << "zbc: error: " << toString(std::move(e)) << "\n";
    return 1;
  };
  Expected<Request> request = readRequest(/*outputRequired=*/false);
  if (!request)
    return error(request.takeError());
  request->quiet = quietOpt;
  request->launches = true;
  Expected<std::vector<std::string>> rankArgs = rankArguments(*request);
  if (!rankArgs)
    return error(rankArgs.takeError());
  if (Error e = claimOutputDirectory(request->dir))
    return error(std::move(e));
  if (Error e = checkOutputs(*request))
    return error(std::move(e));
  if (Error e = checkInputFiles(*request))
    return error(std::move(e));
  Expected<Compiled> compiled = compile(*request);
  if (!compiled)
    return error(compiled.takeError());
  if (Error e = checkRankOptions(request->dir, *rankArgs))
    return error(std::move(e));
  if (!quietOpt)
    outs() << "  trains with " << optimizerLine(request->options.optimizer)
           << "\n";
  std::string statusDir = request->dir + "/status";
  // The ranks' reports feed the summary: to --report DIR where given
  // (rankArguments passed it on), else OUT/run.
  std::string reportDir = reportOpt.opt.getNumOccurrences()
                              ? std::string(reportOpt.opt)
                              : request->dir + "/run";
  sys::fs::create_directories(statusDir);
  int processes = compiled->ranks * static_cast<int>(request->options.replicas);
  for (int r = 0; r < processes; ++r)
    sys::fs::remove(formatv("{0}/rank{1}.status", statusDir, r).str());
  std::vector<std::string> argv = {request->dir + "/launch.sh"};
  argv.insert(argv.end(), rankArgs->begin(), rankArgs->end());
  std::string traceDir = request->dir + "/trace";
  argv.insert(argv.end(), {"--status-dir", statusDir, "--trace", traceDir});
  if (!reportOpt.opt.getNumOccurrences())
    argv.insert(argv.end(), {"--report", reportDir});
  if (!quietOpt && sys::Process::StandardOutIsDisplayed())
    argv.push_back("--progress-bar");
  JobEnd end = runLauncher(argv);
  if (!end.succeeded()) {
    if (!end.forwardedSignal)
      errs() << "zbc: error: the training run failed"
             << (end.exitCode ? " (exit " + std::to_string(end.exitCode) +
                                    "; the ranks' messages are above)"
                              : std::string())
             << "\n";
    explainJobFailure(end, statusDir, processes, compiled->ranks,
                      ResumeHint{checkpointDirOf(*request), resumeOpt.opt});
    return end.forwardedSignal ? 128 + end.forwardedSignal : 1;
  }
  printSummary(request->dir, reportDir, *compiled, processes,
               quietOpt ? nulls() : outs());
  return 0;
}
