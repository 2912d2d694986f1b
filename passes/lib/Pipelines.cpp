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
}
