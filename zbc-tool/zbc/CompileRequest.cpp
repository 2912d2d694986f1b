//===- CompileRequest.cpp - `zbc compile` and `zbc run`'s request ---------===//
//
//   zbc compile MODEL.mlir --ranks P --microbatches M --schedule NAME
//       [--virtual V] [--mem-limit BYTES | --activation-budget BYTES]
//       [--recompute MODE] [--offload MODE --copy-bandwidth X]
//       [--cost-file F] [--optimizer sgd|adamw] [--data-parallel D]
//       [--backend cpu|cuda] [--hosts H,...] -o DIR
//   zbc compile MODEL.mlir --schedule-file FILE [the same but --schedule]
//       (a PyTorch schedule CSV or a zb.program: ScheduleFile.h)
//
// The compile options are CompileOptions' flags (CompileFlags.h: declared
// once, for the passes too); the rest is the tool's: the model, the ranks,
// the replicas, the schedule file, the backend, the hosts and -o. Every
// check of what was asked happens here, before any pass runs.
//
//===----------------------------------------------------------------------===//

#include "Compile.h"
#include "CompileFlags.h"
#include "HostCompiler.h"
#include "Options.h"

#include "zbc/Options/OptionValues.h"
#include "zbc/Schedule/CostFile.h"
#include "zbc/Schedule/Registry.h"
#include "zbc/Support/Limits.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace llvm;
using namespace zbc;

namespace {
using zbc::zbcCategory;

cl::SubCommandGroup compileAndRun({&compileCommand(), &runCommand()});
#define BOTH cl::sub(compileAndRun)

/// The compile options, as flags of both subcommands: every group but the
/// cut (the tool cuts a model into as many stages as its ranks hold).
CompileFlags &compileFlags() {
  static CompileFlags flags = [] {
    CompileOptions defaults;
    defaults.schedule = "zb-h1";
    return CompileFlags(compileAndRun, OrderGroup | ScheduleGroup | CostsGroup,
                        defaults);
  }();
  return flags;
}
// The flags register at start-up, as every other option does.
[[maybe_unused]] CompileFlags &registered = compileFlags();

cl::opt<std::string> inputFile(cl::Positional, cl::Required,
                               cl::desc("<model.mlir>"), BOTH,
                               cl::cat(zbcCategory));
cl::opt<std::string> ranksOpt("ranks", cl::desc("Pipeline ranks p (1 to 4096)"),
                              cl::value_desc("P"), BOTH, cl::cat(zbcCategory));
cl::opt<std::string> scheduleFileOpt(
    "schedule-file",
    cl::desc("The schedule in FILE instead of a registered one: a PyTorch "
             "schedule CSV (compute only: the transfers are inserted; "
             "compute+comms: its transfer order is kept and proven) or a "
             ".mlir holding a zb.program. The file gives the ranks and "
             "microbatches"),
    cl::value_desc("FILE"), BOTH, cl::cat(zbcCategory));
cl::opt<std::string> backendOpt(
    "backend",
    cl::desc("The runtime the rank programs link: cpu (OpenBLAS, MPI; "
             "default) or cuda (one GPU per rank, NCCL)"),
    cl::value_desc("cpu|cuda"), cl::init("cpu"), BOTH, cl::cat(zbcCategory));
cl::opt<std::string> hostsOpt(
    "hosts",
    cl::desc("Run on these hosts: consecutive blocks of the processes on "
             "each, written to DIR/hostfile for launch.sh (the executables "
             "at the same path on every host)"),
    cl::value_desc("H1,H2,..."), BOTH, cl::cat(zbcCategory));
cl::opt<std::string> outputDir("o", cl::desc("Output directory"),
                               cl::value_desc("DIR"), BOTH,
                               cl::cat(zbcCategory));
#undef BOTH


/// The schedule file the run takes its order from: --schedule-file, or the
/// model file itself when it holds a zb.program; none otherwise.
Expected<std::optional<ScheduleFile>> scheduleFileOfRequest() {
  const CompileFlags &flags = compileFlags();
  std::string path = scheduleFileOpt;
  if (!path.empty()) {
    if (flags.given("schedule"))
      return fail("--schedule and --schedule-file both name the schedule: "
                  "give one");
    if (flags.given("virtual"))
      return fail("--virtual: the schedule file '" + path + "' places the "
                  "stages itself");
  } else {
    // A model file with its program (an earlier compile's program.mlir, a
    // hand-written one): the order is the file's, not --schedule's.
    ErrorOr<std::unique_ptr<MemoryBuffer>> text =
        MemoryBuffer::getFile(inputFile);
    if (!text || !StringRef(inputFile).ends_with(".mlir") ||
        !(*text)->getBuffer().contains("zb.program"))
      return std::optional<ScheduleFile>();
    if (flags.given("schedule"))
      return fail("'" + inputFile + "' holds its zb.program, which is the "
                  "schedule: --schedule names another");
    path = inputFile;
  }
  Expected<ScheduleFile> file = readScheduleFile(path);
  if (!file)
    return file.takeError();
  return std::optional<ScheduleFile>(std::move(*file));
}

/// A count as given (`given`: the flag was, with the value `value`), or
/// the schedule file's `fromFile` when not given; given, it must agree
/// with the file.
Expected<int64_t> countOption(std::optional<int64_t> given, StringRef flag,
                              const std::optional<ScheduleFile> &file,
                              int64_t fromFile, StringRef what) {
  if (!given) {
    if (!file)
      return fail("--ranks and --microbatches are required (or "
                  "--schedule-file, whose file gives them)");
    return fromFile;
  }
  if (file && *given != fromFile)
    return fail(formatv("{0} {1} contradicts the schedule file '{2}', which "
                        "has {3} {4}",
                        flag, *given, file->path, fromFile, what));
  return *given;
}

/// What the schedule file fixes: no levers of the tool's own, the
/// optimizer of a program, the schedule's name.
Error takeScheduleFile(Request &request, const ScheduleFile &file) {
  const CompileFlags &flags = compileFlags();
  CompileOptions &options = request.options;
  if (flags.given("recompute") && options.recompute != RecomputeLever::None)
    return fail("--recompute: the schedule file '" + file.path +
                "' is the order, R ops included; write its zb.compute R ops "
                "there");
  if (flags.given("offload") && options.offload != OffloadLever::None)
    return fail("--offload: the schedule file '" + file.path +
                "' is the order, copies included; write its zb.offload and "
                "zb.reload ops there");
  options.schedule = sys::path::filename(file.path).str();
  // A program names its optimizer (the state the proof counts).
  if (file.optimizer) {
    Optimizer named = Optimizer::SGD;
    if (Error e = readOptionValue(*file.optimizer, named, std::nullopt))
      return fail("the schedule file '" + file.path + "': " +
                  toString(std::move(e)));
    if (flags.given("optimizer") && named != options.optimizer)
      return fail(formatv("--optimizer {0} contradicts the schedule file "
                          "'{1}', whose zb.program is for {2}",
                          optimizerName(options.optimizer), file.path,
                          *file.optimizer));
    options.optimizer = named;
  }
  return Error::success();
}

/// An offload needs the speed of the copy queues, which nothing can guess:
/// --copy-bandwidth or the cost file's copy_bandwidth (zbc profile measures
/// it). Refused here, naming the flag and its unit, before any pass runs.
Error checkCopyBandwidth(const CompileOptions &options) {
  if (options.offload == OffloadLever::None || options.copyBandwidth > 0)
    return Error::success();
  if (!options.costFile.empty()) {
    // A cost file that cannot be read is the cost pass's to report.
    ErrorOr<std::unique_ptr<MemoryBuffer>> text =
        MemoryBuffer::getFile(options.costFile);
    if (!text)
      return Error::success();
    Expected<sched::CostFile> costs =
        sched::parseCostFile((*text)->getBuffer(), options.costFile);
    if (!costs) {
      consumeError(costs.takeError());
      return Error::success();
    }
    if (costs->copyBandwidth.value_or(0) > 0)
      return Error::success();
  }
  return fail(formatv(
      "--offload {0} needs --copy-bandwidth X: the bytes a rank copies "
      "between device and host memory per unit of schedule time, each way "
      "(bytes per FLOP under the cost model; bytes per millisecond with a "
      "measured --cost-file, whose copy_bandwidth gives it). `zbc profile "
      "MODEL --stages N -o costs.json` measures it; then pass --cost-file "
      "costs.json",
      optionValueText(options.offload)));
}

} // namespace

Expected<Request> zbc::readRequest(bool outputRequired) {
  CompileFlags &flags = compileFlags();
  Request request;
  Expected<std::optional<ScheduleFile>> file = scheduleFileOfRequest();
  if (!file)
    return file.takeError();
  request.scheduleFile = std::move(*file);
  const std::optional<ScheduleFile> &schedule = request.scheduleFile;
  std::optional<int64_t> givenRanks;
  if (ranksOpt.getNumOccurrences()) {
    Expected<int64_t> n =
        parseInteger("--ranks", ranksOpt, 1, limits::kMaxRanks);
    if (!n)
      return n.takeError();
    givenRanks = *n;
  }
  Expected<CompileOptions> options = flags.read();
  if (!options)
    return options.takeError();
  request.options = std::move(*options);
  int64_t replicas = request.options.replicas;
  Expected<int64_t> ranks =
      countOption(givenRanks, "--ranks", schedule,
                  schedule ? schedule->ranks : 0,
                  schedule && schedule->format == ScheduleFile::Format::CSV
                      ? "ranks (rows)"
                      : "ranks");
  if (!ranks)
    return ranks.takeError();
  // --microbatches is the whole batch; the file's are one replica's.
  std::optional<int64_t> givenMicrobatches;
  if (flags.given("microbatches"))
    givenMicrobatches = request.options.microbatches;
  Expected<int64_t> microbatches = countOption(
      givenMicrobatches, "--microbatches", schedule,
      schedule ? schedule->microbatches * replicas : 0,
      replicas > 1 ? "microbatches over all replicas" : "microbatches");
  if (!microbatches)
    return microbatches.takeError();
  request.ranks = *ranks;
  request.options.microbatches = *microbatches;
  if (replicas > 1) {
    if (*microbatches % replicas)
      return fail(formatv("--data-parallel {0} does not divide the batch of "
                          "{1} microbatches (each replica takes the same "
                          "share)",
                          replicas, *microbatches));
    request.options.microbatches = *microbatches / replicas;
  }
  // Note [Two memory limits]: the whole rank, or the activations.
  CompileOptions &compile = request.options;
  if (compile.memoryLimit > 0 && !compile.activationBudget.isScheduleDefault())
    return fail("give --mem-limit (a rank's whole memory, from which the "
                "activation budget is fitted) or --activation-budget, not "
                "both");
  // --mem-limit 0: no limit at all, the schedule's default budget too,
  // unless --activation-budget gives one.
  if (flags.given("memory-limit") && compile.memoryLimit == 0 &&
      compile.activationBudget.isScheduleDefault())
    compile.activationBudget = ActivationBudget::none();
  if (schedule) {
    if (Error e = takeScheduleFile(request, *schedule))
      return std::move(e);
  } else {
    if (Error e = checkCopyBandwidth(compile))
      return std::move(e);
    const sched::ScheduleInfo *info = sched::lookupSchedule(compile.schedule);
    if (!info) {
      std::string names;
      for (const sched::ScheduleInfo &s : sched::registeredSchedules())
        names += std::string(names.empty() ? "" : ", ") + s.name;
      return fail("unknown schedule '" + compile.schedule +
                  "'; registered: " + names);
    }
    // Checked against the schedule here; an interleaved one without it
    // takes its share of the model's stages once they are known.
    if (Expected<int64_t> v =
            sched::resolveStagesPerRank(*info, compile.stagesPerRank);
        !v)
      return v.takeError();
  }
  if (hostsOpt.getNumOccurrences()) {
    Expected<std::vector<std::string>> hosts = parseHosts(
        hostsOpt, static_cast<int>(request.ranks * request.options.replicas));
    if (!hosts)
      return hosts.takeError();
    request.hosts = std::move(*hosts);
  }
  request.backend = backendOpt;
  if (request.backend != "cpu" && request.backend != "cuda")
    return fail("--backend must be 'cpu' or 'cuda', got '" + request.backend +
                "'");
  if (request.backend == "cuda" && !cudaBackendBuilt())
    return fail("--backend cuda: this zbc was built without the CUDA backend "
                "(nvcc, the CUDA toolkit or NCCL was not found when it was "
                "configured; see ZBC_ENABLE_CUDA)");
  request.input = inputFile;
  request.dir = outputDir;
  if (request.dir.empty()) {
    if (outputRequired)
      return fail("-o DIR is required: where the programs go");
    SmallString<128> tmp;
    if (std::error_code ec = sys::fs::createUniqueDirectory("zbc-run", tmp))
      return fail("cannot make a build directory: " + ec.message());
    request.dir = tmp.str().str();
  }
  return request;
}
