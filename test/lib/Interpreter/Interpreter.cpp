//===- Interpreter.cpp - runs zb models, phases and pipeline steps --------===//
//
// Implements the execution entry points of Interpreter.h on top of the
// Executor: which tensors a model, a phase or a stage starts from, where
// yielded values go (and that `grad.*` keys accumulate), and in what order a
// pipeline step runs its phases. The order is the sequential one a schedule
// must be equivalent to, so a schedule's result can be checked against it.
//
//===----------------------------------------------------------------------===//

#include "zbc/Interpreter/Interpreter.h"

#include "Executor.h"
#include "IRHelpers.h"

#include "zbc/Dialect/ZB/CountedLabels.h"
#include "zbc/Dialect/ZB/PhaseKeys.h"
#include "zbc/Dialect/ZB/ZBOps.h"
#include "zbc/Interpreter/Kernels.h"
#include "zbc/contracts/LossWeights.h"

#include "mlir/IR/Verifier.h"

using namespace mlir;

namespace zbc::interp {
using detail::Executor;

FailureOr<Tensor> runModel(zb::ModelOp model, const TensorMap &feeds,
                           Precision precision) {
  // Executing unverified IR could index out of bounds; verified IR cannot.
  if (failed(mlir::verify(model)))
    return failure();
  Executor ex(precision, "");
  for (Operation &op : model.getBody().front()) {
    if (auto loss = dyn_cast<zb::LossOp>(op)) {
      if (const Tensor *value = ex.lookup(loss.getLoss()))
        return *value;
      return ex.error(&op) << "reads a value the interpreter has not computed";
    }
    std::optional<std::string> key = zb::getLeafKey(&op);
    if (!key) {
      if (failed(ex.execute(&op)))
        return failure();
      continue;
    }
    auto feed = feeds.find(*key);
    if (feed == feeds.end())
      return ex.error(&op) << "has no feed '" << *key << "'";
    if (failed(ex.bind(&op, op.getResult(0), feed->second,
                       "feed '" + *key + "'")))
      return failure();
  }
  return model.emitOpError("has no 'zb.loss'");
}

/// True for "grad.*" keys, whose values are sums over microbatches.
static bool isGradKey(StringRef key) {
  std::optional<zb::PhaseKey> parsed = zb::PhaseKey::parse(key);
  return parsed && parsed->kind == zb::KeyKind::Grad;
}

/// Why `value` cannot be added to the accumulator `into[key]`, phrased to
/// follow "'zb.yield' op "; empty if it can (or there is none yet).
static std::string accumulateMismatch(const TensorMap &into,
                                      const std::string &key,
                                      const Tensor &value) {
  if (!value.isFloat())
    return "yields integers under '" + key + "', which sums floats";
  auto it = into.find(key);
  if (it == into.end())
    return "";
  if (!it->second.isFloat())
    return "yields under '" + key + "', which already holds integers";
  if (it->second.shape() != value.shape())
    return "yields a tensor of shape " + formatShape(value.shape()) +
           " under '" + key + "', which already holds one of shape " +
           formatShape(it->second.shape());
  return "";
}

/// into[key] += value (in `precision`), or into[key] = value if absent. The
/// caller has checked accumulateMismatch.
static void accumulate(TensorMap &into, const std::string &key,
                       const Tensor &value, Precision precision) {
  auto it = into.find(key);
  if (it == into.end())
    into[key] = value.cast(precision);
  else
    it->second =
        kernels::add(it->second.cast(precision), value.cast(precision));
}

/// runPhase with every error prefixed by `context`; the IR is verified.
static LogicalResult runVerifiedPhase(zb::PhaseOp phase, TensorMap &env,
                                      Precision precision, std::string context,
                                      double lossWeight = 1.0) {
  Executor ex(precision, std::move(context), lossWeight);
  StringRef kind = zb::stringifyComputeKind(phase.getKind());
  for (auto [arg, key] : llvm::zip(phase.getBodyBlock().getArguments(),
                                   phase.getArgKeyList())) {
    auto it = env.find(key.str());
    if (it == env.end())
      return ex.error(phase) << kind << " reads '" << key
                             << "', which the environment does not hold";
    if (failed(ex.bind(phase, arg, it->second,
                       kind + " key '" + key + "'")))
      return failure();
  }
  for (Operation &op : phase.getBodyBlock().without_terminator())
    if (failed(ex.execute(&op)))
      return failure();

  // Check every yield before storing any, so that a failed phase leaves the
  // environment as it found it.
  zb::YieldOp yield = phase.getYield();
  for (auto [key, value] : llvm::zip(yield.getKeyList(), yield.getValues())) {
    const Tensor *tensor = ex.lookup(value);
    if (!tensor)
      return ex.error(yield) << "yields a value the interpreter has not "
                                "computed";
    if (isGradKey(key)) {
      std::string mismatch = accumulateMismatch(env, key.str(), *tensor);
      if (!mismatch.empty())
        return ex.error(yield) << mismatch;
    }
  }
  for (auto [key, value] : llvm::zip(yield.getKeyList(), yield.getValues())) {
    const Tensor &tensor = *ex.lookup(value);
    if (isGradKey(key))
      accumulate(env, key.str(), tensor, precision);
    else
      env[key.str()] = tensor;
  }
  return success();
}

LogicalResult runPhase(zb::PhaseOp phase, TensorMap &env,
                       Precision precision) {
  if (failed(mlir::verify(phase)))
    return failure();
  return runVerifiedPhase(phase, env, precision, "");
}

//===----------------------------------------------------------------------===//
// Pipeline step
//===----------------------------------------------------------------------===//

/// Puts the inputs, labels and parameters `stage` declares into `env`.
static LogicalResult seedStage(zb::StageOp stage, const TensorMap &microbatch,
                               const TensorMap &params, TensorMap &env,
                               const std::string &context) {
  for (Operation &op : stage.getBody().front()) {
    std::optional<std::string> key = zb::getLeafKey(&op);
    if (!key)
      continue;
    const TensorMap &source = isa<zb::ParamOp>(op) ? params : microbatch;
    auto it = source.find(*key);
    if (it == source.end())
      return mlir::emitError(op.getLoc())
             << context << "'" << op.getName() << "' op has no feed '" << *key
             << "'";
    env[*key] = it->second;
  }
  return success();
}

/// Copies every `fromKind` key of `from` into `to` under `toPrefix` and the
/// same index: out.i -> in.i downstream, d_in.i -> d_out.i upstream.
static void passAlong(const TensorMap &from, zb::KeyKind fromKind,
                      TensorMap &to, StringRef toPrefix) {
  for (const auto &[key, tensor] : from) {
    std::optional<zb::PhaseKey> parsed = zb::PhaseKey::parse(key);
    if (parsed && parsed->kind == fromKind)
      to[(toPrefix + "." + parsed->suffix).str()] = tensor;
  }
}

/// The weight of each microbatch in the step's loss (Note [Loss over real
/// tokens]): from the labels its loss counts, or all 1.
static FailureOr<std::vector<double>>
lossWeightsOf(zb::PipelineOp pipeline,
              const std::vector<TensorMap> &microbatches) {
  std::vector<double> ones(microbatches.size(), 1.0);
  std::optional<zb::CountedLabels> counted = zb::countedLabelsOf(pipeline);
  if (!counted)
    return ones;
  std::vector<int64_t> counts;
  for (const TensorMap &feeds : microbatches) {
    auto labels = feeds.find(counted->key);
    if (labels == feeds.end())
      return ones; // the stage's own check names the missing feed
    int64_t n = 0;
    for (int64_t i = 0; i < labels->second.numElements(); ++i)
      n += labels->second.getInt(i) != counted->ignoreIndex;
    counts.push_back(n);
  }
  std::vector<double> weights = rt::lossWeights(counts);
  if (weights.empty())
    return mlir::emitError(pipeline.getLoc())
           << "every '" << counted->key << "' of the step is the ignore_index "
           << counted->ignoreIndex << ": the step has no loss to train on";
  return weights;
}

FailureOr<StepResult>
runPipelineStep(zb::PipelineOp pipeline,
                const std::vector<TensorMap> &microbatches,
                const TensorMap &params, Precision precision) {
  if (failed(mlir::verify(pipeline)))
    return failure();
  // The verifier guarantees stages 0..S-1 in order, each with F first.
  SmallVector<zb::StageOp> stages =
      llvm::to_vector(pipeline.getBody().front().getOps<zb::StageOp>());
  size_t numStages = stages.size();
  StepResult result;
  FailureOr<std::vector<double>> weights =
      lossWeightsOf(pipeline, microbatches);
  if (failed(weights))
    return failure();
  result.lossWeights = *weights;
  for (size_t m = 0; m < microbatches.size(); ++m) {
    auto context = [&](size_t k) {
      return "stage " + std::to_string(k) + ", microbatch " +
             std::to_string(m) + ": ";
    };
    std::vector<TensorMap> envs(numStages);
    for (size_t k = 0; k < numStages; ++k) {
      if (failed(seedStage(stages[k], microbatches[m], params, envs[k],
                           context(k))))
        return failure();
      if (k > 0)
        passAlong(envs[k - 1], zb::KeyKind::Out, envs[k], "in");
      if (failed(runVerifiedPhase(stages[k].getPhases().front(), envs[k],
                                  precision, context(k))))
        return failure();
    }
    auto loss = envs.back().find("loss");
    if (loss == envs.back().end())
      return mlir::emitError(stages.back().getLoc())
             << context(numStages - 1) << "'zb.stage' op yields no 'loss'";
    result.losses.push_back(loss->second.get(0));

    for (size_t k = numStages; k-- > 0;) {
      if (k + 1 < numStages)
        passAlong(envs[k + 1], zb::KeyKind::DIn, envs[k], "d_out");
      // getPhases() returns a vector by value: keep it alive for the loop
      // (drop_begin of a temporary dangles; ASan found it).
      SmallVector<zb::PhaseOp> phases = stages[k].getPhases();
      for (zb::PhaseOp phase : llvm::drop_begin(phases))
        if (failed(runVerifiedPhase(phase, envs[k], precision, context(k),
                                    (*weights)[m])))
          return failure();
      for (const auto &[key, tensor] : envs[k]) {
        if (!isGradKey(key))
          continue;
        std::string mismatch = accumulateMismatch(result.grads, key, tensor);
        if (!mismatch.empty())
          return mlir::emitError(stages[k].getLoc())
                 << context(k) << "'zb.stage' op " << mismatch;
        accumulate(result.grads, key, tensor, precision);
      }
    }
  }
  // The step's loss is the mean over its microbatches, so each
  // microbatch's gradient counts 1/m: the sum is scaled once, at the end
  // (Note [Mean over microbatches] in ZB.md; the runtime's optimizer applies
  // the same factor to the same sum).
  // In F32 the factor is a float, so that (the product of two floats being
  // exact in double) set() rounds to exactly what a float multiply gives.
  double scale = 1.0 / static_cast<double>(microbatches.size());
  if (precision == Precision::F32)
    scale = static_cast<float>(scale);
  for (auto &[key, grad] : result.grads)
    for (int64_t i = 0; i < grad.numElements(); ++i)
      grad.set(i, grad.get(i) * scale);
  // A declared parameter whose gradient no phase yields does not reach the
  // loss: its gradient is zero, and callers can rely on finding every one.
  for (zb::StageOp stage : stages)
    for (zb::ParamOp param : stage.getBody().front().getOps<zb::ParamOp>()) {
      std::string key = zb::keyOf(zb::KeyKind::Grad, param.getName());
      if (!result.grads.count(key))
        result.grads[key] =
            Tensor::zeros(detail::getShape(param.getType()), precision);
    }
  return result;
}

} // namespace zbc::interp
