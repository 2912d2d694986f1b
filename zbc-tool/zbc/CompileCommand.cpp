//===- CompileCommand.cpp - `zbc compile` and `zbc run` -------------------===//
//
//   zbc compile MODEL.mlir --ranks P --microbatches M --schedule NAME
//       [--virtual V] [--mem-limit BYTES] [--cost-file F]
//       [--optimizer sgd|adamw] -o DIR
//   zbc compile MODEL.mlir --schedule-file FILE [the same but --schedule]
//       (a PyTorch schedule CSV or a zb.program: ScheduleFile.h)
//   zbc run MODEL.mlir [the same] --steps N [--seed S] [--save D]
//       [--save-init D] [--data FILE] [-o DIR]
//
// The whole pipeline on one module: zb-backward (a zb.model), zb-schedule (a
// zb.pipeline without a program), zb-insert-p2p (a program without
// transfers), zb-plan-memory (which proves the program first: an
// unverifiable one stops here with the verifier's diagnostic), then
// convert-zb-to-emitc and the printing of DIR/src/rankN.cpp, the host
// compiler, DIR/launch.sh, DIR/report.json and DIR/schedule.svg. `zbc run`
// then starts launch.sh with the training options and passes its output
// through, one line per step.
//
//===----------------------------------------------------------------------===//

#include "Compile.h"
#include "HostCompiler.h"
#include "Input.h"
#include "Numbers.h"
#include "Options.h"
#include "SchedulePlugins.h"

#include "zbc/Analysis/ProgramTable.h"
#include "zbc/Dialect/ZB/DataBounds.h"
#include "zbc/Dialect/ZB/ModelHash.h"
#include "zbc/Dialect/ZB/PhaseKeys.h"
#include "zbc/Codegen/Codegen.h"
#include "zbc/Dialect/ZB/ZBOps.h"
#include "zbc/Passes/Passes.h"
#include "zbc/Passes/Pipelines.h"
#include "zbc/Schedule/Export.h"
#include "zbc/Schedule/Offload.h"
#include "zbc/Schedule/Registry.h"
#include "zbc/Schedule/Simulator.h"
#include "zbc/Support/Limits.h"
#include "zbc/contracts/Files.h"

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <set>
#include <optional>

using namespace llvm;
using namespace mlir;
using namespace zbc;

namespace {
using zbc::zbcCategory;

#define BOTH cl::sub(zbc::compileCommand()), cl::sub(zbc::runCommand())

cl::opt<std::string> inputFile(cl::Positional, cl::Required,
                               cl::desc("<model.mlir>"), BOTH,
                               cl::cat(zbcCategory));
cl::opt<std::string> ranksOpt("ranks", cl::desc("Pipeline ranks p (1 to 4096)"),
                              cl::value_desc("P"), BOTH, cl::cat(zbcCategory));
cl::opt<std::string> microbatchesOpt(
    "microbatches",
    cl::desc("Microbatches per step m (1 to 2^20; with --data-parallel, of "
             "all replicas together)"),
    cl::value_desc("M"), BOTH, cl::cat(zbcCategory));
cl::opt<std::string> scheduleOpt("schedule",
                                 cl::desc("Registered schedule (zbc schedule "
                                          "--list); default zb-h1"),
                                 cl::value_desc("name"), cl::init("zb-h1"),
                                 BOTH, cl::cat(zbcCategory));
cl::opt<std::string> scheduleFileOpt(
    "schedule-file",
    cl::desc("The schedule in FILE instead of a registered one: a PyTorch "
             "schedule CSV (compute only: the transfers are inserted; "
             "compute+comms: its transfer order is kept and proven) or a "
             ".mlir holding a zb.program. The file gives the ranks and "
             "microbatches"),
    cl::value_desc("FILE"), BOTH, cl::cat(zbcCategory));
cl::opt<std::string> virtualOpt(
    "virtual", cl::desc("Stages per rank for interleaved schedules"),
    cl::value_desc("V"), BOTH, cl::cat(zbcCategory));
cl::opt<std::string> memLimitOpt(
    "mem-limit",
    cl::desc("Each rank's whole memory in bytes (parameters, optimizer "
             "state, temporaries, activations): the schedule plans its "
             "activations within what the rest leaves, and the proof holds "
             "every rank to it (0: none; default: the schedule's own)"),
    cl::value_desc("BYTES"), BOTH, cl::cat(zbcCategory));
cl::opt<std::string> activationBudgetOpt(
    "activation-budget",
    cl::desc("The bytes of activations each rank keeps in flight, as zbc "
             "schedule's --activation-budget: 'default' (the schedule's "
             "own), 'none' or BYTES; instead of --mem-limit"),
    cl::value_desc("BYTES"), BOTH, cl::cat(zbcCategory));
cl::opt<std::string> costFileOpt(
    "cost-file",
    cl::desc("JSON cost file whose F/B/W/M_B/M_W lists and comm replace the "
             "cost model's (as zbc schedule --cost-file reads)"),
    cl::value_desc("file"), BOTH, cl::cat(zbcCategory));
cl::opt<std::string> recomputeOpt(
    "recompute",
    cl::desc("Recompute activations as scheduled R ops: none (default), "
             "full (every microbatch's F keeps only its inputs; an R before "
             "its backward runs it again), selective (as full, each "
             "stage's R rebuilding only what costs no matmul-class FLOPs: "
             "F keeps the rest), auto (the stages and "
             "microbatches that give the shortest schedule within the "
             "memory; the backward checkpointed where that is shorter or "
             "alone fits) or checkpoint (F keeps only the points where the "
             "forward narrows to one tensor; each backward rebuilds the "
             "rest one segment at a time, no R ops)"),
    cl::value_desc("mode"), cl::init("none"), BOTH, cl::cat(zbcCategory));
cl::opt<std::string> offloadOpt(
    "offload",
    cl::desc("Offload stashes to host memory as scheduled zb.offload and "
             "zb.reload copies: none (default), full (every microbatch's "
             "stash, back before its backward) or auto (those that give the "
             "shortest schedule within the memory); needs --copy-bandwidth"),
    cl::value_desc("mode"), cl::init("none"), BOTH, cl::cat(zbcCategory));
cl::opt<double> copyBandwidthOpt(
    "copy-bandwidth",
    cl::desc("Bytes a rank copies between device and host memory per unit "
             "of schedule time, each way (a cost file's copy_bandwidth "
             "overrides it)"),
    cl::value_desc("X"), cl::init(0), BOTH, cl::cat(zbcCategory));
cl::opt<std::string> optimizerOpt("optimizer",
                                  cl::desc("sgd (with momentum) or adamw"),
                                  cl::value_desc("name"), cl::init("sgd"),
                                  BOTH, cl::cat(zbcCategory));
cl::opt<std::string> dataParallelOpt(
    "data-parallel",
    cl::desc("Replicas of the pipeline, each on its own ranks and its share "
             "of every batch (P x D processes; --microbatches is the whole "
             "batch, which D must divide)"),
    cl::value_desc("D"), BOTH, cl::cat(zbcCategory));
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

Error fail(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

double secondsSince(std::chrono::steady_clock::time_point begin) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin)
      .count();
}


} // namespace

/// The schedule file the run takes its order from: --schedule-file, or the
/// model file itself when it holds a zb.program; none otherwise.
Expected<std::optional<ScheduleFile>> scheduleFileOfRequest() {
  std::string path = scheduleFileOpt;
  if (!path.empty()) {
    if (scheduleOpt.getNumOccurrences())
      return fail("--schedule and --schedule-file both name the schedule: "
                  "give one");
    if (virtualOpt.getNumOccurrences())
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
    if (scheduleOpt.getNumOccurrences())
      return fail("'" + inputFile + "' holds its zb.program, which is the "
                  "schedule: --schedule names another");
    path = inputFile;
  }
  Expected<ScheduleFile> file = readScheduleFile(path);
  if (!file)
    return file.takeError();
  return std::optional<ScheduleFile>(std::move(*file));
}

/// --ranks or --microbatches as given, or the schedule file's `fromFile`
/// when not given; given, they must agree with the file.
Expected<int64_t> countOption(cl::opt<std::string> &option, StringRef flag,
                              int64_t max,
                              const std::optional<ScheduleFile> &file,
                              int64_t fromFile, StringRef what) {
  if (!option.getNumOccurrences()) {
    if (!file)
      return fail("--ranks and --microbatches are required (or "
                  "--schedule-file, whose file gives them)");
    return fromFile;
  }
  Expected<int64_t> n = parseInteger(flag, option, 1, max);
  if (n && file && *n != fromFile)
    return fail(formatv("{0} {1} contradicts the schedule file '{2}', which "
                        "has {3} {4}",
                        flag, *n, file->path, fromFile, what));
  return n;
}

Expected<Request> zbc::readRequest(bool outputRequired) {
  Request request;
  Expected<std::optional<ScheduleFile>> file = scheduleFileOfRequest();
  if (!file)
    return file.takeError();
  request.scheduleFile = std::move(*file);
  const std::optional<ScheduleFile> &schedule = request.scheduleFile;
  int64_t replicas = 1;
  if (dataParallelOpt.getNumOccurrences()) {
    Expected<int64_t> d = parseInteger("--data-parallel", dataParallelOpt, 1,
                                       limits::kMaxRanks);
    if (!d)
      return d.takeError();
    replicas = *d;
  }
  Expected<int64_t> ranks =
      countOption(ranksOpt, "--ranks", limits::kMaxRanks, schedule,
                  schedule ? schedule->ranks : 0,
                  schedule && schedule->format == ScheduleFile::Format::CSV
                      ? "ranks (rows)"
                      : "ranks");
  if (!ranks)
    return ranks.takeError();
  // --microbatches is the whole batch; the file's are one replica's.
  Expected<int64_t> microbatches = countOption(
      microbatchesOpt, "--microbatches", limits::kMaxMicrobatches, schedule,
      schedule ? schedule->microbatches * replicas : 0,
      replicas > 1 ? "microbatches over all replicas" : "microbatches");
  if (!microbatches)
    return microbatches.takeError();
  request.ranks = *ranks;
  request.microbatches = *microbatches;
  if (replicas > 1) {
    if (*microbatches % replicas)
      return fail(formatv("--data-parallel {0} does not divide the batch of "
                          "{1} microbatches (each replica takes the same "
                          "share)",
                          replicas, *microbatches));
    request.replicas = replicas;
    request.microbatches = *microbatches / replicas;
  }
  if (virtualOpt.getNumOccurrences()) {
    Expected<int64_t> v = parseInteger("--virtual", virtualOpt, 1, limits::kMaxStages);
    if (!v)
      return v.takeError();
    request.virtualStages = *v;
  }
  if (memLimitOpt.getNumOccurrences()) {
    Expected<int64_t> limit =
        parseInteger("--mem-limit", memLimitOpt, 0, limits::kMaxTensorBytes);
    if (!limit)
      return limit.takeError();
    request.memoryLimit = *limit;
  }
  if (activationBudgetOpt.getNumOccurrences()) {
    Expected<std::optional<double>> budget =
        sched::parseActivationBudget(activationBudgetOpt);
    if (!budget)
      return createStringError(inconvertibleErrorCode(),
                               "--activation-budget: " +
                                   toString(budget.takeError()));
    // Note [Two memory limits]: the whole rank, or the activations.
    if (request.memoryLimit.value_or(0) > 0 && *budget)
      return fail("give --mem-limit (a rank's whole memory, from which the "
                  "activation budget is fitted) or --activation-budget, not "
                  "both");
    request.activationBudget = *budget;
  }
  request.input = inputFile;
  request.costFile = costFileOpt;
  // checkpoint is a rewrite of the stages, not a mode of the schedule's.
  if (recomputeOpt != kCheckpointBackward)
    if (Expected<sched::RecomputeMode> mode =
            sched::parseRecomputeMode(recomputeOpt);
        !mode)
      return fail("--recompute: " + toString(mode.takeError()) +
                  " (or 'checkpoint')");
  request.recompute = recomputeOpt;
  if (Expected<sched::OffloadMode> mode = sched::parseOffloadMode(offloadOpt);
      !mode)
    return fail("--offload: " + toString(mode.takeError()));
  request.offload = offloadOpt;
  if (!(copyBandwidthOpt >= 0) || copyBandwidthOpt > 1e30)
    return fail(formatv("--copy-bandwidth must be in [0, 1e30], got {0}",
                        copyBandwidthOpt.getValue()));
  request.copyBandwidth = copyBandwidthOpt;
  request.optimizer = optimizerOpt;
  if (request.optimizer != "sgd" && request.optimizer != "adamw")
    return fail("--optimizer must be 'sgd' or 'adamw', got '" +
                request.optimizer + "'");
  if (schedule) {
    if (recomputeOpt.getNumOccurrences() && request.recompute != "none")
      return fail("--recompute: the schedule file '" + schedule->path +
                  "' is the order, R ops included; write its zb.compute R "
                  "ops there");
    if (offloadOpt.getNumOccurrences() && request.offload != "none")
      return fail("--offload: the schedule file '" + schedule->path +
                  "' is the order, copies included; write its zb.offload "
                  "and zb.reload ops there");
    request.schedule = sys::path::filename(schedule->path).str();
    // A program names its optimizer (the state the proof counts).
    if (schedule->optimizer) {
      if (optimizerOpt.getNumOccurrences() &&
          *schedule->optimizer != request.optimizer)
        return fail(formatv("--optimizer {0} contradicts the schedule file "
                            "'{1}', whose zb.program is for {2}",
                            request.optimizer, schedule->path,
                            *schedule->optimizer));
      request.optimizer = *schedule->optimizer;
    }
  } else {
    request.schedule = scheduleOpt;
    const sched::ScheduleInfo *info = sched::lookupSchedule(request.schedule);
    if (!info) {
      std::string names;
      for (const sched::ScheduleInfo &s : sched::registeredSchedules())
        names += std::string(names.empty() ? "" : ", ") + s.name;
      return fail("unknown schedule '" + request.schedule +
                  "'; registered: " + names);
    }
    Expected<std::optional<int64_t>> perRank =
        sched::stagesPerRank(*info, request.virtualStages);
    if (!perRank)
      return perRank.takeError();
    request.virtualStages = *perRank;
  }
  if (hostsOpt.getNumOccurrences()) {
    Expected<std::vector<std::string>> hosts = parseHosts(
        hostsOpt, static_cast<int>(request.ranks * request.replicas));
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


namespace {

/// The safetensors dtype of a data key's elements ("" for one the runtime
/// does not read; code generation refuses those).
std::string safeTensorsDtypeOf(Type element) {
  if (element.isF32())
    return "F32";
  if (element.isBF16())
    return "BF16";
  if (element.isInteger(32))
    return "I32";
  if (element.isInteger(64))
    return "I64";
  return "";
}

/// Every input and label key the pipeline's phases read, once each.
std::vector<rt::DataKey> dataKeysOf(zb::PipelineOp pipeline) {
  std::vector<rt::DataKey> keys;
  std::set<std::string> seen;
  pipeline.walk([&](zb::PhaseOp phase) {
    for (auto [arg, key] : llvm::zip(phase.getBodyBlock().getArguments(),
                                     phase.getArgKeyList())) {
      std::optional<zb::PhaseKey> parsed = zb::PhaseKey::parse(key);
      if (!parsed || (parsed->kind != zb::KeyKind::Input &&
                      parsed->kind != zb::KeyKind::Label) ||
          !seen.insert(key.str()).second)
        continue;
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      rt::DataKey k;
      k.key = key.str();
      k.integer = type && type.getElementType().isInteger();
      if (type)
        k.dtype = safeTensorsDtypeOf(type.getElementType());
      k.bound = k.integer ? zb::indexDataBound(pipeline, key) : 0;
      if (type)
        k.shape.assign(type.getShape().begin(), type.getShape().end());
      keys.push_back(std::move(k));
    }
  });
  return keys;
}

/// Runs `pm` on `module`, adding its time to `seconds`.
LogicalResult runTimed(PassManager &pm, ModuleOp module, double &seconds) {
  auto begin = std::chrono::steady_clock::now();
  LogicalResult result = pm.run(module);
  seconds += secondsSince(begin);
  return result;
}

Error writeFile(const std::string &path,
                llvm::function_ref<void(raw_ostream &)> body) {
  std::error_code ec;
  raw_fd_ostream out(path, ec);
  if (ec)
    return fail("cannot write '" + path + "': " + ec.message());
  body(out);
  return Error::success();
}

/// The passes, up to a planned program; writes schedule.svg.
Expected<Compiled> lowerToProgram(ModuleOp module, const Request &request) {
  MLIRContext *context = module.getContext();
  Compiled result;
  std::optional<ScheduleFile> file = request.scheduleFile;
  if (!module.getOps<zb::ModelOp>().empty()) {
    // A model without cuts is cut into as many stages as the ranks hold (a
    // schedule file: as it places).
    int64_t cuts = 0;
    module.walk([&](zb::CutOp) { ++cuts; });
    PassManager pm(context);
    BackwardPipelineOptions options;
    options.stages = cuts   ? 0
                     : file ? file->stages
                            : request.ranks * request.virtualStages.value_or(1);
    buildBackwardPipeline(pm, options);
    if (failed(runTimed(pm, module, result.seconds.passes)))
      return fail("the model did not split (the error is above)");
  }
  SmallVector<zb::PipelineOp> pipelines(module.getOps<zb::PipelineOp>());
  if (pipelines.size() != 1)
    return fail(formatv("'{0}' must hold one zb.model or zb.pipeline; it "
                        "holds {1} pipelines",
                        request.input, pipelines.size()));
  zb::PipelineOp pipeline = pipelines.front();
  int64_t stages = std::distance(pipeline.getBody().front().getOps<zb::StageOp>().begin(),
                                 pipeline.getBody().front().getOps<zb::StageOp>().end());
  int64_t perRankStages = 1; // of a registered schedule, as placed here
  if (file) {
    if (stages != file->stages)
      return fail(formatv("'{0}' has {1} stages; the schedule file '{2}' "
                          "places {3}: cut the model into {3} stages, or give "
                          "it no zb.cut and zbc cuts it",
                          request.input, stages, file->path, file->stages));
    if (module.getOps<zb::ProgramOp>().empty()) {
      if (Error e = addScheduleProgram(module, pipeline, *file,
                                       request.optimizer))
        return std::move(e);
    } else {
      // The model file's own program: named by its file, with the run's
      // optimizer (readRequest checked that they agree).
      zb::ProgramOp program = *module.getOps<zb::ProgramOp>().begin();
      OpBuilder b(context);
      program->setAttr("schedule", b.getStringAttr(request.schedule));
      program.setOptimizerAttr(b.getStringAttr(request.optimizer));
    }
    result.scheduleSource = file->formatName() + " '" + file->path + "'";
  } else if (module.getOps<zb::ProgramOp>().empty()) {
    // An interleaved schedule without --virtual gives each rank an equal
    // share of the model's stages.
    int64_t perRank = request.virtualStages.value_or(
        stages % request.ranks == 0 ? std::max<int64_t>(stages / request.ranks, 1)
                                    : 0);
    if (!perRank)
      return fail(formatv(
          "'{0}' has {1} stages, which {2} ranks under '{3}' cannot share "
          "evenly: cut the model into a multiple of {2} stages, or give it no "
          "zb.cut and pass --virtual V: zbc cuts it into {2}V stages",
          request.input, stages, request.ranks, request.schedule));
    if (stages != request.ranks * perRank)
      return fail(formatv(
          "'{0}' has {1} stages, but {2} ranks under '{3}' ({4} per rank) need "
          "{5}: cut the model into {5} stages, or give it no zb.cut and zbc "
          "cuts it",
          request.input, stages, request.ranks, request.schedule, perRank,
          request.ranks * perRank));
    perRankStages = perRank;
  }
  if (std::string plugin = schedulePluginOf(request.schedule);
      !file && !plugin.empty())
    result.scheduleSource =
        "'" + request.schedule + "' from the plugin '" + plugin + "'";
  // The rest is one pipeline (zbc-opt --zb-lower-to-program runs the same):
  // the schedule (a program already there is kept), fitted to --mem-limit
  // (Note [Rank budget]), the transfers, the proof and the memory plan.
  LowerToProgramOptions options;
  options.schedule = request.schedule;
  options.microbatches = request.microbatches;
  options.virtualStages = perRankStages;
  options.optimizer = request.optimizer;
  options.costFile = request.costFile;
  options.recompute = request.recompute;
  options.offload = request.offload;
  options.copyBandwidth = request.copyBandwidth;
  // --mem-limit 0: no limit at all, the schedule's default budget too,
  // unless --activation-budget gives one.
  options.memoryLimit = request.memoryLimit.value_or(0);
  options.activationBudget = sched::activationBudgetText(
      request.memoryLimit == 0 && !request.activationBudget
          ? std::optional<double>(0)
          : request.activationBudget);
  PassManager pm(context);
  buildScheduleToProgramPipeline(pm, options);
  if (failed(runTimed(pm, module, result.seconds.passes))) {
    if (options.memoryLimit > 0)
      return fail(formatv("no schedule within --mem-limit {0} bytes per "
                          "rank (the error is above)",
                          options.memoryLimit));
    return fail("the program was not lowered (the error is above)");
  }
  zb::ProgramOp program = *module.getOps<zb::ProgramOp>().begin();
  if (std::optional<int64_t> budget = program.getActivationBudget())
    result.activationBudget = static_cast<double>(*budget);

  result.model = pipeline.getSymName().str();
  result.stages = static_cast<int>(stages);
  result.dataKeys = dataKeysOf(pipeline);
  pipeline.walk([&](zb::ParamOp param) {
    result.paramNames.insert(param.getName().str());
  });
  result.modelHash = zb::modelHashOf(pipeline);
  for (zb::RankOp rank : program.getBody().front().getOps<zb::RankOp>()) {
    result.peak.push_back(rank.getPeakBytesAttr().getInt());
    result.arena.push_back(rank.getArenaBytesAttr().getInt());
    result.hostPeak.push_back(
        rank.getHostPeakBytesAttr() ? rank.getHostPeakBytesAttr().getInt() : 0);
    result.hostArena.push_back(
        rank.getHostArenaBytesAttr() ? rank.getHostArenaBytesAttr().getInt() : 0);
  }
  result.ranks = static_cast<int>(result.peak.size());
  // The schedule as the simulator times it, and its picture.
  sched::ScheduleTable table = tableOfProgram(program);
  result.table = table;
  FailureOr<sched::Problem> problem = schedulingProblemOf(
      pipeline, stages / std::max(result.ranks, 1), program.getMicrobatches(),
      0, std::nullopt);
  // The costs the schedule was built with (a cost file's copy bandwidth
  // over --copy-bandwidth, as zb-schedule takes them).
  if (succeeded(problem))
    problem->copyBandwidth = request.copyBandwidth;
  if (succeeded(problem) && !request.costFile.empty() &&
      failed(applyCostFile(pipeline, request.costFile, *problem)))
    return fail("the cost file does not fit the pipeline (the error is above)");
  if (succeeded(problem)) {
    Expected<sched::SimResult> sim = sched::simulate(*problem, table);
    if (!sim)
      return sim.takeError();
    result.makespan = sim->makespan;
    result.bubbleRate = sim->bubbleRate;
    result.problem = *problem;
    if (Error e = writeFile(request.dir + "/schedule.svg", [&](raw_ostream &os) {
          sched::writeSVG(*problem, table, *sim, os,
                          result.scheduleSource.empty()
                              ? request.schedule
                              : result.scheduleSource,
                          request.costFile.empty() ? "FLOPs" : "ms");
        }))
      return std::move(e);
  }
  return result;
}

/// How many of `rank`'s actions are of `kind` (an R or an O: one per
/// recomputed or offloaded stage and microbatch).
int64_t leverCount(const sched::ScheduleTable &table, int rank,
                   sched::Kind kind) {
  return llvm::count_if(table.ranks[rank], [&](const sched::Action &a) {
    return a.kind == kind;
  });
}

Error writeReport(const Request &request, const Compiled &c) {
  return writeFile(request.dir + "/report.json", [&](raw_ostream &os) {
    json::OStream j(os, 2);
    j.object([&] {
      j.attribute("model", c.model);
      j.attribute("schedule", request.schedule);
      if (request.scheduleFile) {
        j.attribute("schedule_file", request.scheduleFile->path);
        j.attribute("schedule_format", request.scheduleFile->formatName());
      }
      if (std::string plugin = schedulePluginOf(request.schedule);
          !plugin.empty())
        j.attribute("schedule_plugin", plugin);
      j.attribute("ranks", c.ranks);
      j.attribute("stages", c.stages);
      j.attribute("microbatches", request.microbatches);
      j.attribute("optimizer", request.optimizer);
      j.attribute("predicted_makespan", c.makespan);
      j.attribute("predicted_bubble_rate", c.bubbleRate);
      if (request.memoryLimit && *request.memoryLimit > 0)
        j.attribute("memory_limit_bytes", *request.memoryLimit);
      if (c.activationBudget)
        j.attribute("activation_budget_bytes",
                    static_cast<int64_t>(*c.activationBudget));
      j.attributeArray("memory", [&] {
        for (int r = 0; r < c.ranks; ++r)
          j.object([&] {
            j.attribute("rank", r);
            j.attributeArray("stages", [&] {
              for (int s : c.table.stagesOf(r))
                j.value(static_cast<int64_t>(s));
            });
            j.attribute("peak_bytes", c.peak[r]);
            j.attribute("arena_bytes", c.arena[r]);
            if (c.hostArena[r]) {
              j.attribute("host_peak_bytes", c.hostPeak[r]);
              j.attribute("host_arena_bytes", c.hostArena[r]);
            }
            // The levers, where the schedule pulls them: (stage,
            // microbatch) pairs rebuilt by an R, and moved off and back.
            if (c.table.hasRecompute())
              j.attribute("recomputed", leverCount(c.table, r, sched::Kind::R));
            if (c.table.hasOffload())
              j.attribute("offloaded", leverCount(c.table, r, sched::Kind::O));
          });
      });
      // MPI's process k (launch.sh's order, launch-slurm.sh's task k).
      j.attributeArray("processes", [&] {
        for (auto [k, p] : llvm::enumerate(c.processes))
          j.object([&] {
            j.attribute("process", static_cast<int64_t>(k));
            j.attribute("rank", p.rank);
            j.attribute("replica", p.replica);
            if (!p.host.empty())
              j.attribute("host", p.host);
          });
      });
      j.attributeObject("seconds", [&] {
        j.attribute("passes", c.seconds.passes);
        j.attribute("codegen", c.seconds.codegen);
        j.attribute("host_compile", c.seconds.hostCompile);
      });
    });
    os << "\n";
  });
}

/// The stages rank `r` holds, as "stage 0" or "stages 0, 7".
std::string stagesText(const sched::ScheduleTable &table, int r) {
  std::vector<std::string> held;
  for (int s : table.stagesOf(r))
    held.push_back(std::to_string(s));
  return (held.size() == 1 ? "stage " : "stages ") + llvm::join(held, ", ");
}

/// What zbc compile says it made: the schedule, the memory, the files.
void printBanner(const Request &request, const Compiled &compiled) {
  outs() << formatv("zbc: compiled {0} for {1} ranks under {2} ({3} "
                    "microbatches, {4})\n",
                    compiled.model, compiled.ranks,
                    compiled.scheduleSource.empty()
                        ? request.schedule
                        : "the schedule of " + compiled.scheduleSource,
                    request.microbatches, request.optimizer);
  if (request.replicas > 1)
    outs() << formatv("  {0} data-parallel replicas: {1} processes, each "
                      "replica {2} of the step's {3} microbatches\n",
                      request.replicas, request.replicas * compiled.ranks,
                      request.microbatches,
                      request.replicas * request.microbatches);
  outs() << formatv("  predicted bubble rate {0:F4}\n", compiled.bubbleRate);
  if (compiled.activationBudget && request.memoryLimit.value_or(0) > 0)
    outs() << formatv("  memory limit {0} bytes per rank: the schedule keeps "
                      "at most {1} bytes of activations\n",
                      *request.memoryLimit,
                      static_cast<int64_t>(*compiled.activationBudget));
  else if (compiled.activationBudget)
    outs() << formatv("  activation budget {0} bytes per rank\n",
                      static_cast<int64_t>(*compiled.activationBudget));
  // What the levers do on a rank: microbatches recomputed, and offloaded
  // with the host memory they take.
  auto levers = [&](int r) {
    int64_t rebuilt = leverCount(compiled.table, r, sched::Kind::R),
            moved = leverCount(compiled.table, r, sched::Kind::O);
    std::string text;
    if (rebuilt)
      text += formatv("; {0} recomputed", rebuilt).str();
    if (compiled.hostArena[r])
      text += formatv("; {0} offloaded to the host: peak {1} bytes, arena {2}",
                      moved, compiled.hostPeak[r], compiled.hostArena[r])
                  .str();
    return text;
  };
  for (int r = 0; r < compiled.ranks; ++r)
    outs() << formatv("  rank {0} ({1}): peak {2} bytes, arena {3} "
                      "({4:F3}x){5}\n",
                      r, stagesText(compiled.table, r), compiled.peak[r],
                      compiled.arena[r],
                      compiled.peak[r] ? double(compiled.arena[r]) /
                                              double(compiled.peak[r])
                                        : 1.0,
                      levers(r));
  // Where each process runs, when that is more than "rank r is process r".
  if (request.replicas > 1 || !request.hosts.empty())
    for (auto [k, p] : llvm::enumerate(compiled.processes))
      outs() << formatv("  process {0}: rank {1} of replica {2}{3}\n", k,
                        p.rank, p.replica,
                        p.host.empty() ? std::string() : " on " + p.host);
  outs() << formatv("  passes {0:F2} s, code generation {1:F2} s, host "
                    "compiler {2:F2} s\n",
                    compiled.seconds.passes, compiled.seconds.codegen,
                    compiled.seconds.hostCompile);
  outs() << formatv("  code {0}/src/rank*.cpp, picture {0}/schedule.svg, "
                    "report {0}/report.json\n  run: {0}/launch.sh --steps N\n",
                    request.dir);
  outs().flush();
}

} // namespace

Expected<std::vector<rt::DataKey>>
zbc::modelDataKeys(const std::string &modelPath) {
  MLIRContext context;
  setUpContext(context);
  SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseInputFile(modelPath, context, sourceMgr);
  if (!module)
    return fail("cannot read the model '" + modelPath + "' (the error is above)");
  PassManager pm(&context);
  buildBackwardPipeline(pm, BackwardPipelineOptions());
  if (failed(pm.run(*module)))
    return fail("cannot split the model '" + modelPath +
                "' (the error is above)");
  auto pipelines = module->getOps<zb::PipelineOp>();
  if (pipelines.empty())
    return fail("'" + modelPath + "' holds no 'zb.model'");
  return dataKeysOf(*pipelines.begin());
}

Error zbc::claimOutputDirectory(const std::string &dir) {
  static std::set<std::string> claimed; // this process's: flock is per open
  if (claimed.count(dir))
    return Error::success();
  if (std::string e = rt::checkWritableDirectory(dir, "-o"); !e.empty())
    return fail(e);
  if (std::string e = rt::lockDirectory(dir, ".zbc.lock", "zbc"); !e.empty())
    return fail(e);
  claimed.insert(dir);
  return Error::success();
}

Expected<Compiled> zbc::compile(const Request &request) {
  if (Error e = claimOutputDirectory(request.dir))
    return std::move(e);
  if (std::error_code ec = sys::fs::create_directories(request.dir + "/src"))
    return fail("cannot make '" + request.dir + "/src': " + ec.message());
  MLIRContext context;
  setUpContext(context);
  context.loadDialect<emitc::EmitCDialect>();
  SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module =
      parseInputFile(request.input, context, sourceMgr);
  if (!module)
    return fail("cannot compile '" + request.input + "'");
  Expected<Compiled> compiled = lowerToProgram(*module, request);
  if (!compiled)
    return compiled.takeError();
  // The verified, planned program, as code generation reads it.
  if (Error e = writeFile(request.dir + "/program.mlir",
                          [&](raw_ostream &os) { module->print(os); }))
    return std::move(e);

  auto begin = std::chrono::steady_clock::now();
  PassManager pm(&context);
  pm.addPass(createConvertZBToEmitCPass());
  if (failed(pm.run(*module)))
    return fail("code generation failed (the error is above)");
  for (int r = 0; r < compiled->ranks; ++r) {
    std::string path = formatv("{0}/src/rank{1}.cpp", request.dir, r).str();
    std::error_code ec;
    raw_fd_ostream out(path, ec);
    if (ec)
      return fail("cannot write '" + path + "': " + ec.message());
    if (failed(printRankFile(*module, r, out)))
      return fail("cannot print rank " + Twine(r) + " as C++");
  }
  compiled->seconds.codegen = secondsSince(begin);

  begin = std::chrono::steady_clock::now();
  if (Error e = buildRankExecutables(request.dir, compiled->ranks,
                                     request.backend))
    return std::move(e);
  compiled->seconds.hostCompile = secondsSince(begin);
  compiled->processes =
      placeProcesses(compiled->ranks, static_cast<int>(request.replicas),
                     request.hosts);
  if (Error e = writeLaunchFiles(request.dir, compiled->ranks,
                                 compiled->processes))
    return std::move(e);
  if (Error e = writeReport(request, *compiled))
    return std::move(e);
  if (!request.quiet)
    printBanner(request, *compiled);
  return compiled;
}

int zbc::runCompileCommand() {
  Expected<Request> request = readRequest(/*outputRequired=*/true);
  if (!request) {
    errs() << "zbc: error: " << toString(request.takeError()) << "\n";
    return 1;
  }
  Expected<Compiled> compiled = compile(*request);
  if (!compiled) {
    errs() << "zbc: error: " << toString(compiled.takeError()) << "\n";
    return 1;
  }
  return 0;
}
