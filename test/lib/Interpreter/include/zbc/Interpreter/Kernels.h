//===- Kernels.h - per-op math of the reference interpreter -----*- C++ -*-===//
//
// One function per zb tensor op (model level and backward), computing the
// op's result from operand tensors exactly as the op's description in
// ZBModelOps.td / ZBBackwardOps.td states it. They are plain loops, templated
// on float and double inside (Kernels*.cpp), so the precision of the operands
// is the precision of every operation, accumulations included.
//
// Preconditions (the interpreter establishes them; a direct caller must):
// operand shapes are ones the op's verifier accepts, and all float operands
// have one precision, which the result gets. Index values are data, not
// shape, so the kernels that read indices or labels check them and report a
// bad one through `error` instead of returning a tensor.
//
// Exposed so that the unit tests can check each backward kernel against
// finite differences of its forward kernel.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_INTERPRETER_KERNELS_H
#define ZBC_INTERPRETER_KERNELS_H

#include "zbc/Interpreter/Tensor.h"

#include <vector>
#include "zbc/Support/LLVM.h"

#include <string>

namespace zbc::interp::kernels {

//===----------------------------------------------------------------------===//
// Model-level ops
//===----------------------------------------------------------------------===//

/// zb.linear: x [..., in] @ w [in, out] -> [..., out]; with `weightOutIn`,
/// w is [out, in] and the product x @ w^T.
Tensor linear(const Tensor &x, const Tensor &w, bool weightOutIn = false);
/// zb.matmul: [..., M, K] x [..., K, N] -> [..., M, N], batch dims equal.
Tensor matmul(const Tensor &a, const Tensor &b);
/// zb.bias_add: x [..., N] + bias [N].
Tensor biasAdd(const Tensor &x, const Tensor &bias);
/// zb.add: elementwise a + b.
Tensor add(const Tensor &a, const Tensor &b);
/// zb.relu: max(x, 0).
Tensor relu(const Tensor &x);
/// [A, B] -> [B, A].
Tensor transpose(const Tensor &x);
/// zb.gelu: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
Tensor gelu(const Tensor &x);
/// The rotation of zb.rope and zb.rope_grad (Note [RoPE frequencies]);
/// llama3Factor 0: no scaling.
struct RopeParams {
  int64_t headDim = 0;
  double theta = 10000.0;
  double llama3Factor = 0, llama3Low = 0, llama3High = 0, llama3Original = 0;
};
/// zb.rope: x [B, S, H * headDim] rotated by positions [B, S]; `inverse`
/// rotates back (zb.rope_grad).
Tensor rope(const Tensor &x, const Tensor &positions, const RopeParams &params,
            bool inverse = false);
/// zb.swiglu: gate * sigmoid(gate) * up, elementwise.
Tensor swiGlu(const Tensor &gate, const Tensor &up);
/// zb.rmsnorm over the last dimension: w * (x * rsqrt(mean(x^2) + eps)).
Tensor rmsNorm(const Tensor &x, const Tensor &weight, double epsilon);
/// zb.layernorm over the last dimension, biased variance.
Tensor layerNorm(const Tensor &x, const Tensor &gamma, const Tensor &beta,
                 double epsilon);
/// zb.embedding: table [V, H] rows at indices [...] -> [..., H]. Fails if an
/// index lies outside [0, V).
FailureOr<Tensor> embedding(const Tensor &indices, const Tensor &table,
                            std::string &error);
/// zb.causal_attention: qkv [B, S, 3H] -> [B, S, H]; with document ids
/// [B, S], under their mask (Note [Document masks]).
Tensor causalAttention(const Tensor &qkv, int64_t heads,
                       const Tensor *documents = nullptr);
/// zb.attention: causal grouped-query attention, q [B, S, heads * d], k
/// and v [B, S, kvHeads * d] -> [B, S, heads * d]; with document ids
/// [B, S], under their mask.
Tensor attention(const Tensor &q, const Tensor &k, const Tensor &v,
                 int64_t heads, int64_t kvHeads,
                 const Tensor *documents = nullptr);
/// zb.cross_entropy: mean over the label positions whose label is not
/// `ignoreIndex` of -log softmax(logits)[label], a 0-D tensor (0 if every
/// label is ignored). Fails if a label lies outside [0, C) and is not
/// ignoreIndex.
FailureOr<Tensor> crossEntropy(const Tensor &logits, const Tensor &labels,
                               int64_t ignoreIndex, std::string &error);

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

/// zb.fill.
Tensor fill(const Shape &shape, Precision precision, double value);
/// zb.linear_grad_input: dy [..., out] @ w^T -> [..., in] (w [in, out], or
/// [out, in] with `weightOutIn`).
Tensor linearGradInput(const Tensor &dy, const Tensor &w,
                       bool weightOutIn = false);
/// zb.linear_grad_weight: x^T dy summed over leading dims -> [in, out] (its
/// transpose [out, in] with `weightOutIn`).
Tensor linearGradWeight(const Tensor &x, const Tensor &dy,
                        bool weightOutIn = false);
/// zb.matmul_grad_lhs: dC [..., M, N] @ B^T -> [..., M, K].
Tensor matmulGradLhs(const Tensor &dc, const Tensor &b);
/// zb.matmul_grad_rhs: A^T @ dC -> [..., K, N].
Tensor matmulGradRhs(const Tensor &a, const Tensor &dc);
/// zb.bias_grad: dy [..., N] summed over all but the last dim -> [N].
Tensor biasGrad(const Tensor &dy);
/// zb.relu_grad: dy * (x > 0).
Tensor reluGrad(const Tensor &dy, const Tensor &x);
/// zb.gelu_grad: dy * gelu'(x), the exact derivative of the tanh form.
Tensor geluGrad(const Tensor &dy, const Tensor &x);
/// zb.layernorm_grad_input: rstd * (g - mean(g) - xhat * mean(g * xhat)),
/// g = dy * gamma.
Tensor layerNormGradInput(const Tensor &dy, const Tensor &x,
                          const Tensor &gamma, double epsilon);
/// zb.layernorm_grad_gamma: sum of dy * xhat over all but the last dim.
Tensor layerNormGradGamma(const Tensor &dy, const Tensor &x, double epsilon);
/// zb.swiglu_grad_gate: dy * up * silu'(gate); zb.swiglu_grad_up: dy *
/// silu(gate).
Tensor swiGluGradGate(const Tensor &dy, const Tensor &gate, const Tensor &up);
Tensor swiGluGradUp(const Tensor &dy, const Tensor &gate);
/// zb.rmsnorm_grad_input: rstd * (g - xhat * mean(g * xhat)), g = dy * w.
Tensor rmsNormGradInput(const Tensor &dy, const Tensor &x, const Tensor &weight,
                        double epsilon);
/// zb.rmsnorm_grad_weight: sum of dy * xhat over all but the last dim.
Tensor rmsNormGradWeight(const Tensor &dy, const Tensor &x, double epsilon);
/// zb.embedding_grad: scatter-adds dy [..., H] into a zero [vocab, H]. Fails
/// if an index lies outside [0, vocab).
FailureOr<Tensor> embeddingGrad(const Tensor &indices, const Tensor &dy,
                                int64_t vocab, std::string &error);
/// zb.causal_attention_grad: d(qkv) from dout [B, S, H], probabilities
/// recomputed from qkv.
Tensor causalAttentionGrad(const Tensor &dout, const Tensor &qkv,
                           int64_t heads, const Tensor *documents = nullptr);
/// zb.attention_grad: dq, dk and dv from dout [B, S, heads * d],
/// probabilities recomputed from q and k.
struct AttentionGrads {
  Tensor dq, dk, dv;
};
AttentionGrads attentionGrad(const Tensor &dout, const Tensor &q,
                             const Tensor &k, const Tensor &v, int64_t heads,
                             int64_t kvHeads,
                             const Tensor *documents = nullptr);
/// zb.cross_entropy_grad: dloss * (softmax(logits) - onehot(labels)) / N,
/// N the labels that are not `ignoreIndex`, whose rows are 0. Fails as
/// crossEntropy does.
FailureOr<Tensor> crossEntropyGrad(const Tensor &logits, const Tensor &labels,
                                   const Tensor &dloss, int64_t ignoreIndex,
                                   std::string &error);

/// The output layer over a vocabulary shard (Note [Softmax over vocabulary
/// shards] in zbc/contracts/VocabShards.h): `logits` [..., R] are the
/// columns [first, first + R) of `vocab`.
/// zb.vocab_stats: planes [m, l, t, m] [4, ...] of each row. Fails on a
/// label outside [0, vocab) that is not `ignoreIndex`.
FailureOr<Tensor> vocabStats(const Tensor &logits, const Tensor &labels,
                             int64_t first, int64_t vocab, int64_t ignoreIndex,
                             std::string &error);
/// zb.reduce softmax over every shard's statistics, in the shards' order:
/// each shard's planes become [its m, S, T, M].
std::vector<Tensor> vocabMerge(const std::vector<Tensor> &stats);
/// zb.vocab_loss: the mean over the rows whose label is not `ignoreIndex`
/// of M + log S - T.
FailureOr<Tensor> vocabLoss(const Tensor &stats, const Tensor &labels,
                            int64_t vocab, int64_t ignoreIndex,
                            std::string &error);
/// zb.vocab_grad: dloss (exp(z - M - log S) - onehot) / N on the shard's
/// columns.
FailureOr<Tensor> vocabGrad(const Tensor &logits, const Tensor &labels,
                            const Tensor &stats, const Tensor &dloss,
                            int64_t first, int64_t vocab, int64_t ignoreIndex,
                            std::string &error);

} // namespace zbc::interp::kernels

#endif // ZBC_INTERPRETER_KERNELS_H
