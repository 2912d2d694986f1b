//===- ZBGradients.cpp - gradient rules of the zb tensor ops --------------===//
//
// DifferentiableOpInterface for every model-level tensor op: given the
// gradient dy of the op's result, build the gradients of its operands. The
// rules are the ones documented on the backward ops (ZBBackwardOps.td) and in
// the gradient table of dialect/docs/ZB.md. Forward values are fetched
// through `forward`, so zb-autodiff sees (and stashes) exactly what each
// rule needs. A rule may build gradients nobody needs (the input gradient
// of a stage's first linear, say); zb-autodiff removes those as dead code.
//
//===----------------------------------------------------------------------===//

#include "zbc/Dialect/ZB/ZBOps.h"

using namespace mlir;
using namespace zbc::zb;

#include "zbc/Dialect/ZB/ZBInterfaces.cpp.inc"

namespace {
using ForwardFn = llvm::function_ref<Value(Value)>;

/// The result type a backward op gives to the gradient of `forwardValue`.
RankedTensorType gradType(Value forwardValue) {
  return cast<RankedTensorType>(forwardValue.getType());
}
} // namespace

// y = x W:  dx = dy W^T (linear_grad_input),  dW = x^T dy (linear_grad_weight);
// with W [out, in] (y = x W^T): dx = dy W, dW = dy^T x.
void LinearOp::buildGradients(OpBuilder &b, Value dy, ForwardFn forward,
                              SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  grads.push_back(LinearGradInputOp::create(b, loc, gradType(getInput()), dy,
                                            forward(getWeight()),
                                            getWeightOutInAttr()));
  grads.push_back(LinearGradWeightOp::create(b, loc, gradType(getWeight()),
                                             forward(getInput()), dy,
                                             getWeightOutInAttr()));
}

// C = A B:  dA = dC B^T,  dB = A^T dC.
void MatmulOp::buildGradients(OpBuilder &b, Value dc, ForwardFn forward,
                              SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  grads.push_back(MatmulGradLhsOp::create(b, loc, gradType(getLhs()), dc,
                                          forward(getRhs())));
  grads.push_back(MatmulGradRhsOp::create(b, loc, gradType(getRhs()),
                                          forward(getLhs()), dc));
}

// y = x^T:  dx = dy^T.
void TransposeOp::buildGradients(OpBuilder &b, Value dy, ForwardFn,
                                 SmallVectorImpl<Value> &grads) {
  grads.push_back(
      TransposeOp::create(b, getLoc(), gradType(getInput()), dy).getResult());
}

// y = x + b:  dx = dy,  db = sum of dy over the leading dimensions.
void BiasAddOp::buildGradients(OpBuilder &b, Value dy, ForwardFn,
                               SmallVectorImpl<Value> &grads) {
  grads.push_back(dy);
  grads.push_back(BiasGradOp::create(b, getLoc(), gradType(getBias()), dy));
}

// c = a + b:  da = db = dc.
void AddOp::buildGradients(OpBuilder &, Value dc, ForwardFn,
                           SmallVectorImpl<Value> &grads) {
  grads.push_back(dc);
  grads.push_back(dc);
}

// y = max(x, 0):  dx = dy * (x > 0).
void ReluOp::buildGradients(OpBuilder &b, Value dy, ForwardFn forward,
                            SmallVectorImpl<Value> &grads) {
  grads.push_back(ReluGradOp::create(b, getLoc(), gradType(getInput()), dy,
                                     forward(getInput())));
}

// y = gelu(x):  dx = dy * gelu'(x).
void GeluOp::buildGradients(OpBuilder &b, Value dy, ForwardFn forward,
                            SmallVectorImpl<Value> &grads) {
  grads.push_back(GeluGradOp::create(b, getLoc(), gradType(getInput()), dy,
                                     forward(getInput())));
}

// y = R(p) x, a rotation per pair of features:  dx = R(p)^T dy (rope_grad);
// none for the positions.
void RopeOp::buildGradients(OpBuilder &b, Value dy, ForwardFn forward,
                            SmallVectorImpl<Value> &grads) {
  grads.push_back(RopeGradOp::create(
      b, getLoc(), gradType(getInput()), dy, forward(getPositions()),
      getHeadDimAttr(), getThetaAttr(), getMaxPositionsAttr(),
      getLlama3FactorAttr(), getLlama3LowFreqFactorAttr(),
      getLlama3HighFreqFactorAttr(), getLlama3OriginalMaxPositionsAttr()));
  grads.push_back(Value()); // integer positions
}

// y = silu(gate) * up:  dgate = dy * up * silu'(gate), dup = dy * silu(gate).
void SwiGluOp::buildGradients(OpBuilder &b, Value dy, ForwardFn forward,
                              SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  Value gate = forward(getGate());
  grads.push_back(SwiGluGradGateOp::create(b, loc, gradType(getGate()), dy,
                                           gate, forward(getUp())));
  grads.push_back(
      SwiGluGradUpOp::create(b, loc, gradType(getUp()), dy, gate));
}

// y = gamma * xhat + beta:  dx (layernorm_grad_input), dgamma = sum(dy*xhat),
// dbeta = sum(dy).
void LayerNormOp::buildGradients(OpBuilder &b, Value dy, ForwardFn forward,
                                 SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  Value x = forward(getInput());
  grads.push_back(LayerNormGradInputOp::create(
      b, loc, gradType(getInput()), dy, x, forward(getGamma()),
      getEpsilonAttr()));
  grads.push_back(LayerNormGradGammaOp::create(b, loc, gradType(getGamma()),
                                               dy, x, getEpsilonAttr()));
  grads.push_back(BiasGradOp::create(b, loc, gradType(getBeta()), dy));
}

// y = weight * xhat, xhat = x * rsqrt(mean(x^2) + eps):  dx
// (rmsnorm_grad_input), dweight = sum(dy * xhat).
void RmsNormOp::buildGradients(OpBuilder &b, Value dy, ForwardFn forward,
                               SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  Value x = forward(getInput());
  grads.push_back(RmsNormGradInputOp::create(b, loc, gradType(getInput()), dy,
                                             x, forward(getWeight()),
                                             getEpsilonAttr()));
  grads.push_back(RmsNormGradWeightOp::create(b, loc, gradType(getWeight()),
                                              dy, x, getEpsilonAttr()));
}

// y = table[indices]:  no gradient for the indices; dtable scatter-adds dy.
void EmbeddingOp::buildGradients(OpBuilder &b, Value dy, ForwardFn forward,
                                 SmallVectorImpl<Value> &grads) {
  grads.push_back(Value());
  RankedTensorType table = gradType(getTable());
  grads.push_back(EmbeddingGradOp::create(
      b, getLoc(), table, forward(getIndices()), dy,
      b.getI64IntegerAttr(table.getDimSize(0))));
}

// out = attention(qkv):  dqkv from the recomputed probabilities, under the
// forward's document mask; the document ids have no gradient.
void CausalAttentionOp::buildGradients(OpBuilder &b, Value dout,
                                       ForwardFn forward,
                                       SmallVectorImpl<Value> &grads) {
  Value documents = getDocuments() ? forward(getDocuments()) : Value();
  grads.push_back(CausalAttentionGradOp::create(
      b, getLoc(), gradType(getQkv()), dout, forward(getQkv()), documents,
      getHeadsAttr()));
  if (documents)
    grads.push_back(Value());
}

// out = attention(q, k, v):  dq, dk, dv from the recomputed probabilities,
// in one op (one recomputation for the three), under the forward's document
// mask; the document ids have no gradient.
void AttentionOp::buildGradients(OpBuilder &b, Value dout, ForwardFn forward,
                                 SmallVectorImpl<Value> &grads) {
  Value documents = getDocuments() ? forward(getDocuments()) : Value();
  auto grad = AttentionGradOp::create(
      b, getLoc(), gradType(getQ()), gradType(getK()), gradType(getV()), dout,
      forward(getQ()), forward(getK()), forward(getV()), documents,
      getHeadsAttr(), getKvHeadsAttr());
  grads.append({grad.getDq(), grad.getDk(), grad.getDv()});
  if (documents)
    grads.push_back(Value());
}

// loss = mean CE(logits, labels) over the labels that count:
// dlogits = dloss (softmax - onehot) / N on their rows, 0 on ignored ones.
void CrossEntropyOp::buildGradients(OpBuilder &b, Value dloss,
                                    ForwardFn forward,
                                    SmallVectorImpl<Value> &grads) {
  grads.push_back(CrossEntropyGradOp::create(
      b, getLoc(), gradType(getLogits()), forward(getLogits()),
      forward(getLabels()), dloss, getIgnoreIndexAttr()));
  grads.push_back(Value());
}
