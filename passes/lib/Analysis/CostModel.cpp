//===- CostModel.cpp - FLOPs of zb ops from their shapes ------------------===//
//
// Computes the FLOPs of every zb tensor op, model-level and backward, from
// its operand and result types alone. Matrix products are counted exactly
// (2*M*K*N per product, the multiply and the add); everything else gets a
// small per-element constant, kept apart in `elementwiseFlops` so that the
// matmul part can be checked against the Zero Bubble paper's formulas.
//
// Matmul accounting. For a GPT layer with microbatch b, sequence s, hidden
// h (QKV linear h->3h, projection h->h, MLP h->4h->h) the paper counts
//   F = sbh(24h + 4s),  B = sbh(24h + 8s),  W = 24sbh^2.
// zbc reproduces these by summing ops:
//   zb.linear, zb.linear_grad_input, zb.linear_grad_weight   2*M*K*N each,
//       M the product of the leading dimensions (24sbh^2 per layer for each
//       of F, B and W);
//   zb.causal_attention        4*B*S*S*H (QK^T and PV, H = qkv's last dim / 3,
//                              the full SxS score matrix, as the paper counts)
//   zb.causal_attention_grad   8*B*S*S*H (dV, dP, dQ, dK). The op recomputes
//                              P = softmax(QK^T), another 2*B*S*S*H, which
//                              the paper does not count and neither do we,
//                              so that B stays sbh(24h + 8s);
//   zb.matmul and its grads    2*batch*M*K*N each.
//
// Elementwise accounting (elementwiseFlops). Rough counts of the scalar
// operations per element; they matter only where there are no matrix
// products (MLPs without attention are still matmul-dominated):
//
//   op                      FLOPs    per
//   ----------------------  -------  ------------------------------------
//   bias_add, add, relu     1        output element
//   gelu                    8        output element (tanh approximation)
//   swiglu                  5        output element (exp, add, divide, 2 mul)
//   rope                    4        element (2 mul, 1 add, its angle's
//                                    sin and cos shared by a pair)
//   layernorm               8        element (mean 1, var 3, norm+affine 4)
//   rmsnorm                 4        element (square+sum 2, scale 1, weight 1)
//   embedding               1        output element (a gather: a copy)
//   transpose               1        element (a copy)
//   causal_attention        5        score, B*heads*S*S (scale, max, exp,
//                                    sum, divide of the softmax)
//   cross_entropy           5        logit (max, exp, sum, log, pick)
//   fill                    1        output element (a store)
//   bias_grad               1        input element (a sum)
//   relu_grad               1        element
//   gelu_grad               12       element
//   swiglu_grad_gate        9        element (sigmoid 3, silu' 4, 2 mul)
//   swiglu_grad_up          5        element (silu 4, mul 1)
//   rope_grad               4        element (the inverse rotation)
//   layernorm_grad_input    12       element (recompute 4, the formula 8)
//   layernorm_grad_gamma    8        element (recompute xhat 6, mul+sum 2)
//   rmsnorm_grad_input      8        element (recompute 3, the formula 5)
//   rmsnorm_grad_weight     5        element (recompute xhat 3, mul+sum 2)
//   embedding_grad          1        gradient element (a scatter-add)
//   causal_attention_grad   8        score (recompute softmax 5, dS 3)
//   cross_entropy_grad      6        logit (softmax 5, minus one-hot 1)
//
// Leaves, cuts, yields, the loss and anything outside the zb dialect cost
// nothing. Counts saturate at INT64_MAX instead of overflowing.
//
//===----------------------------------------------------------------------===//

#include "zbc/Analysis/CostModel.h"

#include "zbc/Dialect/ZB/ZBOps.h"
#include "zbc/Support/LLVM.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <initializer_list>
#include <limits>

using namespace mlir;
using namespace zbc;
using namespace zbc::zb;

namespace {

//===----------------------------------------------------------------------===//
// Per-element constants (see the table in the file comment)
//===----------------------------------------------------------------------===//

constexpr int64_t kFlopsPerBiasAdd = 1;
constexpr int64_t kFlopsPerAdd = 1;
constexpr int64_t kFlopsPerRelu = 1;
constexpr int64_t kFlopsPerTranspose = 1;
constexpr int64_t kFlopsPerGelu = 8;
constexpr int64_t kFlopsPerSwiGlu = 5;
constexpr int64_t kFlopsPerRope = 4;
constexpr int64_t kFlopsPerSwiGluGradGate = 9;
constexpr int64_t kFlopsPerSwiGluGradUp = 5;
constexpr int64_t kFlopsPerLayerNorm = 8;
constexpr int64_t kFlopsPerRmsNorm = 4;
constexpr int64_t kFlopsPerEmbedding = 1;
constexpr int64_t kFlopsPerAttentionScore = 5;
constexpr int64_t kFlopsPerCrossEntropyLogit = 5;
constexpr int64_t kFlopsPerFill = 1;
constexpr int64_t kFlopsPerBiasGrad = 1;
constexpr int64_t kFlopsPerReluGrad = 1;
constexpr int64_t kFlopsPerGeluGrad = 12;
constexpr int64_t kFlopsPerLayerNormGradInput = 12;
constexpr int64_t kFlopsPerLayerNormGradGamma = 8;
constexpr int64_t kFlopsPerRmsNormGradInput = 8;
constexpr int64_t kFlopsPerRmsNormGradWeight = 5;
constexpr int64_t kFlopsPerEmbeddingGrad = 1;
constexpr int64_t kFlopsPerAttentionGradScore = 8;
constexpr int64_t kFlopsPerCrossEntropyGradLogit = 6;

//===----------------------------------------------------------------------===//
// Shape helpers
//===----------------------------------------------------------------------===//

/// The product of `factors`, saturating at INT64_MAX; negative factors
/// (dynamic dimensions, which zb types never have) count as zero.
int64_t product(std::initializer_list<int64_t> factors) {
  uint64_t result = 1;
  bool overflow = false;
  for (int64_t factor : factors) {
    if (factor <= 0)
      return 0;
    result = llvm::SaturatingMultiply(result, static_cast<uint64_t>(factor),
                                      &overflow);
  }
  constexpr uint64_t kMax = std::numeric_limits<int64_t>::max();
  return overflow || result > kMax ? static_cast<int64_t>(kMax)
                                   : static_cast<int64_t>(result);
}

/// The static shape of `value`, or null when it has none.
std::optional<ArrayRef<int64_t>> getShape(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.hasStaticShape())
    return std::nullopt;
  return type.getShape();
}

/// Elements of `value`, 0 when it has no static shape.
int64_t numElements(Value value) {
  std::optional<ArrayRef<int64_t>> shape = getShape(value);
  if (!shape)
    return 0;
  int64_t n = 1;
  for (int64_t dim : *shape)
    n = product({n, dim});
  return n;
}

/// The product of all dimensions but the last `keep`.
int64_t leadingProduct(ArrayRef<int64_t> shape, unsigned keep) {
  int64_t n = 1;
  for (int64_t dim : shape.drop_back(keep))
    n = product({n, dim});
  return n;
}

OpCost elementwise(int64_t perElement, int64_t elements) {
  OpCost cost;
  cost.elementwiseFlops = product({perElement, elements});
  return cost;
}

OpCost matmul(int64_t flops) {
  OpCost cost;
  cost.matmulFlops = flops;
  return cost;
}

/// 2*M*K*N for `act [..., K] x W [K, N]` (zb.linear), M the product of the
/// leading dimensions of `act`; also `dy [..., N] x W^T` (linear_grad_input),
/// whose M, K and N are the same.
OpCost linearCost(Value act, Value weight) {
  std::optional<ArrayRef<int64_t>> a = getShape(act), w = getShape(weight);
  if (!a || !w || a->empty() || w->size() != 2)
    return {};
  return matmul(product({2, leadingProduct(*a, 1), (*w)[0], (*w)[1]}));
}

/// 2*M*K*N for linear_grad_weight: `x [..., K]`, `dy [..., N]`.
OpCost linearGradWeightCost(Value input, Value resultGrad) {
  std::optional<ArrayRef<int64_t>> x = getShape(input),
                                   dy = getShape(resultGrad);
  if (!x || !dy || x->empty() || dy->empty())
    return {};
  return matmul(product({2, leadingProduct(*x, 1), x->back(), dy->back()}));
}

/// 2*batch*P*Q*R for a batched product whose operand `a` is `[..., P, Q]`
/// and whose remaining size (the other operand's free dimension) is `r`.
OpCost batchedMatmulCost(Value a, int64_t r) {
  std::optional<ArrayRef<int64_t>> s = getShape(a);
  if (!s || s->size() < 2)
    return {};
  return matmul(product({2, leadingProduct(*s, 2), (*s)[s->size() - 2],
                         s->back(), r}));
}

/// The last dimension of `value`, 0 without a static shape or rank 0.
int64_t lastDim(Value value) {
  std::optional<ArrayRef<int64_t>> s = getShape(value);
  return s && !s->empty() ? s->back() : 0;
}

/// Dimension `rank - 2` of `value`, 0 when there is none.
int64_t secondToLastDim(Value value) {
  std::optional<ArrayRef<int64_t>> s = getShape(value);
  return s && s->size() >= 2 ? (*s)[s->size() - 2] : 0;
}

/// Attention of `heads` query heads over `query [B, S, packed * H]` (packed
/// 3: zb.causal_attention's qkv; 1: zb.attention's q, whatever its kv
/// heads, which share keys but not work): the matmul FLOPs
/// `matmulFactor*B*S*S*H` and `perScore` FLOPs for each of the
/// B*heads*S*S scores.
OpCost attentionCost(Value query, int64_t packed, int64_t heads,
                     int64_t matmulFactor, int64_t perScore) {
  std::optional<ArrayRef<int64_t>> s = getShape(query);
  if (!s || s->size() != 3)
    return {};
  int64_t batch = (*s)[0], seq = (*s)[1], hidden = (*s)[2] / packed;
  OpCost cost;
  cost.matmulFlops = product({matmulFactor, batch, seq, seq, hidden});
  cost.elementwiseFlops = product({perScore, batch, heads, seq, seq});
  return cost;
}

} // namespace

//===----------------------------------------------------------------------===//
// getOpCost
//===----------------------------------------------------------------------===//

OpCost zbc::getOpCost(Operation *op) {
  return llvm::TypeSwitch<Operation *, OpCost>(op)
      // Model level: matrix products.
      .Case([](LinearOp op) { return linearCost(op.getInput(), op.getWeight()); })
      .Case([](MatmulOp op) {
        return batchedMatmulCost(op.getLhs(), lastDim(op.getRhs()));
      })
      .Case([](CausalAttentionOp op) {
        return attentionCost(op.getQkv(), 3, op.getHeads(), 4,
                             kFlopsPerAttentionScore);
      })
      .Case([](AttentionOp op) {
        return attentionCost(op.getQ(), 1, op.getHeads(), 4,
                             kFlopsPerAttentionScore);
      })
      // Model level: elementwise.
      .Case([](BiasAddOp op) {
        return elementwise(kFlopsPerBiasAdd, numElements(op.getResult()));
      })
      .Case([](AddOp op) {
        return elementwise(kFlopsPerAdd, numElements(op.getResult()));
      })
      .Case([](ReluOp op) {
        return elementwise(kFlopsPerRelu, numElements(op.getResult()));
      })
      .Case([](TransposeOp op) {
        return elementwise(kFlopsPerTranspose, numElements(op.getResult()));
      })
      .Case([](GeluOp op) {
        return elementwise(kFlopsPerGelu, numElements(op.getResult()));
      })
      .Case([](LayerNormOp op) {
        return elementwise(kFlopsPerLayerNorm, numElements(op.getResult()));
      })
      .Case([](RopeOp op) {
        return elementwise(kFlopsPerRope, numElements(op.getResult()));
      })
      .Case([](RopeGradOp op) {
        return elementwise(kFlopsPerRope, numElements(op.getResult()));
      })
      .Case([](SwiGluOp op) {
        return elementwise(kFlopsPerSwiGlu, numElements(op.getResult()));
      })
      .Case([](SwiGluGradGateOp op) {
        return elementwise(kFlopsPerSwiGluGradGate, numElements(op.getResult()));
      })
      .Case([](SwiGluGradUpOp op) {
        return elementwise(kFlopsPerSwiGluGradUp, numElements(op.getResult()));
      })
      .Case([](RmsNormOp op) {
        return elementwise(kFlopsPerRmsNorm, numElements(op.getResult()));
      })
      .Case([](EmbeddingOp op) {
        return elementwise(kFlopsPerEmbedding, numElements(op.getResult()));
      })
      .Case([](CrossEntropyOp op) {
        return elementwise(kFlopsPerCrossEntropyLogit,
                           numElements(op.getLogits()));
      })
      // Backward: matrix products. dx = dy W^T is [M, N] x [N, K].
      .Case([](LinearGradInputOp op) {
        return linearCost(op.getResultGrad(), op.getWeight());
      })
      .Case([](LinearGradWeightOp op) {
        return linearGradWeightCost(op.getInput(), op.getResultGrad());
      })
      // dA = dC B^T: dC [.., M, N] times N x K, K = rows of B.
      .Case([](MatmulGradLhsOp op) {
        return batchedMatmulCost(op.getResultGrad(),
                                 secondToLastDim(op.getRhs()));
      })
      // dB = A^T dC: A [.., M, K] times M x N, N = columns of dC.
      .Case([](MatmulGradRhsOp op) {
        return batchedMatmulCost(op.getLhs(), lastDim(op.getResultGrad()));
      })
      .Case([](CausalAttentionGradOp op) {
        return attentionCost(op.getQkv(), 3, op.getHeads(), 8,
                             kFlopsPerAttentionGradScore);
      })
      .Case([](AttentionGradOp op) {
        return attentionCost(op.getQ(), 1, op.getHeads(), 8,
                             kFlopsPerAttentionGradScore);
      })
      // Backward: elementwise and reductions.
      .Case([](BiasGradOp op) {
        return elementwise(kFlopsPerBiasGrad, numElements(op.getResultGrad()));
      })
      .Case([](ReluGradOp op) {
        return elementwise(kFlopsPerReluGrad, numElements(op.getResult()));
      })
      .Case([](GeluGradOp op) {
        return elementwise(kFlopsPerGeluGrad, numElements(op.getResult()));
      })
      .Case([](LayerNormGradInputOp op) {
        return elementwise(kFlopsPerLayerNormGradInput,
                           numElements(op.getResult()));
      })
      .Case([](LayerNormGradGammaOp op) {
        return elementwise(kFlopsPerLayerNormGradGamma,
                           numElements(op.getInput()));
      })
      .Case([](RmsNormGradInputOp op) {
        return elementwise(kFlopsPerRmsNormGradInput,
                           numElements(op.getResult()));
      })
      .Case([](RmsNormGradWeightOp op) {
        return elementwise(kFlopsPerRmsNormGradWeight,
                           numElements(op.getInput()));
      })
      .Case([](EmbeddingGradOp op) {
        return elementwise(kFlopsPerEmbeddingGrad,
                           numElements(op.getResultGrad()));
      })
      .Case([](CrossEntropyGradOp op) {
        return elementwise(kFlopsPerCrossEntropyGradLogit,
                           numElements(op.getLogits()));
      })
      .Case([](FillOp op) {
        return elementwise(kFlopsPerFill, numElements(op.getResult()));
      })
      // Leaves, cuts, the loss, phases, yields, foreign ops.
      .Default([](Operation *) { return OpCost(); });
}
