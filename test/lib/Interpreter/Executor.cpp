//===- Executor.cpp - evaluates the ops of one zb block -------------------===//
//
// Dispatches each zb tensor op to its kernel (Kernels.h) and checks every
// tensor that enters a block, and every result a kernel returns, against the
// IR type. The first check is the interpreter's contract with callers (feeds
// of the wrong shape are reported, not read out of bounds); the second keeps
// a kernel bug from flowing on silently. Every tensor becomes a value's
// through Executor::store, which applies Note [bf16] (see there).
//
//===----------------------------------------------------------------------===//

#include "Executor.h"

#include "IRHelpers.h"

#include "zbc/Dialect/ZB/ZBOps.h"
#include "zbc/Interpreter/Kernels.h"
#include "zbc/contracts/BFloat16.h"

#include "llvm/ADT/TypeSwitch.h"

#include <array>

using namespace mlir;

namespace zbc::interp::detail {

InFlightDiagnostic Executor::error(Operation *op) {
  return mlir::emitError(op->getLoc())
         << context << "'" << op->getName() << "' op ";
}

/// Checks `tensor` against `type`; reports at `where` what does not fit.
static LogicalResult checkType(Executor &ex, Operation *where,
                               const Tensor &tensor, Type type,
                               const llvm::Twine &what) {
  auto tensorType = dyn_cast<RankedTensorType>(type);
  if (!tensorType)
    return ex.error(where) << what << " is bound to a value of type " << type
                           << ", which is not a ranked tensor";
  bool wantFloat = isa<FloatType>(tensorType.getElementType());
  if (wantFloat != tensor.isFloat())
    return ex.error(where) << what << " holds "
                           << (tensor.isFloat() ? "floats" : "integers")
                           << ", expected " << type;
  if (llvm::ArrayRef<int64_t>(tensor.shape()) != tensorType.getShape())
    return ex.error(where) << what << " has shape "
                           << formatShape(tensor.shape()) << ", expected "
                           << type;
  return success();
}

/// True for a tensor type of element type bf16.
static bool isBFloat16Tensor(Type type) {
  auto tensorType = dyn_cast<RankedTensorType>(type);
  return tensorType && tensorType.getElementType().isBF16();
}

// Note [bf16] (zbc/contracts/BFloat16.h) holds here: every value whose IR
// element type is bf16 holds bf16 values. Values enter a block only through
// store: block arguments and leaves (params, inputs, received activations,
// saved keys) when bound, each op's computed result, and zb.cut's
// relabelled operands (already rounded; rounding is idempotent). So each op
// computes in fp32 on bf16 operands and rounds its result once, to nearest
// even, as the runtime's kernels do. zb.fill rounds its constant; integer
// results (and f32 ones) are left as they are. What the caller holds
// (feeds, a bf16 parameter's fp32 master weight, grad.* accumulators) is
// never rounded: bind rounds its copy.
//
// Only at F32, the runtime's precision, of which the interpreter is the
// oracle. At F64 (finite-difference gradient checks) bf16 computes exactly,
// unrounded: a bf16 model then equals its f32 twin, and rounding steps
// would swamp the differences those checks measure.
void Executor::store(Value value, Tensor tensor) {
  if (precision == Precision::F32 && tensor.isFloat() &&
      isBFloat16Tensor(value.getType())) {
    float *data = tensor.data<float>();
    for (int64_t i = 0; i < tensor.numElements(); ++i)
      data[i] = rt::roundToBFloat16(data[i]);
  }
  values[value] = std::move(tensor);
}

LogicalResult Executor::bind(Operation *where, Value value,
                             const Tensor &tensor, const llvm::Twine &what) {
  if (failed(checkType(*this, where, tensor, value.getType(), what)))
    return failure();
  store(value, tensor.cast(precision));
  return success();
}

const Tensor *Executor::lookup(Value value) const {
  auto it = values.find(value);
  return it == values.end() ? nullptr : &it->second;
}

LogicalResult Executor::execute(Operation *op) {
  for (Value operand : op->getOperands())
    if (!lookup(operand))
      return error(op) << "reads a value the interpreter has not computed";
  // A cut only relabels its operands as the next stage's values.
  if (auto cut = dyn_cast<zb::CutOp>(op)) {
    for (auto [in, out] : llvm::zip(cut.getInputs(), cut.getOutputs()))
      store(out, *lookup(in));
    return success();
  }
  // The one op of several results: the three gradients of attention.
  if (auto grad = dyn_cast<zb::AttentionGradOp>(op)) {
    kernels::AttentionGrads g = kernels::attentionGrad(
        *lookup(grad.getResultGrad()), *lookup(grad.getQ()),
        *lookup(grad.getK()), *lookup(grad.getV()),
        static_cast<int64_t>(grad.getHeads()),
        static_cast<int64_t>(grad.getKvHeads()),
        grad.getDocuments() ? lookup(grad.getDocuments()) : nullptr);
    for (auto [value, tensor] :
         llvm::zip(op->getResults(), std::array<Tensor *, 3>{&g.dq, &g.dk, &g.dv})) {
      if (failed(checkType(*this, op, *tensor, value.getType(),
                           "(interpreter bug) its computed result")))
        return failure();
      store(value, std::move(*tensor));
    }
    return success();
  }
  if (op->getNumResults() != 1)
    return error(op) << "cannot be interpreted";
  FailureOr<Tensor> result = compute(op);
  if (failed(result))
    return failure();
  if (failed(checkType(*this, op, *result, op->getResult(0).getType(),
                       "(interpreter bug) its computed result")))
    return failure();
  store(op->getResult(0), std::move(*result));
  return success();
}

/// zb.rope's or zb.rope_grad's attributes as the kernel takes them.
template <typename RopeLike> kernels::RopeParams ropeParams(RopeLike op) {
  kernels::RopeParams p;
  p.headDim = static_cast<int64_t>(op.getHeadDim());
  p.theta = op.getTheta().convertToDouble();
  if (op.getLlama3Factor()) {
    p.llama3Factor = op.getLlama3Factor()->convertToDouble();
    p.llama3Low = op.getLlama3LowFreqFactor()->convertToDouble();
    p.llama3High = op.getLlama3HighFreqFactor()->convertToDouble();
    p.llama3Original =
        static_cast<double>(*op.getLlama3OriginalMaxPositions());
  }
  return p;
}

FailureOr<Tensor> Executor::compute(Operation *op) {
  auto in = [&](Value value) -> const Tensor & { return *lookup(value); };
  // An attention op's document ids, or null (it has none).
  auto documentsOf = [&](auto attention) -> const Tensor * {
    Value documents = attention.getDocuments();
    return documents ? lookup(documents) : nullptr;
  };
  // Kernels that read indices or labels explain a bad one in `message`.
  std::string message;
  auto checked = [&](FailureOr<Tensor> result) -> FailureOr<Tensor> {
    if (failed(result))
      return error(op) << message;
    return result;
  };
  using FT = FailureOr<Tensor>;
  namespace k = kernels;
  return llvm::TypeSwitch<Operation *, FT>(op)
      // Model-level ops.
      .Case([&](zb::LinearOp o) -> FT {
        return k::linear(in(o.getInput()), in(o.getWeight()),
                         o.getWeightOutIn());
      })
      .Case([&](zb::MatmulOp o) -> FT {
        return k::matmul(in(o.getLhs()), in(o.getRhs()));
      })
      .Case([&](zb::BiasAddOp o) -> FT {
        return k::biasAdd(in(o.getInput()), in(o.getBias()));
      })
      .Case([&](zb::AddOp o) -> FT {
        return k::add(in(o.getLhs()), in(o.getRhs()));
      })
      .Case([&](zb::ReluOp o) -> FT { return k::relu(in(o.getInput())); })
      .Case([&](zb::TransposeOp o) -> FT {
        return k::transpose(in(o.getInput()));
      })
      .Case([&](zb::GeluOp o) -> FT { return k::gelu(in(o.getInput())); })
      .Case([&](zb::LayerNormOp o) -> FT {
        return k::layerNorm(in(o.getInput()), in(o.getGamma()),
                            in(o.getBeta()), o.getEpsilon().convertToDouble());
      })
      .Case([&](zb::RopeOp o) -> FT {
        return k::rope(in(o.getInput()), in(o.getPositions()), ropeParams(o));
      })
      .Case([&](zb::AttentionOp o) -> FT {
        return k::attention(in(o.getQ()), in(o.getK()), in(o.getV()),
                            static_cast<int64_t>(o.getHeads()),
                            static_cast<int64_t>(o.getKvHeads()),
                            documentsOf(o));
      })
      .Case([&](zb::SwiGluOp o) -> FT {
        return k::swiGlu(in(o.getGate()), in(o.getUp()));
      })
      .Case([&](zb::RmsNormOp o) -> FT {
        return k::rmsNorm(in(o.getInput()), in(o.getWeight()),
                          o.getEpsilon().convertToDouble());
      })
      .Case([&](zb::EmbeddingOp o) -> FT {
        return checked(
            k::embedding(in(o.getIndices()), in(o.getTable()), message));
      })
      .Case([&](zb::CausalAttentionOp o) -> FT {
        return k::causalAttention(in(o.getQkv()),
                                  static_cast<int64_t>(o.getHeads()),
                                  documentsOf(o));
      })
      .Case([&](zb::CrossEntropyOp o) -> FT {
        return checked(
            k::crossEntropy(in(o.getLogits()), in(o.getLabels()),
                            static_cast<int64_t>(o.getIgnoreIndex()), message));
      })
      // Backward ops.
      .Case([&](zb::LossSeedOp o) -> FT {
        return k::fill(getShape(o.getType()), precision, lossWeight);
      })
      .Case([&](zb::FillOp o) -> FT {
        return k::fill(getShape(o.getType()), precision,
                       o.getValue().convertToDouble());
      })
      .Case([&](zb::LinearGradInputOp o) -> FT {
        return k::linearGradInput(in(o.getResultGrad()), in(o.getWeight()),
                                  o.getWeightOutIn());
      })
      .Case([&](zb::LinearGradWeightOp o) -> FT {
        return k::linearGradWeight(in(o.getInput()), in(o.getResultGrad()),
                                   o.getWeightOutIn());
      })
      .Case([&](zb::MatmulGradLhsOp o) -> FT {
        return k::matmulGradLhs(in(o.getResultGrad()), in(o.getRhs()));
      })
      .Case([&](zb::MatmulGradRhsOp o) -> FT {
        return k::matmulGradRhs(in(o.getLhs()), in(o.getResultGrad()));
      })
      .Case([&](zb::BiasGradOp o) -> FT {
        return k::biasGrad(in(o.getResultGrad()));
      })
      .Case([&](zb::ReluGradOp o) -> FT {
        return k::reluGrad(in(o.getResultGrad()), in(o.getInput()));
      })
      .Case([&](zb::GeluGradOp o) -> FT {
        return k::geluGrad(in(o.getResultGrad()), in(o.getInput()));
      })
      .Case([&](zb::LayerNormGradInputOp o) -> FT {
        return k::layerNormGradInput(in(o.getResultGrad()), in(o.getInput()),
                                     in(o.getGamma()),
                                     o.getEpsilon().convertToDouble());
      })
      .Case([&](zb::LayerNormGradGammaOp o) -> FT {
        return k::layerNormGradGamma(in(o.getResultGrad()), in(o.getInput()),
                                     o.getEpsilon().convertToDouble());
      })
      .Case([&](zb::RopeGradOp o) -> FT {
        return k::rope(in(o.getResultGrad()), in(o.getPositions()),
                       ropeParams(o), /*inverse=*/true);
      })
      .Case([&](zb::SwiGluGradGateOp o) -> FT {
        return k::swiGluGradGate(in(o.getResultGrad()), in(o.getGate()),
                                 in(o.getUp()));
      })
      .Case([&](zb::SwiGluGradUpOp o) -> FT {
        return k::swiGluGradUp(in(o.getResultGrad()), in(o.getGate()));
      })
      .Case([&](zb::RmsNormGradInputOp o) -> FT {
        return k::rmsNormGradInput(in(o.getResultGrad()), in(o.getInput()),
                                   in(o.getWeight()),
                                   o.getEpsilon().convertToDouble());
      })
      .Case([&](zb::RmsNormGradWeightOp o) -> FT {
        return k::rmsNormGradWeight(in(o.getResultGrad()), in(o.getInput()),
                                    o.getEpsilon().convertToDouble());
      })
      .Case([&](zb::EmbeddingGradOp o) -> FT {
        return checked(k::embeddingGrad(in(o.getIndices()),
                                        in(o.getResultGrad()),
                                        static_cast<int64_t>(o.getVocab()),
                                        message));
      })
      .Case([&](zb::CausalAttentionGradOp o) -> FT {
        return k::causalAttentionGrad(in(o.getResultGrad()), in(o.getQkv()),
                                      static_cast<int64_t>(o.getHeads()),
                                      documentsOf(o));
      })
      .Case([&](zb::CrossEntropyGradOp o) -> FT {
        return checked(k::crossEntropyGrad(in(o.getLogits()),
                                           in(o.getLabels()),
                                           in(o.getLossGrad()),
                                           static_cast<int64_t>(o.getIgnoreIndex()), message));
      })
      .Case([&](zb::VocabStatsOp o) -> FT {
        return checked(k::vocabStats(
            in(o.getLogits()), in(o.getLabels()),
            static_cast<int64_t>(o.getFirst()),
            static_cast<int64_t>(o.getVocab()),
            static_cast<int64_t>(o.getIgnoreIndex()), message));
      })
      .Case([&](zb::VocabLossOp o) -> FT {
        return checked(k::vocabLoss(in(o.getStats()), in(o.getLabels()),
                                    static_cast<int64_t>(o.getVocab()),
                                    static_cast<int64_t>(o.getIgnoreIndex()),
                                    message));
      })
      .Case([&](zb::VocabGradOp o) -> FT {
        return checked(k::vocabGrad(
            in(o.getLogits()), in(o.getLabels()), in(o.getStats()),
            in(o.getLossGrad()), static_cast<int64_t>(o.getFirst()),
            static_cast<int64_t>(o.getVocab()),
            static_cast<int64_t>(o.getIgnoreIndex()), message));
      })
      .Default([&](Operation *) -> FT {
        return error(op) << "cannot be interpreted";
      });
}

} // namespace zbc::interp::detail
