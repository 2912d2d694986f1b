//===- ZBShapes.cpp - shape rules of the zb tensor ops --------------------===//
//
// One `inferResultType` per tensor op (model-level and backward): the result
// type that follows from the operand types, or a diagnostic saying which
// dimension or element type is wrong. The backward ops' verifiers live here
// too, beside the rules they check. The op verifiers (ZBOps.cpp) check parsed IR against
// these rules and the embedded DSL (dsl/) calls them to build ops, so a shape
// error reads the same from a .mlir file and from a C++ model.
//
//===----------------------------------------------------------------------===//

#include "zbc/Dialect/ZB/ZBOps.h"

#include "VerifyUtils.h"

using namespace mlir;
using namespace zbc::zb;

namespace {
using EmitErrorFn = llvm::function_ref<InFlightDiagnostic()>;

/// Checks that two operands share an element type.
LogicalResult checkSameElementType(RankedTensorType a, StringRef aName,
                                   RankedTensorType b, StringRef bName,
                                   EmitErrorFn emitError) {
  if (a.getElementType() == b.getElementType())
    return success();
  return emitError() << "element types differ: " << aName << " has "
                     << a.getElementType() << ", " << bName << " has "
                     << b.getElementType();
}

/// Checks that `vec` is 1-D and as long as the last dimension of `input`
/// (a bias, or a layernorm gain/offset).
LogicalResult checkLastDimVector(RankedTensorType input, RankedTensorType vec,
                                 StringRef vecName, EmitErrorFn emitError) {
  if (input.getRank() < 1)
    return emitError() << "input must have at least one dimension, got "
                       << input;
  if (vec.getRank() != 1)
    return emitError() << vecName << " must be 1-D, got " << vec;
  if (vec.getDimSize(0) != input.getShape().back())
    return emitError() << vecName << " has " << vec.getDimSize(0)
                       << " elements but the input's last dimension is "
                       << input.getShape().back();
  return checkSameElementType(input, "input", vec, vecName, emitError);
}

/// Checks an attention op's optional document ids against its `[B, S, ...]`
/// input: `[B, S]` (Note [Document masks]).
LogicalResult checkDocuments(Value documents, RankedTensorType input,
                             EmitErrorFn emitError) {
  if (!documents)
    return success();
  auto type = cast<RankedTensorType>(documents.getType());
  if (type.getRank() == 2 && input.getRank() == 3 &&
      type.getShape() == input.getShape().take_front(2))
    return success();
  return emitError() << "documents must be [batch, seq] = ["
                     << input.getDimSize(0) << ", " << input.getDimSize(1)
                     << "], got " << type;
}
} // namespace

FailureOr<RankedTensorType>
LinearOp::inferResultType(RankedTensorType input, RankedTensorType weight,
                          bool weightOutIn, EmitErrorFn emitError) {
  StringRef layout = weightOutIn ? "[out, in]" : "[in, out]";
  if (weight.getRank() != 2)
    return emitError() << "weight must be 2-D " << layout << ", got " << weight;
  if (input.getRank() < 1)
    return emitError() << "input must have at least one dimension, got "
                       << input;
  int64_t in = weight.getDimSize(weightOutIn ? 1 : 0);
  int64_t out = weight.getDimSize(weightOutIn ? 0 : 1);
  if (input.getShape().back() != in)
    return emitError() << "input has " << input.getShape().back()
                       << " features (last dimension) but the weight "
                       << layout << " takes " << in;
  if (failed(checkSameElementType(input, "input", weight, "weight", emitError)))
    return failure();
  SmallVector<int64_t> shape(input.getShape());
  shape.back() = out;
  return RankedTensorType::get(shape, input.getElementType());
}

FailureOr<RankedTensorType>
TransposeOp::inferResultType(RankedTensorType input, EmitErrorFn emitError) {
  if (input.getRank() != 2)
    return emitError() << "input must be 2-D, got " << input;
  return RankedTensorType::get({input.getDimSize(1), input.getDimSize(0)},
                               input.getElementType());
}

FailureOr<RankedTensorType> MatmulOp::inferResultType(RankedTensorType lhs,
                                                      RankedTensorType rhs,
                                                      EmitErrorFn emitError) {
  if (lhs.getRank() < 2 || lhs.getRank() != rhs.getRank())
    return emitError() << "operands must have the same rank, at least 2, got "
                       << lhs << " and " << rhs;
  int64_t rank = lhs.getRank();
  if (lhs.getShape().drop_back(2) != rhs.getShape().drop_back(2))
    return emitError() << "batch dimensions differ: " << lhs << " and " << rhs;
  if (lhs.getDimSize(rank - 1) != rhs.getDimSize(rank - 2))
    return emitError() << "contraction dimensions differ: lhs has "
                       << lhs.getDimSize(rank - 1) << " columns, rhs has "
                       << rhs.getDimSize(rank - 2) << " rows";
  if (failed(checkSameElementType(lhs, "lhs", rhs, "rhs", emitError)))
    return failure();
  SmallVector<int64_t> shape(lhs.getShape());
  shape.back() = rhs.getDimSize(rank - 1);
  return RankedTensorType::get(shape, lhs.getElementType());
}

FailureOr<RankedTensorType> BiasAddOp::inferResultType(RankedTensorType input,
                                                       RankedTensorType bias,
                                                       EmitErrorFn emitError) {
  if (failed(checkLastDimVector(input, bias, "bias", emitError)))
    return failure();
  return input;
}

FailureOr<RankedTensorType>
EmbeddingOp::inferResultType(RankedTensorType indices, RankedTensorType table,
                             EmitErrorFn emitError) {
  if (table.getRank() != 2)
    return emitError() << "table must be 2-D [vocab, hidden], got " << table;
  SmallVector<int64_t> shape(indices.getShape());
  shape.push_back(table.getDimSize(1));
  return RankedTensorType::get(shape, table.getElementType());
}

FailureOr<RankedTensorType>
CrossEntropyOp::inferResultType(RankedTensorType logits,
                                RankedTensorType labels,
                                EmitErrorFn emitError) {
  if (logits.getRank() != labels.getRank() + 1)
    return emitError() << "logits must have one dimension (classes) more than "
                          "labels, got "
                       << logits << " and " << labels;
  if (logits.getShape().drop_back() != labels.getShape())
    return emitError() << "logits " << logits << " and labels " << labels
                       << " disagree on their leading dimensions";
  return RankedTensorType::get({}, logits.getElementType());
}

FailureOr<RankedTensorType>
LayerNormOp::inferResultType(RankedTensorType input, RankedTensorType gamma,
                             RankedTensorType beta, double epsilon,
                             EmitErrorFn emitError) {
  if (!(epsilon > 0.0))
    return emitError() << "epsilon must be positive, got " << epsilon;
  if (failed(checkLastDimVector(input, gamma, "gamma", emitError)) ||
      failed(checkLastDimVector(input, beta, "beta", emitError)))
    return failure();
  return input;
}

FailureOr<RankedTensorType>
RopeOp::inferResultType(RankedTensorType input, RankedTensorType positions,
                        int64_t headDim, EmitErrorFn emitError) {
  if (input.getRank() != 3)
    return emitError() << "input must be 3-D [batch, seq, heads * head_dim], "
                          "got "
                       << input;
  if (headDim <= 0 || headDim % 2 != 0 || headDim > 256)
    return emitError() << "head_dim must be even and at most 256, got "
                       << headDim;
  if (input.getDimSize(2) % headDim != 0)
    return emitError() << "the input's " << input.getDimSize(2)
                       << " features are not whole heads of " << headDim;
  if (positions.getRank() != 2 ||
      positions.getShape() != input.getShape().drop_back())
    return emitError() << "positions must be [batch, seq] = ["
                       << input.getDimSize(0) << ", " << input.getDimSize(1)
                       << "], got " << positions;
  return input;
}

FailureOr<RankedTensorType>
AttentionOp::inferResultType(RankedTensorType q, RankedTensorType k,
                             RankedTensorType v, int64_t heads,
                             int64_t kvHeads, EmitErrorFn emitError) {
  for (auto [name, t] : {std::pair<const char *, RankedTensorType>{"q", q},
                         {"k", k},
                         {"v", v}})
    if (t.getRank() != 3)
      return emitError() << name << " must be 3-D [batch, seq, features], got "
                         << t;
  if (heads <= 0 || kvHeads <= 0 || heads % kvHeads != 0)
    return emitError() << "kv_heads must divide heads, got heads = " << heads
                       << " and kv_heads = " << kvHeads;
  if (q.getDimSize(2) % heads != 0)
    return emitError() << "q's " << q.getDimSize(2)
                       << " features do not split into " << heads << " heads";
  int64_t headDim = q.getDimSize(2) / heads;
  if (headDim % 2 != 0 || headDim > 256)
    return emitError() << "the head dimension must be even and at most 256, "
                          "got "
                       << headDim;
  if (k != v)
    return emitError() << "k and v must have one type, got " << k << " and "
                       << v;
  if (k.getElementType() != q.getElementType() ||
      k.getShape() !=
          ArrayRef<int64_t>{q.getDimSize(0), q.getDimSize(1),
                            kvHeads * headDim})
    return emitError() << "k and v must be [" << q.getDimSize(0) << ", "
                       << q.getDimSize(1) << ", " << kvHeads * headDim
                       << "] (kv_heads x the head dimension " << headDim
                       << ") of q's element type, got " << k;
  return q;
}

int64_t AttentionOp::getHeadDim() {
  return getQ().getType().getDimSize(2) / static_cast<int64_t>(getHeads());
}

FailureOr<RankedTensorType>
RmsNormOp::inferResultType(RankedTensorType input, RankedTensorType weight,
                           double epsilon, EmitErrorFn emitError) {
  if (!(epsilon > 0.0))
    return emitError() << "epsilon must be positive, got " << epsilon;
  if (failed(checkLastDimVector(input, weight, "weight", emitError)))
    return failure();
  return input;
}

FailureOr<RankedTensorType>
CausalAttentionOp::inferResultType(RankedTensorType qkv, int64_t heads,
                                   EmitErrorFn emitError) {
  if (qkv.getRank() != 3)
    return emitError() << "qkv must be 3-D [batch, seq, 3*hidden], got "
                       << qkv;
  if (heads <= 0)
    return emitError() << "heads must be positive, got " << heads;
  int64_t packed = qkv.getDimSize(2);
  if (packed % 3 != 0)
    return emitError() << "qkv's last dimension (" << packed
                       << ") is not 3*hidden";
  int64_t hidden = packed / 3;
  if (hidden % heads != 0)
    return emitError() << "hidden size " << hidden
                       << " is not divisible by " << heads << " heads";
  return RankedTensorType::get({qkv.getDimSize(0), qkv.getDimSize(1), hidden},
                               qkv.getElementType());
}

//===----------------------------------------------------------------------===//
// Backward ops: rules and verifiers
//===----------------------------------------------------------------------===//

FailureOr<RankedTensorType>
LinearGradInputOp::inferResultType(RankedTensorType resultGrad,
                                   RankedTensorType weight, bool weightOutIn,
                                   EmitErrorFn emitError) {
  if (weight.getRank() != 2)
    return emitError() << "weight must be 2-D "
                       << (weightOutIn ? "[out, in]" : "[in, out]") << ", got "
                       << weight;
  int64_t in = weight.getDimSize(weightOutIn ? 1 : 0);
  int64_t out = weight.getDimSize(weightOutIn ? 0 : 1);
  if (resultGrad.getRank() < 1 || resultGrad.getShape().back() != out)
    return emitError() << "result gradient " << resultGrad
                       << " does not end in the weight's " << out
                       << " output features";
  if (failed(checkSameElementType(resultGrad, "result gradient", weight,
                                  "weight", emitError)))
    return failure();
  SmallVector<int64_t> shape(resultGrad.getShape());
  shape.back() = in;
  return RankedTensorType::get(shape, resultGrad.getElementType());
}

FailureOr<RankedTensorType>
LinearGradWeightOp::inferResultType(RankedTensorType input,
                                    RankedTensorType resultGrad,
                                    bool weightOutIn, EmitErrorFn emitError) {
  if (input.getRank() < 1 || input.getRank() != resultGrad.getRank() ||
      input.getShape().drop_back() != resultGrad.getShape().drop_back())
    return emitError() << "input " << input << " and result gradient "
                       << resultGrad << " disagree on their leading dimensions";
  if (failed(checkSameElementType(input, "input", resultGrad,
                                  "result gradient", emitError)))
    return failure();
  int64_t in = input.getShape().back(), out = resultGrad.getShape().back();
  return RankedTensorType::get(weightOutIn ? ArrayRef<int64_t>{out, in}
                                           : ArrayRef<int64_t>{in, out},
                               input.getElementType());
}

FailureOr<RankedTensorType>
MatmulGradLhsOp::inferResultType(RankedTensorType resultGrad,
                                 RankedTensorType rhs, EmitErrorFn emitError) {
  // dA [..., M, K] from dC [..., M, N] and B [..., K, N].
  if (resultGrad.getRank() < 2 || resultGrad.getRank() != rhs.getRank() ||
      resultGrad.getShape().drop_back(2) != rhs.getShape().drop_back(2) ||
      resultGrad.getShape().back() != rhs.getShape().back())
    return emitError() << "result gradient " << resultGrad << " and rhs "
                       << rhs << " do not fit [..., M, N] x [..., K, N]";
  if (failed(checkSameElementType(resultGrad, "result gradient", rhs, "rhs",
                                  emitError)))
    return failure();
  SmallVector<int64_t> shape(resultGrad.getShape());
  shape.back() = rhs.getDimSize(rhs.getRank() - 2);
  return RankedTensorType::get(shape, resultGrad.getElementType());
}

FailureOr<RankedTensorType>
MatmulGradRhsOp::inferResultType(RankedTensorType lhs,
                                 RankedTensorType resultGrad,
                                 EmitErrorFn emitError) {
  // dB [..., K, N] from A [..., M, K] and dC [..., M, N].
  int64_t rank = lhs.getRank();
  if (rank < 2 || rank != resultGrad.getRank() ||
      lhs.getShape().drop_back() != resultGrad.getShape().drop_back())
    return emitError() << "lhs " << lhs << " and result gradient "
                       << resultGrad << " do not fit [..., M, K] x [..., M, N]";
  if (failed(checkSameElementType(lhs, "lhs", resultGrad, "result gradient",
                                  emitError)))
    return failure();
  SmallVector<int64_t> shape(lhs.getShape().drop_back(2));
  shape.push_back(lhs.getDimSize(rank - 1));
  shape.push_back(resultGrad.getDimSize(rank - 1));
  return RankedTensorType::get(shape, lhs.getElementType());
}

FailureOr<RankedTensorType>
BiasGradOp::inferResultType(RankedTensorType resultGrad, EmitErrorFn emitError) {
  if (resultGrad.getRank() < 1)
    return emitError() << "operand must have at least one dimension, got "
                       << resultGrad;
  return RankedTensorType::get({resultGrad.getShape().back()},
                               resultGrad.getElementType());
}

/// Checks that the gradient `dy` of an elementwise op has its input's type.
static FailureOr<RankedTensorType>
inferElementwiseGrad(RankedTensorType resultGrad, RankedTensorType input,
                     EmitErrorFn emitError) {
  if (resultGrad != input)
    return emitError() << "result gradient " << resultGrad
                       << " and input " << input << " differ in type";
  return input;
}

FailureOr<RankedTensorType> ReluGradOp::inferResultType(RankedTensorType dy,
                                                        RankedTensorType x,
                                                        EmitErrorFn emitError) {
  return inferElementwiseGrad(dy, x, emitError);
}

FailureOr<RankedTensorType> GeluGradOp::inferResultType(RankedTensorType dy,
                                                        RankedTensorType x,
                                                        EmitErrorFn emitError) {
  return inferElementwiseGrad(dy, x, emitError);
}

FailureOr<RankedTensorType>
LayerNormGradGammaOp::inferResultType(RankedTensorType dy, RankedTensorType x,
                                      EmitErrorFn emitError) {
  if (failed(inferElementwiseGrad(dy, x, emitError)) ||
      failed(BiasGradOp::inferResultType(dy, emitError)))
    return failure();
  return RankedTensorType::get({x.getShape().back()}, x.getElementType());
}

#define ZB_VERIFY_BINARY_BACKWARD(OP, LHS, RHS)                                \
  LogicalResult OP::verify() {                                                 \
    return verifyInferredResult(                                               \
        *this, inferResultType(get##LHS().getType(), get##RHS().getType(),     \
                               [&] { return emitOpError(); }));                \
  }
LogicalResult LinearGradInputOp::verify() {
  return verifyInferredResult(
      *this, inferResultType(getResultGrad().getType(), getWeight().getType(),
                             getWeightOutIn(), [&] { return emitOpError(); }));
}
LogicalResult LinearGradWeightOp::verify() {
  return verifyInferredResult(
      *this, inferResultType(getInput().getType(), getResultGrad().getType(),
                             getWeightOutIn(), [&] { return emitOpError(); }));
}
ZB_VERIFY_BINARY_BACKWARD(MatmulGradLhsOp, ResultGrad, Rhs)
ZB_VERIFY_BINARY_BACKWARD(MatmulGradRhsOp, Lhs, ResultGrad)
ZB_VERIFY_BINARY_BACKWARD(ReluGradOp, ResultGrad, Input)
ZB_VERIFY_BINARY_BACKWARD(GeluGradOp, ResultGrad, Input)
#undef ZB_VERIFY_BINARY_BACKWARD

LogicalResult LayerNormGradGammaOp::verify() {
  double epsilon = getEpsilon().convertToDouble();
  if (!(epsilon > 0.0))
    return emitOpError("epsilon must be positive, got ") << epsilon;
  return verifyInferredResult(
      *this, inferResultType(getResultGrad().getType(), getInput().getType(),
                             [&] { return emitOpError(); }));
}

LogicalResult RmsNormGradWeightOp::verify() {
  double epsilon = getEpsilon().convertToDouble();
  if (!(epsilon > 0.0))
    return emitOpError("epsilon must be positive, got ") << epsilon;
  // The same shape rule as LayerNorm's gamma gradient: [N] from [..., N].
  return verifyInferredResult(
      *this, LayerNormGradGammaOp::inferResultType(
                 getResultGrad().getType(), getInput().getType(),
                 [&] { return emitOpError(); }));
}

LogicalResult RmsNormGradInputOp::verify() {
  auto emit = [&] { return emitOpError(); };
  RankedTensorType x = getInput().getType();
  if (failed(inferElementwiseGrad(getResultGrad().getType(), x, emit)))
    return failure();
  // The forward rule checks the weight against x and epsilon.
  return verifyInferredResult(
      *this, RmsNormOp::inferResultType(x, getWeight().getType(),
                                        getEpsilon().convertToDouble(), emit));
}

namespace {
/// The rotation's attributes, shared by zb.rope and zb.rope_grad: a
/// positive theta, and Llama 3's scaling whole or absent.
template <typename RopeLike> LogicalResult verifyRotation(RopeLike op) {
  if (!(op.getTheta().convertToDouble() > 0.0))
    return op.emitOpError("theta must be positive, got ")
           << op.getTheta().convertToDouble();
  int given = (op.getLlama3Factor() ? 1 : 0) +
              (op.getLlama3LowFreqFactor() ? 1 : 0) +
              (op.getLlama3HighFreqFactor() ? 1 : 0) +
              (op.getLlama3OriginalMaxPositions() ? 1 : 0);
  if (given == 0)
    return success();
  if (given != 4)
    return op.emitOpError("llama3 scaling needs all four of llama3_factor, "
                          "llama3_low_freq_factor, llama3_high_freq_factor "
                          "and llama3_original_max_positions; ")
           << given << " given";
  double factor = op.getLlama3Factor()->convertToDouble();
  double low = op.getLlama3LowFreqFactor()->convertToDouble();
  double high = op.getLlama3HighFreqFactor()->convertToDouble();
  if (!(factor > 0.0) || !(low > 0.0) || !(high > low) ||
      *op.getLlama3OriginalMaxPositions() <= 0)
    return op.emitOpError("llama3 scaling needs factor > 0, 0 < "
                          "low_freq_factor < high_freq_factor and positive "
                          "original max positions; got factor ")
           << factor << ", low " << low << ", high " << high << ", original "
           << *op.getLlama3OriginalMaxPositions();
  return success();
}
} // namespace

LogicalResult RopeGradOp::verify() {
  if (failed(verifyRotation(*this)))
    return failure();
  return verifyInferredResult(
      *this, RopeOp::inferResultType(
                 getResultGrad().getType(), getPositions().getType(),
                 static_cast<int64_t>(getHeadDim()),
                 [&] { return emitOpError(); }));
}

LogicalResult RopeOp::verify() {
  if (failed(verifyRotation(*this)))
    return failure();
  return verifyInferredResult(
      *this, inferResultType(getInput().getType(), getPositions().getType(),
                             static_cast<int64_t>(getHeadDim()),
                             [&] { return emitOpError(); }));
}

LogicalResult AttentionOp::verify() {
  if (failed(checkDocuments(getDocuments(), getQ().getType(),
                            [&] { return emitOpError(); })))
    return failure();
  return verifyInferredResult(
      *this, inferResultType(getQ().getType(), getK().getType(),
                             getV().getType(),
                             static_cast<int64_t>(getHeads()),
                             static_cast<int64_t>(getKvHeads()),
                             [&] { return emitOpError(); }));
}

LogicalResult AttentionGradOp::verify() {
  RankedTensorType q = getQ().getType(), k = getK().getType(),
                   v = getV().getType();
  FailureOr<RankedTensorType> out = AttentionOp::inferResultType(
      q, k, v, static_cast<int64_t>(getHeads()),
      static_cast<int64_t>(getKvHeads()), [&] { return emitOpError(); });
  if (failed(out))
    return failure();
  if (getResultGrad().getType() != *out)
    return emitOpError("the result's gradient must be ")
           << *out << ", got " << getResultGrad().getType();
  if (getDq().getType() != q || getDk().getType() != k ||
      getDv().getType() != v)
    return emitOpError("dq, dk and dv must be typed as q, k and v");
  return checkDocuments(getDocuments(), q, [&] { return emitOpError(); });
}

LogicalResult BiasGradOp::verify() {
  return verifyInferredResult(
      *this, inferResultType(getResultGrad().getType(),
                             [&] { return emitOpError(); }));
}

LogicalResult LayerNormGradInputOp::verify() {
  auto emit = [&] { return emitOpError(); };
  RankedTensorType x = getInput().getType();
  if (failed(inferElementwiseGrad(getResultGrad().getType(), x, emit)))
    return failure();
  // The forward rule checks gamma against x and epsilon.
  return verifyInferredResult(
      *this, LayerNormOp::inferResultType(x, getGamma().getType(),
                                          getGamma().getType(),
                                          getEpsilon().convertToDouble(), emit));
}

LogicalResult EmbeddingGradOp::verify() {
  RankedTensorType dy = getResultGrad().getType();
  RankedTensorType indices = getIndices().getType();
  if (dy.getRank() != indices.getRank() + 1 ||
      dy.getShape().drop_back() != indices.getShape())
    return emitOpError("result gradient ")
           << dy << " is not indices " << indices << " plus a hidden dimension";
  return verifyInferredResult(
      *this, RankedTensorType::get({static_cast<int64_t>(getVocab()),
                                    dy.getShape().back()},
                                   dy.getElementType()));
}

LogicalResult CausalAttentionGradOp::verify() {
  auto emit = [&] { return emitOpError(); };
  RankedTensorType qkv = getQkv().getType();
  FailureOr<RankedTensorType> out =
      CausalAttentionOp::inferResultType(qkv, getHeads(), emit);
  if (failed(out))
    return failure();
  if (getResultGrad().getType() != *out)
    return emitOpError("result gradient ")
           << getResultGrad().getType() << " is not the attention output type "
           << *out;
  if (failed(checkDocuments(getDocuments(), qkv, emit)))
    return failure();
  return verifyInferredResult(*this, qkv);
}

//===----------------------------------------------------------------------===//
// The output layer over a vocabulary shard
//===----------------------------------------------------------------------===//

RankedTensorType VocabStatsOp::statsTypeOf(RankedTensorType logits) {
  SmallVector<int64_t> shape = {4};
  llvm::append_range(shape, logits.getShape().drop_back());
  return RankedTensorType::get(shape, logits.getElementType());
}
RankedTensorType VocabLossOp::statsTypeOf(RankedTensorType logits) {
  return VocabStatsOp::statsTypeOf(logits);
}
RankedTensorType VocabGradOp::statsTypeOf(RankedTensorType logits) {
  return VocabStatsOp::statsTypeOf(logits);
}

/// The shard's columns [first, first + R) lie in the vocabulary.
template <typename Op>
static LogicalResult verifyShardColumns(Op op, RankedTensorType logits) {
  int64_t columns = logits.getShape().back();
  if (static_cast<int64_t>(op.getFirst()) + columns >
      static_cast<int64_t>(op.getVocab()))
    return op.emitOpError("shard columns [")
           << op.getFirst() << ", " << op.getFirst() + columns
           << ") are not in the vocabulary of " << op.getVocab();
  return success();
}

LogicalResult VocabStatsOp::verify() {
  auto emit = [&] { return emitOpError(); };
  RankedTensorType logits = getLogits().getType();
  if (failed(CrossEntropyOp::inferResultType(logits, getLabels().getType(),
                                             emit)) ||
      failed(verifyShardColumns(*this, logits)))
    return failure();
  return verifyInferredResult(*this, statsTypeOf(logits));
}

LogicalResult VocabLossOp::verify() {
  RankedTensorType stats = getStats().getType(),
                   labels = getLabels().getType();
  if (stats.getRank() != labels.getRank() + 1 || stats.getShape()[0] != 4 ||
      stats.getShape().drop_front() != labels.getShape())
    return emitOpError("statistics ")
           << stats << " are not 4 planes of labels " << labels;
  return verifyInferredResult(
      *this, RankedTensorType::get({}, stats.getElementType()));
}

LogicalResult VocabGradOp::verify() {
  auto emit = [&] { return emitOpError(); };
  RankedTensorType logits = getLogits().getType();
  FailureOr<RankedTensorType> loss =
      CrossEntropyOp::inferResultType(logits, getLabels().getType(), emit);
  if (failed(loss) || failed(verifyShardColumns(*this, logits)))
    return failure();
  if (getStats().getType() != statsTypeOf(logits))
    return emitOpError("statistics ")
           << getStats().getType() << " are not " << statsTypeOf(logits)
           << ", the 4 planes of the logits' rows";
  if (getLossGrad().getType() != *loss)
    return emitOpError("loss gradient ")
           << getLossGrad().getType() << " is not the loss type " << *loss;
  return verifyInferredResult(*this, logits);
}

LogicalResult CrossEntropyGradOp::verify() {
  auto emit = [&] { return emitOpError(); };
  RankedTensorType logits = getLogits().getType();
  FailureOr<RankedTensorType> loss =
      CrossEntropyOp::inferResultType(logits, getLabels().getType(), emit);
  if (failed(loss))
    return failure();
  if (getLossGrad().getType() != *loss)
    return emitOpError("loss gradient ")
           << getLossGrad().getType() << " is not the loss type " << *loss;
  return verifyInferredResult(*this, logits);
}
