//===- Pipelines.h - zbc pass pipelines ---------------------------*- C++ -*-===//
//
// The pass sequences zbc runs, built in one place so that `zbc` and
// `zbc-opt --zb-backward` run the same code.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_PASSES_PIPELINES_H
#define ZBC_PASSES_PIPELINES_H

#include <cstdint>

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace zbc {

struct BackwardPipelineOptions {
  /// Stages to cut a model without zb.cut ops into (0: keep the model's).
  int64_t stages = 0;
};

/// zb.model -> zb.pipeline with F, B and W phases:
/// zb-partition, zb-autodiff, zb-split-backward.
void buildBackwardPipeline(mlir::OpPassManager &pm,
                           const BackwardPipelineOptions &options);

/// Registers `--zb-backward` (with a `stages` option) for zbc-opt.
void registerZBPipelines();

} // namespace zbc

#endif // ZBC_PASSES_PIPELINES_H
