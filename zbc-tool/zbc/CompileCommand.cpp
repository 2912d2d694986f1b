//===- CompileCommand.cpp - `zbc compile`: a model into rank programs ------===//
//
// The whole pipeline on one module: zb-backward (a zb.model), then the
// pipeline of zbc-opt's --zb-lower-to-program (Pipelines.h): zb-stage-costs,
// zb-schedule (a zb.pipeline without a program), zb-insert-p2p (a program
// without transfers), zb-plan-memory (which proves the program first: an
// unverifiable one stops here with the verifier's diagnostic); then
// convert-zb-to-emitc and the printing of DIR/src/rankN.cpp, the host
// compiler, DIR/launch.sh, DIR/report.json and DIR/schedule.svg. What the
// passes found (the predicted makespan, the levers, every rank's peak) is
// read from the program they wrote (CompileReport.cpp reports it). `zbc
// run` compiles the same way (RunCommand.cpp); the request is read in
// CompileRequest.cpp.
//
//===----------------------------------------------------------------------===//

#include "Compile.h"
#include "HostCompiler.h"
#include "Input.h"
#include "Options.h"
#include "SchedulePlugins.h"

#include "zbc/Codegen/Codegen.h"
#include "zbc/Dialect/ZB/ModelHash.h"
#include "zbc/Dialect/ZB/ZBOps.h"
#include "zbc/Passes/Pipelines.h"
#include "zbc/Schedule/Registry.h"
#include "zbc/contracts/Files.h"

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <set>
#include <optional>

using namespace llvm;
using namespace mlir;
using namespace zbc;

namespace {


double secondsSince(std::chrono::steady_clock::time_point begin) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin)
      .count();
}

/// Runs `pm` on `module`, adding its time to `seconds`.
LogicalResult runTimed(PassManager &pm, ModuleOp module, double &seconds) {
  auto begin = std::chrono::steady_clock::now();
  LogicalResult result = pm.run(module);
  seconds += secondsSince(begin);
  return result;
}

/// The stages each rank holds under a registered schedule, before a
/// model without cuts is cut: its own, or for an interleaved one without
/// --virtual one (the model's stages then are the ranks').
int64_t stagesPerRankToCut(const Request &request) {
  const sched::ScheduleInfo *info =
      sched::lookupSchedule(request.options.schedule);
  Expected<int64_t> v =
      sched::resolveStagesPerRank(*info, request.options.stagesPerRank);
  return v ? *v : 1; // readRequest refused what it cannot place
}

/// The passes, up to a planned program; writes schedule.svg.
Expected<Compiled> lowerToProgram(ModuleOp module, const Request &request) {
  MLIRContext *context = module.getContext();
  Compiled result;
  CompileOptions options = request.options;
  std::optional<ScheduleFile> file = request.scheduleFile;
  if (!module.getOps<zb::ModelOp>().empty()) {
    // A model without cuts is cut into as many stages as the ranks hold (a
    // schedule file: as it places).
    int64_t cuts = 0;
    module.walk([&](zb::CutOp) { ++cuts; });
    PassManager pm(context);
    BackwardPipelineOptions backward;
    backward.stages = cuts   ? 0
                      : file ? file->stages
                             : request.ranks * stagesPerRankToCut(request);
    buildBackwardPipeline(pm, backward);
    if (failed(runTimed(pm, module, result.seconds.passes)))
      return fail("the model did not split (the error is above)");
  }
  SmallVector<zb::PipelineOp> pipelines(module.getOps<zb::PipelineOp>());
  if (pipelines.size() != 1)
    return fail(formatv("'{0}' must hold one zb.model or zb.pipeline; it "
                        "holds {1} pipelines",
                        request.input, pipelines.size()));
  zb::PipelineOp pipeline = pipelines.front();
  int64_t stages = pipeline.getNumStages();
  if (file) {
    if (stages != file->stages)
      return fail(formatv("'{0}' has {1} stages; the schedule file '{2}' "
                          "places {3}: cut the model into {3} stages, or give "
                          "it no zb.cut and zbc cuts it",
                          request.input, stages, file->path, file->stages));
    if (module.getOps<zb::ProgramOp>().empty()) {
      if (Error e = addScheduleProgram(module, pipeline, *file,
                                       optimizerName(options.optimizer)))
        return std::move(e);
    } else {
      // The model file's own program: named by its file, with the run's
      // optimizer (readRequest checked that they agree).
      zb::ProgramOp program = *module.getOps<zb::ProgramOp>().begin();
      OpBuilder b(context);
      program->setAttr("schedule", b.getStringAttr(options.schedule));
      program.setOptimizerAttr(
          b.getStringAttr(optimizerName(options.optimizer)));
    }
    result.scheduleSource = file->formatName() + " '" + file->path + "'";
  } else if (module.getOps<zb::ProgramOp>().empty()) {
    // Note [Stages per rank]: an interleaved schedule without --virtual
    // gives each rank an equal share of the model's stages.
    Expected<int64_t> perRank = sched::resolveStagesPerRank(
        *sched::lookupSchedule(options.schedule), options.stagesPerRank,
        stages, request.ranks);
    if (!perRank)
      return fail("'" + request.input + "' " + toString(perRank.takeError()));
    if (stages != request.ranks * *perRank)
      return fail(formatv(
          "'{0}' has {1} stages, but {2} ranks under '{3}' ({4} per rank) need "
          "{5}: cut the model into {5} stages, or give it no zb.cut and zbc "
          "cuts it",
          request.input, stages, request.ranks, options.schedule, *perRank,
          request.ranks * *perRank));
    options.stagesPerRank = *perRank;
  }
  if (std::string plugin = schedulePluginOf(options.schedule);
      !file && !plugin.empty())
    result.scheduleSource =
        "'" + options.schedule + "' from the plugin '" + plugin + "'";
  // The rest is one pipeline (zbc-opt --zb-lower-to-program runs the same):
  // the costs, the schedule (a program already there is kept) fitted to
  // --mem-limit (Note [Rank budget]), the transfers, the proof and the
  // memory plan.
  PassManager pm(context);
  buildScheduleToProgramPipeline(pm, options);
  if (failed(runTimed(pm, module, result.seconds.passes))) {
    if (options.memoryLimit > 0)
      return fail(formatv("no schedule within --mem-limit {0} bytes per "
                          "rank (the error is above)",
                          options.memoryLimit));
    return fail("the program was not lowered (the error is above)");
  }
  result.model = pipeline.getSymName().str();
  result.stages = static_cast<int>(stages);
  result.modelHash = zb::modelHashOf(pipeline);
  zb::ProgramOp program = *module.getOps<zb::ProgramOp>().begin();
  if (Error e = readProgram(program, pipeline, result))
    return std::move(e);
  if (Error e = writeFile(request.dir + "/schedule.svg", [&](raw_ostream &os) {
        writePredictedSVG(result, os,
                          result.scheduleSource.empty() ? options.schedule
                                                        : result.scheduleSource);
      }))
    return std::move(e);
  return result;
}

} // namespace

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
  zbc::DiagnosticPrinter diagnostics(sourceMgr, &context);
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
    std::string text;
    raw_string_ostream out(text);
    if (failed(printRankFile(*module, r, out)))
      return fail("cannot print rank " + Twine(r) + " as C++");
    if (Error e = writeFile(path, StringRef(text)))
      return std::move(e);
  }
  compiled->seconds.codegen = secondsSince(begin);

  begin = std::chrono::steady_clock::now();
  if (Error e = buildRankExecutables(request.dir, compiled->ranks,
                                     request.backend))
    return std::move(e);
  compiled->seconds.hostCompile = secondsSince(begin);
  compiled->processes =
      placeProcesses(compiled->ranks, static_cast<int>(request.options.replicas),
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
