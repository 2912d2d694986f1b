//===- Pipelines.h - zbc pass pipelines ---------------------------*- C++ -*-===//
//
// The pass sequences zbc runs, built in one place so that `zbc` and
// `zbc-opt --zb-backward` run the same code.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_PASSES_PIPELINES_H
#define ZBC_PASSES_PIPELINES_H

#include "zbc/Options/CompileOptions.h"
#include "zbc/Passes/PassOptionBinder.h"

#include "mlir/Pass/PassOptions.h"

#include <cstdint>
#include <string>

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

/// zb.pipeline (with or without its zb.program) -> a proven, planned
/// program: zb-stage-costs, zb-schedule (a pipeline that has its program
/// keeps it; recompute=checkpoint rewrites the stages first), zb-insert-p2p
/// (a program with transfers keeps them), zb-plan-memory.
void buildScheduleToProgramPipeline(mlir::OpPassManager &pm,
                                    const CompileOptions &options);

/// zb.model or zb.pipeline -> a proven, planned program: the backward
/// pipeline (models only; a pipeline passes through it; `options.stages`
/// cuts a model without zb.cut), then the above. What `zbc compile` runs
/// before code generation (and, with convert-zb-to-emitc after it,
/// codegen's zb-lower-to-cpp).
void buildLowerToProgramPipeline(mlir::OpPassManager &pm,
                                 const CompileOptions &options);

/// The options of the lowering pipelines (zbc-opt's
/// `--zb-lower-to-program=...`, codegen's `--zb-lower-to-cpp=...`): every
/// compile option, bound once (CompileOptions::bind).
struct LowerToProgramCLOptions
    : public mlir::PassPipelineOptions<LowerToProgramCLOptions> {
  LowerToProgramCLOptions() { values.bind(binder); }
  /// The options as parsed.
  CompileOptions options() const;

private:
  mutable CompileOptions values;
  mutable PassOptionBinder<LowerToProgramCLOptions> binder{*this, AllGroups};
};

/// Registers `--zb-backward` (with a `stages` option) and
/// `--zb-lower-to-program` for zbc-opt.
void registerZBPipelines();

} // namespace zbc

#endif // ZBC_PASSES_PIPELINES_H
