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
                                         const CompileOptions &options) {
  // The costs the order is planned with, where every step after reads
  // them (Note [Costs in the IR]).
  pm.addPass(createZBStageCostsPass(options));
  // The order per rank, its levers fitted to a memory limit where there is
  // one; checkpoints first where asked, as the order plans with the stash
  // and backward costs they leave.
  pm.addPass(createZBSchedulePass(options));
  // The transfers the order implies.
  pm.addPass(createZBInsertP2PPass());
  // The gradient reductions, after the transfers: each follows the last
  // compute writing its gradients, wherever the transfers moved it.
  pm.addPass(createZBInsertCollectivesPass());
  // Proves the program first: nothing unverified reaches code generation.
  pm.addPass(createZBPlanMemoryPass());
}

void zbc::buildLowerToProgramPipeline(OpPassManager &pm,
                                      const CompileOptions &options) {
  BackwardPipelineOptions backward;
  backward.stages = options.stages;
  buildBackwardPipeline(pm, backward);
  buildScheduleToProgramPipeline(pm, options);
}

zbc::CompileOptions zbc::LowerToProgramCLOptions::options() const {
  binder.read();
  return values;
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
