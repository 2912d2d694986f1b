//===- Interpreter.h - reference interpreter of zb IR -----------*- C++ -*-===//
//
// The numerical oracle of zbc: executes a `zb.model` (forward and loss), a
// single `zb.phase`, or one training step of a `zb.pipeline` (every
// microbatch through F, then the backward phases, stage by stage) with plain
// loops in float or double. Every later test compares against it: the
// pipeline's gradients against finite differences of the model, a split
// B/W pipeline against the fused one, generated code against the pipeline.
//
// Tensors are exchanged by phase key (PhaseKeys.h): "input.x", "label.y",
// "param.w", "grad.w", "in.0", ... Errors in what a caller feeds (a missing
// key, a wrong shape, an embedding index or class label out of range) are
// reported as MLIR errors at the location of the op that hit them, prefixed
// with "stage K, microbatch M: " inside a pipeline step; the functions then
// return failure. The IR is verified first, so invalid IR is reported by the
// verifier and never executed.
//
// Only ops are forward-declared here; callers that pass ops include
// zbc/Dialect/ZB/ZBOps.h themselves.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_INTERPRETER_INTERPRETER_H
#define ZBC_INTERPRETER_INTERPRETER_H

#include "zbc/Interpreter/Tensor.h"
#include "zbc/Support/LLVM.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace zbc::zb {
class ModelOp;
class PhaseOp;
class PipelineOp;
} // namespace zbc::zb

namespace zbc::interp {

/// Tensors by phase key.
using TensorMap = std::map<std::string, Tensor>;

//===----------------------------------------------------------------------===//
// Execution
//===----------------------------------------------------------------------===//
//
// In all three, float feeds of the other precision are converted to
// `precision` when bound, and every result is in `precision`. At F32, a
// value of IR type bf16 is rounded to bf16 when bound and when computed
// (Note [bf16], Executor.cpp); the caller's tensors are not: a bf16
// parameter's entry in `params` is its fp32 master weight, and grad.* sums
// stay fp32.

/// Runs the forward of a whole model (zb.cut is the identity) on one
/// microbatch. `feeds` holds "input.NAME", "label.NAME" and "param.NAME" for
/// every leaf of the model; returns the 0-D loss.
FailureOr<Tensor> runModel(zb::ModelOp model, const TensorMap &feeds,
                           Precision precision);

/// Runs one phase: binds each block argument to env[its key], executes the
/// body and stores each yielded value at its key. `grad.*` keys are
/// accumulated (env[key] += value, created if absent), because a parameter's
/// gradient is the sum over microbatches; every other key is overwritten.
LogicalResult runPhase(zb::PhaseOp phase, TensorMap &env, Precision precision);

struct StepResult {
  /// The loss of each microbatch, in order (its zb.cross_entropy's mean).
  std::vector<double> losses;
  /// Each microbatch's weight in the step's loss, in order (Note [Loss over
  /// real tokens] in zbc/contracts/LossWeights.h): 1 unless labels are
  /// ignored.
  std::vector<double> lossWeights;
  /// "grad.NAME" for every parameter any stage declares: the gradient of
  /// the step's loss, the mean over its microbatches, so each microbatch's
  /// gradient counts 1/m (the sum, scaled once by 1/m; zero for a parameter
  /// whose gradient no phase yields).
  TensorMap grads;

  /// The step's loss: the weighted mean of the microbatches' losses, the
  /// mean over the step's counted labels.
  double meanLoss() const {
    double sum = 0;
    for (size_t j = 0; j < losses.size(); ++j)
      sum += losses[j] * (j < lossWeights.size() ? lossWeights[j] : 1.0);
    return losses.empty() ? 0.0 : sum / static_cast<double>(losses.size());
  }
};

/// One training step, in the simplest valid order: for each microbatch, F of
/// stages 0..S-1 (stage k's out.i is stage k+1's in.i), then the backward
/// phases (BW, or B then W) of stages S-1..0 (stage k's d_in.i is stage
/// k-1's d_out.i). Each (stage, microbatch) has its own environment, seeded
/// with the inputs, labels and parameters the stage declares. `microbatches`
/// hold input.* and label.* keys, `params` param.* keys.
FailureOr<StepResult>
runPipelineStep(zb::PipelineOp pipeline,
                const std::vector<TensorMap> &microbatches,
                const TensorMap &params, Precision precision);

//===----------------------------------------------------------------------===//
// Deterministic data
//===----------------------------------------------------------------------===//
//
// Values depend only on (seed, key) and the declared type, never on the
// order of declarations: the same seed gives a zb.model and the zb.pipeline
// made from it identical parameters and feeds, and F32 values are the F64
// values rounded. The generator is std::mt19937_64 with hand-written
// normal and uniform transforms, so results do not depend on the C++
// standard library either.

/// "param.NAME" for every zb.param: zeros, ones, normal(s) = N(0, s^2) or
/// uniform(a) = U(-a, a), as declared. For a pipeline, the params declared in
/// its stages.
TensorMap initParams(zb::ModelOp model, uint64_t seed, Precision precision);
TensorMap initParams(zb::PipelineOp pipeline, uint64_t seed,
                     Precision precision);

/// "input.NAME" and "label.NAME" for one microbatch. Float tensors are
/// N(0, 1). Integer tensors are uniform in [0, bound): bound is the vocab of
/// every zb.embedding (or zb.embedding_grad) that reads the tensor as
/// indices and the class count of every zb.cross_entropy (or its grad) that
/// reads it as labels, followed through zb.cut and phase keys; the smallest
/// if several; 2 if none.
TensorMap randomFeeds(zb::ModelOp model, uint64_t seed, Precision precision);
TensorMap randomFeeds(zb::PipelineOp pipeline, uint64_t seed,
                      Precision precision);
/// `count` microbatches; microbatch m is randomFeeds(pipeline, seed + m).
std::vector<TensorMap> randomMicrobatches(zb::PipelineOp pipeline,
                                          int64_t count, uint64_t seed,
                                          Precision precision);

} // namespace zbc::interp

#endif // ZBC_INTERPRETER_INTERPRETER_H
