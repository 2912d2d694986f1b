//===- Pipelines.cpp - zbc pass pipelines ---------------------------------===//
//
// Each pass sits where it does for a reason, noted beside it.
//
//===----------------------------------------------------------------------===//

#include "zbc/Passes/Pipelines.h"

#include "zbc/Passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

void zbc::buildBackwardPipeline(OpPassManager &pm,
                                const BackwardPipelineOptions &options) {
  // Stages first: autodiff differentiates stage by stage.
  ZBPartitionPassOptions partition;
  partition.stages = options.stages;
  pm.addPass(createZBPartitionPass(partition));
  // Each stage gets its forward (F) and fused backward (BW).
  pm.addPass(createZBAutodiffPass());
  // BW -> B + W last: it only regroups the backward ops autodiff made.
  pm.addPass(createZBSplitBackwardPass());
}

void zbc::buildScheduleToProgramPipeline(OpPassManager &pm,
                                         const LowerToProgramOptions &options) {
  // Checkpoints before the schedule: it plans with the stash and backward
  // costs they leave.
  bool checkpoint = options.recompute == kCheckpointBackward;
  if (checkpoint)
    pm.addPass(createZBCheckpointBackwardPass());
  // The order per rank, fitted to a memory limit where there is one.
  ZBSchedulePassOptions schedule;
  schedule.kind = options.schedule;
  schedule.microbatches = options.microbatches;
  schedule.virtualStages = options.virtualStages;
  schedule.optimizer = options.optimizer;
  schedule.costFile = options.costFile;
  schedule.recompute = checkpoint ? "none" : options.recompute;
  schedule.offload = options.offload;
  schedule.copyBandwidth = options.copyBandwidth;
  schedule.memoryLimit = options.memoryLimit;
  schedule.activationBudget = options.activationBudget;
  pm.addPass(createZBSchedulePass(schedule));
  // The transfers the order implies.
  pm.addPass(createZBInsertP2PPass());
  // Proves the program first: nothing unverified reaches code generation.
  pm.addPass(createZBPlanMemoryPass());
}

void zbc::buildLowerToProgramPipeline(OpPassManager &pm,
                                      const LowerToProgramOptions &options) {
  BackwardPipelineOptions backward;
  backward.stages = options.stages;
  buildBackwardPipeline(pm, backward);
  buildScheduleToProgramPipeline(pm, options);
}

zbc::LowerToProgramOptions zbc::LowerToProgramCLOptions::options() const {
  LowerToProgramOptions o;
  o.stages = stages;
  o.schedule = schedule;
  o.microbatches = microbatches;
  o.virtualStages = virtualStages;
  o.optimizer = optimizer;
  o.costFile = costFile;
  o.recompute = recompute;
  o.offload = offload;
  o.copyBandwidth = copyBandwidth;
  o.memoryLimit = memoryLimit;
  o.activationBudget = activationBudget;
  return o;
}

namespace {
struct BackwardPipelineCLOptions
    : public PassPipelineOptions<BackwardPipelineCLOptions> {
  Option<int64_t> stages{*this, "stages",
                         llvm::cl::desc("Stages for models without zb.cut "
                                        "(0: keep the model's cuts)"),
                         llvm::cl::init(0)};
};
} // namespace

void zbc::registerZBPipelines() {
  PassPipelineRegistration<BackwardPipelineCLOptions>(
      "zb-backward",
      "Partition, differentiate and split models into B and W phases",
      [](OpPassManager &pm, const BackwardPipelineCLOptions &cl) {
        BackwardPipelineOptions options;
        options.stages = cl.stages;
        buildBackwardPipeline(pm, options);
      });
  PassPipelineRegistration<LowerToProgramCLOptions>(
      "zb-lower-to-program",
      "zb.model or zb.pipeline -> a proven, planned zb.program, as zbc "
      "compile lowers it before code generation",
      [](OpPassManager &pm, const LowerToProgramCLOptions &cl) {
        buildLowerToProgramPipeline(pm, cl.options());
      });
}
