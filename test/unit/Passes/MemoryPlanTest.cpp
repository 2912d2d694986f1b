//===- MemoryPlanTest.cpp - the static memory plan is sound ---------------===//
//
// planProgramMemory (MemoryPlan.h) on every registered schedule's program of
// the example MLP and GPT: no two buffers that are reserved at the same
// position of the rank's order share a byte, every buffer lies inside the
// arena, every buffer of Note [Program memory] is placed once, and the
// plan's peak is the verifier's. The runtime's ledger checks the same at
// run time (test/e2e); this finds a wrong plan without running anything.
//
//===----------------------------------------------------------------------===//

#include "zbc/Analysis/MemoryPlan.h"
#include "zbc/Analysis/ProgramTable.h"
#include "zbc/Dialect/ZB/ZBDialect.h"
#include "zbc/Options/CompileOptions.h"
#include "zbc/Passes/Passes.h"
#include "zbc/Passes/Pipelines.h"
#include "zbc/Schedule/Registry.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "gtest/gtest.h"

#include <algorithm>

using namespace mlir;
using namespace zbc;

namespace {

struct Case {
  const char *model;
  int stages;
};

/// The violations of the plan's invariants, one line each.
std::string problemsOf(const RankPlan &plan, const RankMemory &memory) {
  std::string out;
  std::vector<Placement> all = plan.persistent;
  all.insert(all.end(), plan.buffers.begin(), plan.buffers.end());
  for (const Placement &a : all)
    if (a.offset < 0 || a.offset % kArenaAlignment != 0 ||
        a.offset + a.bytes > plan.arenaBytes)
      out += a.key + " lies outside the arena or is misaligned\n";
  std::sort(all.begin(), all.end(), [](const Placement &a, const Placement &b) {
    return a.offset < b.offset;
  });
  for (size_t i = 0; i < all.size(); ++i)
    for (size_t j = i + 1; j < all.size() && all[j].offset < all[i].offset + all[i].bytes; ++j)
      if (all[i].from < all[j].until && all[j].from < all[i].until &&
          all[i].bytes > 0 && all[j].bytes > 0)
        out += all[i].key + " (stage " + std::to_string(all[i].stage) +
               " mb " + std::to_string(all[i].microbatch) + ") overlaps " +
               all[j].key + " (stage " + std::to_string(all[j].stage) +
               " mb " + std::to_string(all[j].microbatch) + ")\n";
  size_t buffers = std::count_if(
      plan.buffers.begin(), plan.buffers.end(),
      [](const Placement &p) { return p.key.rfind("scratch.", 0) != 0; });
  if (buffers != memory.buffers.size())
    out += "placed " + std::to_string(buffers) + " buffers of " +
           std::to_string(memory.buffers.size()) + "\n";
  if (plan.peakBytes != memory.peak)
    out += "peak differs from the verifier's\n";
  if (plan.arenaBytes < plan.peakBytes)
    out += "arena smaller than the peak\n";
  return out;
}

// Tests the plan of every registered schedule, with SGD and AdamW.
TEST(MemoryPlan, EveryScheduleIsOverlapFree) {
  MLIRContext context;
  context.loadDialect<zb::ZBDialect>();
  int checked = 0;
  double worst = 1.0;
  std::string worstName;
  for (Case c : {Case{"mlp.mlir", 2}, Case{"gpt.mlir", 4}}) {
    std::string path = std::string(ZBC_EXAMPLES_DIR) + "/" + c.model;
    for (const sched::ScheduleInfo &info : sched::registeredSchedules()) {
      int v = info.placement == sched::Placement::Linear ? 1 : 2;
      if (c.stages % v != 0)
        continue;
      int p = c.stages / v;
      for (int m : {p, 2 * p})
        for (Optimizer optimizer : {Optimizer::SGD, Optimizer::AdamW}) {
          OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(path, &context);
          ASSERT_TRUE(module) << path;
          PassManager pm(&context);
          buildBackwardPipeline(pm, {});
          CompileOptions schedule;
          schedule.schedule = info.name;
          schedule.microbatches = m;
          schedule.stagesPerRank = v;
          schedule.optimizer = optimizer;
          pm.addPass(createZBSchedulePass(schedule));
          pm.addPass(createZBInsertP2PPass());
          ASSERT_TRUE(succeeded(pm.run(*module))) << info.name;
          zb::ProgramOp program = *module->getOps<zb::ProgramOp>().begin();
          zb::PipelineOp pipeline = pipelineOfProgram(program);
          ProgramModel model = modelOfProgram(program, pipeline);
          FailureOr<std::vector<RankMemory>> memory =
              analyzeProgramMemory(program, pipeline, model);
          ASSERT_TRUE(succeeded(memory));
          std::vector<RankPlan> plans =
              planProgramMemory(program, pipeline, model, *memory);
          ASSERT_EQ(plans.size(), memory->size());
          for (size_t r = 0; r < plans.size(); ++r) {
            EXPECT_EQ(problemsOf(plans[r], (*memory)[r]), "")
                << c.model << " " << info.name << " m=" << m << " "
                << optimizerName(optimizer) << " rank " << r;
            double ratio =
                double(plans[r].arenaBytes) / double(plans[r].peakBytes);
            if (ratio > worst) {
              worst = ratio;
              worstName = std::string(c.model) + " " + info.name +
                          " m=" + std::to_string(m) + " " + optimizerName(optimizer) +
                          " rank " + std::to_string(r);
            }
          }
          ++checked;
        }
    }
  }
  EXPECT_GT(checked, 30);
  // The arena beside the peak, for the record (the e2e tests hold the
  // programs zbc compile writes to 1.1x).
  std::printf("worst arena / peak: %.3f (%s)\n", worst, worstName.c_str());
}

} // namespace
