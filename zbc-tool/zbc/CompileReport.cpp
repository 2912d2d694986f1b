//===- CompileReport.cpp - what `zbc compile` says it made ----------------===//
//
// What the passes recorded on the program they wrote (zb.program's
// predictions and levers, each zb.rank's peak and arena, the stages'
// costs: Note [Costs in the IR]), read into a Compiled, and said three
// ways: DIR/report.json, DIR/schedule.svg and the banner.
//
//===----------------------------------------------------------------------===//

#include "Compile.h"
#include "Options.h"
#include "SchedulePlugins.h"

#include "zbc/Analysis/ProgramMemory.h"
#include "zbc/Analysis/ProgramTable.h"
#include "zbc/Dialect/ZB/ZBOps.h"
#include "zbc/Analysis/StageCosts.h"
#include "zbc/Schedule/Export.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <set>

using namespace llvm;
using namespace mlir;
using namespace zbc;

namespace {

/// The stages rank `r` holds, as "stage 0" or "stages 0, 7".
std::string stagesText(const sched::ScheduleTable &table, int r) {
  std::vector<std::string> held;
  for (int s : table.stagesOf(r))
    held.push_back(std::to_string(s));
  return (held.size() == 1 ? "stage " : "stages ") + llvm::join(held, ", ");
}

/// How many of `rank`'s actions are of `kind` (an R or an O: one per
/// recomputed or offloaded stage and microbatch).
int64_t countOnRank(const sched::ScheduleTable &table, int rank,
                    sched::Kind kind) {
  return llvm::count_if(table.ranks[rank], [&](const sched::Action &a) {
    return a.kind == kind;
  });
}

} // namespace

Error zbc::readProgram(zb::ProgramOp program, zb::PipelineOp pipeline,
                       Compiled &compiled) {
  if (std::optional<int64_t> budget = program.getActivationBudget())
    compiled.activationBudget = static_cast<double>(*budget);
  for (zb::RankOp rank : program.getBody().front().getOps<zb::RankOp>()) {
    compiled.peak.push_back(rank.getPeakBytesAttr().getInt());
    compiled.arena.push_back(rank.getArenaBytesAttr().getInt());
    compiled.hostPeak.push_back(
        rank.getHostPeakBytesAttr() ? rank.getHostPeakBytesAttr().getInt() : 0);
    compiled.hostArena.push_back(
        rank.getHostArenaBytesAttr() ? rank.getHostArenaBytesAttr().getInt()
                                     : 0);
  }
  compiled.ranks = static_cast<int>(compiled.peak.size());
  {
    FailureOr<std::vector<RankMemory>> memory = analyzeProgramMemory(
        program, pipeline, modelOfProgram(program, pipeline));
    if (failed(memory))
      return fail("the program's memory cannot be accounted (the error is "
                  "above)");
    SmallVector<zb::StageOp> stages(
        pipeline.getBody().front().getOps<zb::StageOp>());
    for (auto [r, mem] : llvm::enumerate(*memory)) {
      compiled.paramBytes.push_back(mem.params + mem.grads + mem.masters +
                                    mem.optimizerState);
      std::set<std::string> held; // a tied parameter once per rank
      int64_t elements = 0;
      for (auto [s, stage] : llvm::enumerate(stages))
        if (program.getRankOfStage(s) == static_cast<int64_t>(r))
          for (zb::ParamOp param :
               stage.getBody().front().getOps<zb::ParamOp>())
            if (held.insert(param.getName().str()).second)
              elements +=
                  cast<RankedTensorType>(param.getType()).getNumElements();
      compiled.paramElements.push_back(elements);
    }
  }
  if (DictionaryAttr levers = program.getLeversAttr())
    for (auto [key, field] :
         {std::pair{"recompute", &compiled.recompute},
          std::pair{"offload", &compiled.offload},
          std::pair{"backward", &compiled.backward}})
      if (auto value = levers.getAs<StringAttr>(key))
        *field = value.str();
  compiled.table = tableOfProgram(program);
  compiled.timeUnit = costUnitOf(pipeline);
  FailureOr<sched::Problem> problem = problemOfCosts(
      pipeline, pipeline.getNumStages() / std::max(compiled.ranks, 1),
      program.getMicrobatches(), std::nullopt,
      program.getReplicas().value_or(1), program.getZero().value_or(0));
  if (failed(problem))
    return fail("the program's costs do not fit it (the error is above)");
  compiled.problem = *problem;
  // The timeline of the prediction, for the picture: the program's order
  // with the costs it was planned with, which must give what zb-schedule
  // recorded.
  Expected<sched::SimResult> sim =
      sched::simulate(compiled.problem, compiled.table);
  if (!sim)
    return sim.takeError();
  compiled.predicted = std::move(*sim);
  // A program zb-schedule could not simulate has no prediction (the proof
  // refused it before this): the simulation above stands for it.
  Attribute makespan = program.getPredictedMakespanAttr();
  FloatAttr bubbleRate = program.getPredictedBubbleRateAttr();
  compiled.makespan =
      makespan ? costValueOf(makespan) : compiled.predicted.makespan;
  compiled.bubbleRate = bubbleRate ? bubbleRate.getValueAsDouble()
                                   : compiled.predicted.bubbleRate;
  if (std::abs(compiled.makespan - compiled.predicted.makespan) >
      1e-9 * std::max(1.0, compiled.makespan))
    return fail(formatv("zb-schedule predicted a makespan of {0} for the "
                        "program, whose order with its costs takes {1}",
                        compiled.makespan, compiled.predicted.makespan));
  return Error::success();
}

void zbc::writePredictedSVG(const Compiled &compiled, raw_ostream &os,
                            StringRef title) {
  sched::writeSVG(compiled.problem, compiled.table, compiled.predicted, os,
                  title.str(), compiled.timeUnit);
}

Error zbc::writeReport(const Request &request, const Compiled &c) {
  const CompileOptions &options = request.options;
  return writeFile(request.dir + "/report.json", [&](raw_ostream &os) {
    json::OStream j(os, 2);
    j.object([&] {
      j.attribute("model", c.model);
      j.attribute("schedule", options.schedule);
      if (request.scheduleFile) {
        j.attribute("schedule_file", request.scheduleFile->path);
        j.attribute("schedule_format", request.scheduleFile->formatName());
      }
      if (std::string plugin = schedulePluginOf(options.schedule);
          !plugin.empty())
        j.attribute("schedule_plugin", plugin);
      j.attribute("ranks", c.ranks);
      j.attribute("stages", c.stages);
      j.attribute("microbatches", options.microbatches);
      j.attribute("optimizer", optimizerName(options.optimizer));
      j.attribute("predicted_makespan", c.makespan);
      // The busiest rank's rate (zb.program's), and against the whole
      // pipeline's time with each rank's share (Simulator.h).
      j.attribute("predicted_bubble_rate", c.bubbleRate);
      j.attribute("predicted_pipeline_bubble_rate",
                  c.predicted.pipelineBubbleRate);
      j.attributeArray("predicted_idle_share", [&] {
        for (double share : c.predicted.idleShare)
          j.value(share);
      });
      if (options.memoryLimit > 0)
        j.attribute("memory_limit_bytes", options.memoryLimit);
      if (c.activationBudget)
        j.attribute("activation_budget_bytes",
                    static_cast<int64_t>(*c.activationBudget));
      j.attributeObject("levers", [&] {
        j.attribute("recompute", c.recompute);
        j.attribute("offload", c.offload);
        j.attribute("backward", c.backward);
      });
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
            j.attribute("parameters", c.paramElements[r]);
            j.attribute("parameter_bytes", c.paramBytes[r]);
            if (c.hostArena[r]) {
              j.attribute("host_peak_bytes", c.hostPeak[r]);
              j.attribute("host_arena_bytes", c.hostArena[r]);
            }
            // The levers, where the schedule pulls them: (stage,
            // microbatch) pairs rebuilt by an R, and moved off and back.
            if (c.table.hasRecompute())
              j.attribute("recomputed",
                          countOnRank(c.table, r, sched::Kind::R));
            if (c.table.hasOffload())
              j.attribute("offloaded", countOnRank(c.table, r, sched::Kind::O));
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

void zbc::printBanner(const Request &request, const Compiled &compiled) {
  const CompileOptions &options = request.options;
  outs() << formatv("zbc: compiled {0} for {1} ranks under {2} ({3} "
                    "microbatches, {4})\n",
                    compiled.model, compiled.ranks,
                    compiled.scheduleSource.empty()
                        ? options.schedule
                        : "the schedule of " + compiled.scheduleSource,
                    options.microbatches, optimizerName(options.optimizer));
  if (request.options.replicas > 1)
    outs() << formatv("  {0} data-parallel replicas: {1} processes, each "
                      "replica {2} of the step's {3} microbatches\n",
                      request.options.replicas, request.options.replicas * compiled.ranks,
                      options.microbatches,
                      request.options.replicas * options.microbatches);
  // Note [Collectives in the simulator]: what the gradient sums take on
  // the busiest rank, and what of it the cool-down does not hide.
  double summing = 0;
  for (double seconds : compiled.predicted.communication)
    summing = std::max(summing, seconds);
  if (summing > 0)
    outs() << formatv("  gradient all-reduces: {0:G4} on the busiest rank, "
                      "{1:G4} of it exposed ({2:F4} of the predicted step, "
                      "in {3})\n",
                      summing, compiled.predicted.exposedCommunication,
                      compiled.predicted.exposedCommunication /
                          compiled.makespan,
                      compiled.timeUnit);
  std::string shares;
  for (double share : compiled.predicted.idleShare)
    shares += formatv(" {0:F2}", share).str();
  outs() << formatv("  predicted bubble rate {0:F4} on the busiest rank, "
                    "{1:F4} of the pipeline's time (idle share per rank{2})\n",
                    compiled.bubbleRate,
                    compiled.predicted.pipelineBubbleRate, shares);
  if (compiled.activationBudget && options.memoryLimit > 0) {
    // A budget that did not bind is the whole limit (Note [Rank budget]):
    // say so rather than let it read as what the order keeps.
    auto budget = static_cast<int64_t>(*compiled.activationBudget);
    outs() << formatv("  memory limit {0} bytes per rank, the largest arena "
                      "{1}: {2}\n",
                      options.memoryLimit,
                      *llvm::max_element(compiled.arena),
                      budget >= options.memoryLimit
                          ? std::string("the order fits with the whole limit "
                                        "as its activation budget")
                          : formatv("the schedule keeps at most {0} bytes of "
                                    "activations", budget)
                                .str());
  } else if (options.memoryLimit > 0) {
    outs() << formatv("  memory limit {0} bytes per rank, the largest arena "
                      "{1}: the order at the schedule's own activation budget "
                      "fits\n",
                      options.memoryLimit, *llvm::max_element(compiled.arena));
  } else if (compiled.activationBudget) {
    outs() << formatv("  activation budget {0} bytes per rank\n",
                      static_cast<int64_t>(*compiled.activationBudget));
  }
  if (compiled.recompute != "none" || compiled.offload != "none" ||
      compiled.backward != "stored")
    outs() << formatv("  levers: recompute {0}, offload {1}, the backward "
                      "{2}\n",
                      compiled.recompute, compiled.offload,
                      compiled.backward == "checkpointed"
                          ? "checkpointed (F keeps only its checkpoints; "
                            "each backward rebuilds the rest)"
                          : "stored");
  // What the levers do on a rank: microbatches recomputed, and offloaded
  // with the host memory they take.
  auto levers = [&](int r) {
    int64_t rebuilt = countOnRank(compiled.table, r, sched::Kind::R),
            moved = countOnRank(compiled.table, r, sched::Kind::O);
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
  // Note [Master weights], Note [Sharded optimizer]: what a parameter
  // costs a rank beside its activations.
  std::string perParameter;
  for (int r = 0; r < compiled.ranks; ++r)
    if (compiled.paramElements[r])
      perParameter += formatv("{0}{1:F2}", perParameter.empty() ? "" : ", ",
                              double(compiled.paramBytes[r]) /
                                  double(compiled.paramElements[r]))
                          .str();
  if (!perParameter.empty())
    outs() << formatv("  bytes per parameter on each rank [{0}]: weights, "
                      "gradients, f32 masters and {1} state{2}\n",
                      perParameter, optimizerName(options.optimizer),
                      options.zero > 1
                          ? formatv(", the optimizer sharded over {0} "
                                    "replicas, the gradients only in the "
                                    "step (4 from a stage's first W to its "
                                    "sum, then 4/{0} until the update)",
                                    options.replicas)
                                .str()
                      : options.zero > 0
                          ? formatv(", the optimizer sharded over {0} "
                                    "replicas",
                                    options.replicas)
                                .str()
                          : std::string());
  // Where each process runs, when that is more than "rank r is process r".
  if (request.options.replicas > 1 || !request.hosts.empty())
    for (auto [k, p] : llvm::enumerate(compiled.processes))
      outs() << formatv("  process {0}: rank {1} of replica {2}{3}\n", k,
                        p.rank, p.replica,
                        p.host.empty() ? std::string() : " on " + p.host);
  outs() << formatv("  passes {0:F2} s, code generation {1:F2} s, host "
                    "compiler {2:F2} s\n",
                    compiled.seconds.passes, compiled.seconds.codegen,
                    compiled.seconds.hostCompile);
  outs() << formatv("  code {0}/src/rank*.cpp, picture {0}/schedule.svg, "
                    "report {0}/report.json\n",
                    request.dir);
  if (!request.launches)
    outs() << formatv("  run: {0}/launch.sh --steps N\n", request.dir);
  outs().flush();
}
