//===- ZBCosts.cpp - FLOPs and workspace bytes of the kernel ops ----------===//
//
// KernelOpInterface's facts of every zb op that runs as a kernel, computed
// from its kernel shape (KernelShape.h: the dims of its kernel table row, so
// that the shapes behind a cost are the ones the kernel is called with).
// Matrix products are counted exactly (2*M*K*N per product, the multiply
// and the add); everything else gets a small per-element constant, kept
// apart in `elementwiseFlops` so that the matmul part can be checked against
// the Zero Bubble paper's formulas.
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
//   zb.attention and its grad  as causal attention, H = heads * head_dim (the
//                              query heads: kv heads share keys, not work);
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
//   vocab_stats             5        logit of the shard (cross_entropy's)
//   vocab_loss              5        row (its log and sums)
//   vocab_grad              6        logit of the shard (cross_entropy_grad's)
//
// Workspaces. The attention kernels need scratch beside their operands;
// its bytes are KernelTable.h's functions of the row's dims, which the
// runtime's row asks for too (one statement for both sides).
//
//===----------------------------------------------------------------------===//

#include "zbc/Dialect/ZB/KernelShape.h"

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

/// `perElement` FLOPs on each of rows x n elements.
OpCost elementwise(int64_t perElement, int64_t rows, int64_t n = 1) {
  OpCost cost;
  cost.elementwiseFlops = saturatingProduct({perElement, rows, n});
  return cost;
}

/// One (batched) matrix product of batch x m x k x n.
OpCost matmul(int64_t batch, int64_t m, int64_t k, int64_t n) {
  OpCost cost;
  cost.matmulFlops = saturatingProduct({2, batch, m, k, n});
  return cost;
}

/// Attention of `heads` query heads of `hidden` features in all, over
/// `seq` positions: `matmulFactor`*B*S*S*hidden matmul FLOPs and
/// `perScore` FLOPs for each of the B*heads*S*S scores.
OpCost attention(int64_t batch, int64_t seq, int64_t hidden, int64_t heads,
                 int64_t matmulFactor, int64_t perScore) {
  OpCost cost;
  cost.matmulFlops = saturatingProduct({matmulFactor, batch, seq, seq, hidden});
  cost.elementwiseFlops = saturatingProduct({perScore, batch, heads, seq, seq});
  return cost;
}

template <typename OpT> KernelDims<OpT> dimsOf(OpT op) {
  return kernelShapeOf(op).dims;
}

/// The bytes of one element of `value`'s element type.
int64_t elementBytesOf(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  return getNumBytes(RankedTensorType::get({}, type.getElementType()));
}

} // namespace

//===----------------------------------------------------------------------===//
// Model-level ops
//===----------------------------------------------------------------------===//

OpCost LinearOp::getFlops() {
  auto d = dimsOf(*this);
  return matmul(1, d.rows, d.in, d.out);
}

OpCost MatmulOp::getFlops() {
  auto d = dimsOf(*this);
  return matmul(d.batch, d.m, d.k, d.n);
}

OpCost BiasAddOp::getFlops() {
  auto d = dimsOf(*this);
  return elementwise(kFlopsPerBiasAdd, d.rows, d.n);
}

OpCost AddOp::getFlops() { return elementwise(kFlopsPerAdd, dimsOf(*this).n); }

OpCost ReluOp::getFlops() {
  return elementwise(kFlopsPerRelu, dimsOf(*this).n);
}

OpCost TransposeOp::getFlops() {
  auto d = dimsOf(*this);
  return elementwise(kFlopsPerTranspose, d.rows, d.cols);
}

OpCost GeluOp::getFlops() {
  return elementwise(kFlopsPerGelu, dimsOf(*this).n);
}

OpCost SwiGluOp::getFlops() {
  return elementwise(kFlopsPerSwiGlu, dimsOf(*this).n);
}

OpCost RopeOp::getFlops() {
  auto d = dimsOf(*this);
  return elementwise(kFlopsPerRope, d.rows, d.width);
}

OpCost LayerNormOp::getFlops() {
  auto d = dimsOf(*this);
  return elementwise(kFlopsPerLayerNorm, d.rows, d.n);
}

OpCost RmsNormOp::getFlops() {
  auto d = dimsOf(*this);
  return elementwise(kFlopsPerRmsNorm, d.rows, d.n);
}

OpCost EmbeddingOp::getFlops() {
  auto d = dimsOf(*this);
  return elementwise(kFlopsPerEmbedding, d.count, d.h);
}

OpCost CausalAttentionOp::getFlops() {
  auto d = dimsOf(*this);
  return attention(d.batch, d.seq, d.hidden, d.heads, 4,
                   kFlopsPerAttentionScore);
}

int64_t CausalAttentionOp::getWorkspaceBytes() {
  return zbc_rt_causal_attention_workspace(dimsOf(*this).seq,
                                           elementBytesOf(getQkv()));
}

OpCost AttentionOp::getFlops() {
  auto d = dimsOf(*this);
  return attention(d.batch, d.seq, saturatingProduct({d.heads, d.head_dim}),
                   d.heads, 4, kFlopsPerAttentionScore);
}

int64_t AttentionOp::getWorkspaceBytes() {
  auto d = dimsOf(*this);
  return zbc_rt_attention_workspace(d.batch, d.seq, d.heads, d.head_dim,
                                    elementBytesOf(getQ()));
}

OpCost CrossEntropyOp::getFlops() {
  auto d = dimsOf(*this);
  return elementwise(kFlopsPerCrossEntropyLogit, d.rows, d.classes);
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

OpCost FillOp::getFlops() {
  return elementwise(kFlopsPerFill, dimsOf(*this).n);
}

// dx = dy W^T: [rows, out] x [out, in].
OpCost LinearGradInputOp::getFlops() {
  auto d = dimsOf(*this);
  return matmul(1, d.rows, d.out, d.in);
}

// dW = x^T dy: [in, rows] x [rows, out].
OpCost LinearGradWeightOp::getFlops() {
  auto d = dimsOf(*this);
  return matmul(1, d.in, d.rows, d.out);
}

// dA = dC B^T: [.., M, N] x [.., N, K].
OpCost MatmulGradLhsOp::getFlops() {
  auto d = dimsOf(*this);
  return matmul(d.batch, d.m, d.n, d.k);
}

// dB = A^T dC: [.., K, M] x [.., M, N].
OpCost MatmulGradRhsOp::getFlops() {
  auto d = dimsOf(*this);
  return matmul(d.batch, d.k, d.m, d.n);
}

OpCost BiasGradOp::getFlops() {
  auto d = dimsOf(*this);
  return elementwise(kFlopsPerBiasGrad, d.rows, d.n);
}

OpCost ReluGradOp::getFlops() {
  return elementwise(kFlopsPerReluGrad, dimsOf(*this).n);
}

OpCost GeluGradOp::getFlops() {
  return elementwise(kFlopsPerGeluGrad, dimsOf(*this).n);
}

OpCost RopeGradOp::getFlops() {
  auto d = dimsOf(*this);
  return elementwise(kFlopsPerRope, d.rows, d.width);
}

OpCost SwiGluGradGateOp::getFlops() {
  return elementwise(kFlopsPerSwiGluGradGate, dimsOf(*this).n);
}

OpCost SwiGluGradUpOp::getFlops() {
  return elementwise(kFlopsPerSwiGluGradUp, dimsOf(*this).n);
}

OpCost LayerNormGradInputOp::getFlops() {
  auto d = dimsOf(*this);
  return elementwise(kFlopsPerLayerNormGradInput, d.rows, d.n);
}

OpCost LayerNormGradGammaOp::getFlops() {
  auto d = dimsOf(*this);
  return elementwise(kFlopsPerLayerNormGradGamma, d.rows, d.n);
}

OpCost RmsNormGradInputOp::getFlops() {
  auto d = dimsOf(*this);
  return elementwise(kFlopsPerRmsNormGradInput, d.rows, d.n);
}

OpCost RmsNormGradWeightOp::getFlops() {
  auto d = dimsOf(*this);
  return elementwise(kFlopsPerRmsNormGradWeight, d.rows, d.n);
}

OpCost EmbeddingGradOp::getFlops() {
  auto d = dimsOf(*this);
  return elementwise(kFlopsPerEmbeddingGrad, d.count, d.h);
}

OpCost CausalAttentionGradOp::getFlops() {
  auto d = dimsOf(*this);
  return attention(d.batch, d.seq, d.hidden, d.heads, 8,
                   kFlopsPerAttentionGradScore);
}

int64_t CausalAttentionGradOp::getWorkspaceBytes() {
  return zbc_rt_causal_attention_grad_workspace(dimsOf(*this).seq,
                                                elementBytesOf(getQkv()));
}

OpCost AttentionGradOp::getFlops() {
  auto d = dimsOf(*this);
  return attention(d.batch, d.seq, saturatingProduct({d.heads, d.head_dim}),
                   d.heads, 8, kFlopsPerAttentionGradScore);
}

int64_t AttentionGradOp::getWorkspaceBytes() {
  auto d = dimsOf(*this);
  return zbc_rt_attention_grad_workspace(d.batch, d.seq, d.heads, d.head_dim,
                                         elementBytesOf(getQ()));
}

// The vocabulary shard's passes: a row's statistics read its logits as
// zb.cross_entropy does; its gradient as zb.cross_entropy_grad; the loss
// from merged statistics is per row.
OpCost VocabStatsOp::getFlops() {
  auto d = dimsOf(*this);
  return elementwise(kFlopsPerCrossEntropyLogit, d.rows, d.columns);
}

OpCost VocabLossOp::getFlops() {
  auto d = dimsOf(*this);
  return elementwise(kFlopsPerCrossEntropyLogit, d.rows, 1);
}

OpCost VocabGradOp::getFlops() {
  auto d = dimsOf(*this);
  return elementwise(kFlopsPerCrossEntropyGradLogit, d.rows, d.columns);
}

OpCost CrossEntropyGradOp::getFlops() {
  auto d = dimsOf(*this);
  return elementwise(kFlopsPerCrossEntropyGradLogit, d.rows, d.classes);
}
