//===- Pipelines.h - zbc pass pipelines ---------------------------*- C++ -*-===//
//
// The pass sequences zbc runs, built in one place so that `zbc` and
// `zbc-opt --zb-backward` run the same code.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_PASSES_PIPELINES_H
#define ZBC_PASSES_PIPELINES_H

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

/// The recompute mode that rebuilds inside the backward (Note [Checkpointed
/// backward] in CheckpointBackward.cpp) rather than by scheduled R ops.
inline constexpr const char *kCheckpointBackward = "checkpoint";

/// The lowering of a model to a proven, planned program: what `zbc
/// compile` runs before code generation (and, with convert-zb-to-emitc
/// after it, codegen's zb-lower-to-cpp). The options are zb-schedule's.
struct LowerToProgramOptions {
  int64_t stages = 0; // as BackwardPipelineOptions::stages
  std::string schedule = "1f1b";
  int64_t microbatches = 0;
  int64_t virtualStages = 1;
  std::string optimizer = "sgd";
  std::string costFile;
  /// zb-schedule's recompute (none, full, selective or auto), or
  /// kCheckpointBackward: zb-checkpoint-backward first, then no R ops.
  std::string recompute = "none";
  /// zb-schedule's offload (none, full or auto) and copy-bandwidth (bytes
  /// per unit of schedule time; 0: none given).
  std::string offload = "none";
  double copyBandwidth = 0;
  /// Note [Two memory limits]: a rank's whole memory (0: none), or the
  /// schedule's activation budget ("default", "none" or bytes).
  int64_t memoryLimit = 0;
  std::string activationBudget = "default";
};

/// zb.pipeline (with or without its zb.program) -> a proven, planned
/// program: zb-checkpoint-backward (recompute=checkpoint), zb-schedule (a
/// pipeline that has its program keeps it), zb-insert-p2p (a program with transfers keeps them), zb-plan-memory.
void buildScheduleToProgramPipeline(mlir::OpPassManager &pm,
                                    const LowerToProgramOptions &options);

/// zb.model or zb.pipeline -> a proven, planned program: the backward
/// pipeline (models only; a pipeline passes through it), then the above.
void buildLowerToProgramPipeline(mlir::OpPassManager &pm,
                                 const LowerToProgramOptions &options);

/// The command-line options of the lowering pipelines (zbc-opt's
/// `--zb-lower-to-program=...`, codegen's `--zb-lower-to-cpp=...`).
struct LowerToProgramCLOptions
    : public mlir::PassPipelineOptions<LowerToProgramCLOptions> {
  Option<int64_t> stages{*this, "stages",
                         llvm::cl::desc("Stages for models without zb.cut "
                                        "(0: keep the model's cuts)"),
                         llvm::cl::init(0)};
  Option<std::string> schedule{*this, "schedule",
                               llvm::cl::desc("Registered schedule name"),
                               llvm::cl::init("1f1b")};
  Option<int64_t> microbatches{*this, "microbatches",
                               llvm::cl::desc("Microbatches per step"),
                               llvm::cl::init(0)};
  Option<int64_t> virtualStages{*this, "virtual",
                                llvm::cl::desc("Stages per rank "
                                               "(interleaved)"),
                                llvm::cl::init(1)};
  Option<std::string> optimizer{*this, "optimizer",
                                llvm::cl::desc("sgd or adamw"),
                                llvm::cl::init("sgd")};
  Option<std::string> costFile{*this, "cost-file",
                               llvm::cl::desc("A JSON cost file"),
                               llvm::cl::init("")};
  Option<std::string> recompute{*this, "recompute",
                                llvm::cl::desc("none, full, selective or auto (R "
                                               "ops), or checkpoint"),
                                llvm::cl::init("none")};
  Option<std::string> offload{*this, "offload",
                              llvm::cl::desc("none, full or auto (zb.offload "
                                             "and zb.reload; needs "
                                             "copy-bandwidth)"),
                              llvm::cl::init("none")};
  Option<double> copyBandwidth{*this, "copy-bandwidth",
                               llvm::cl::desc("Bytes per unit of schedule "
                                              "time a stash copy moves"),
                               llvm::cl::init(0)};
  Option<int64_t> memoryLimit{*this, "memory-limit",
                              llvm::cl::desc("Bytes each rank may hold in "
                                             "all (0: none)"),
                              llvm::cl::init(0)};
  Option<std::string> activationBudget{
      *this, "activation-budget",
      llvm::cl::desc("The schedule's activations per rank: default, none "
                     "or bytes"),
      llvm::cl::init("default")};

  LowerToProgramOptions options() const;
};

/// Registers `--zb-backward` (with a `stages` option) and
/// `--zb-lower-to-program` for zbc-opt.
void registerZBPipelines();

} // namespace zbc

#endif // ZBC_PASSES_PIPELINES_H
