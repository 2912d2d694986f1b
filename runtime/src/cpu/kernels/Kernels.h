//===- Kernels.h - fp32 CPU kernels of the zb ops ----------------*- C++ -*-===//
//
// The CPU backend's kernels: one function per zb tensor op (model level and
// backward), plus gradient accumulation and the SGD-with-momentum and AdamW
// optimizer steps, on raw fp32 pointers. The math of each kernel is the math
// the op's description in ZBModelOps.td / ZBBackwardOps.td states, as the
// reference interpreter (test/lib/Interpreter, zbc::interp::kernels) computes
// it; the interpreter is the oracle, and test/Runtime/KernelConformanceTest.cpp
// and OptimizerConformanceTest.cpp hold every function here to it. GEMMs go to
// OpenBLAS (cblas_sgemm); everything else is plain loops that GCC vectorises.
//
// Contract, for every function:
//  - Tensors are f32 (indices and labels int32 or int64), row-major and
//    contiguous; shapes are passed as dims, "rows" is the product of all
//    leading dims. Outputs never overlap inputs, except that the
//    elementwise kernels (biasAdd, add, relu, gelu, reluGrad, geluGrad) may
//    run in place: their output may be the very pointer of an input of the
//    output's shape (never a partial overlap; Note [In-place elementwise
//    kernels] in Kernels.cpp).
//  - No allocation: the only memory a kernel touches is its arguments and the
//    caller's `workspace` (the arena is the only memory a training step
//    touches). No exceptions, no global state.
//  - Single-threaded: the caller keeps OpenBLAS at one thread (one rank per
//    core); no kernel changes it.
//  - Index values are data, not shape: the kernels that read indices or
//    labels check every one before writing anything, and on a bad one return
//    false with `*error` filled and their outputs untouched.
//
// Shapes themselves are trusted: they are the verified IR's (zb verifiers
// check them), so no kernel checks them.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_CPU_KERNELS_H
#define ZBC_RUNTIME_CPU_KERNELS_H

#include "../../KernelMath.h"
#include "zbc/contracts/OptimizerConfig.h"

#include <cstdint>

namespace zbc::rt::cpu {

/// The first bad index or label a kernel found: its flat (row-major)
/// position in the index tensor, its value, and the bound it must be below
/// (values must lie in [0, bound)).
struct IndexError {
  int64_t position = 0;
  int64_t value = 0;
  int64_t bound = 0;
};

/// The document ids of attention's rows ([B, S], int32 or int64), or none:
/// query i attends to the keys j <= i with no change of id between j and i
/// (Note [Document masks] in dialect/docs/ZB.md), so each run of equal ids is
/// a causal attention of its own, and the work is the sum of the runs'
/// squared lengths instead of S^2.
struct DocumentIds {
  const void *ids = nullptr; // null: one document per row (plain causal)
  bool wide = true;          // int64 ids, else int32

  /// Calls run(start, end) for each run of equal ids of row `b` of S, in
  /// order; [0, S) without ids.
  template <typename Run> void forEachRun(int64_t b, int64_t S, Run &&run) const {
    int64_t start = 0;
    for (int64_t i = 1; i <= S; ++i)
      if (i == S || (ids && idAt(b * S + i) != idAt(b * S + i - 1))) {
        run(start, i);
        start = i;
      }
  }
  int64_t idAt(int64_t p) const {
    return wide ? static_cast<const int64_t *>(ids)[p]
                : static_cast<const int32_t *>(ids)[p];
  }
};

//===----------------------------------------------------------------------===//
// Model-level ops
//===----------------------------------------------------------------------===//

/// zb.linear: y[rows, out] = x[rows, in] @ w[in, out], or @ w[out, in]^T
/// with `weightOutIn` (PyTorch's layout).
void linear(const float *x, const float *w, float *y, int64_t rows, int64_t in,
            int64_t out, bool weightOutIn = false) noexcept;
/// zb.matmul: for each of `batch` matrices, c[M, N] = a[M, K] @ b[K, N].
void matmul(const float *a, const float *b, float *c, int64_t batch, int64_t M,
            int64_t K, int64_t N) noexcept;
/// zb.bias_add: y[r, i] = x[r, i] + bias[i], x and y [rows, n].
void biasAdd(const float *x, const float *bias, float *y, int64_t rows,
             int64_t n) noexcept;
/// zb.add: y = a + b, elementwise over n.
void add(const float *a, const float *b, float *y, int64_t n) noexcept;
/// zb.relu: y = max(x, 0) (x > 0 ? x : 0, so -0 and NaN give +0).
void relu(const float *x, float *y, int64_t n) noexcept;
/// zb.transpose: y [cols, rows] = x [rows, cols]^T (in tiles, so that both
/// sides stay in cache).
void transpose(const float *x, float *y, int64_t rows, int64_t cols) noexcept;
/// zb.gelu, the tanh form: y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
void gelu(const float *x, float *y, int64_t n) noexcept;
/// zb.layernorm over the last dim of x [rows, n]: gamma * (x - mean) * rstd
/// + beta, rstd = 1 / sqrt(biased variance + epsilon).
void layerNorm(const float *x, const float *gamma, const float *beta, float *y,
               int64_t rows, int64_t n, float epsilon) noexcept;
/// zb.swiglu: y = silu(gate) * up, silu(g) = g / (1 + e^-g).
void swiGlu(const float *gate, const float *up, float *y, int64_t n) noexcept;
/// zb.rmsnorm over the last dim of x [rows, n]: weight * (x * rstd), rstd =
/// 1 / sqrt(mean(x^2) + epsilon).
void rmsNorm(const float *x, const float *weight, float *y, int64_t rows,
             int64_t n, float epsilon) noexcept;
/// zb.rope (zb.rope_grad when `inverse`, the rotation by minus the angle):
/// x and y [rows, width] hold width / headDim heads; pair (j, j + headDim /
/// 2) of each is rotated by positions[row] * inv_freq[j] (Note [RoPE
/// frequencies]), the sines and cosines in double and rounded once. headDim
/// is even and at most kMaxRopeHeadDim; y may be x.
constexpr int64_t kMaxRopeHeadDim = 256;
template <typename I>
void rope(const float *x, const I *positions, float *y, int64_t rows,
          int64_t width, int64_t headDim, const math::RopeScaling &scaling,
          bool inverse) noexcept;
/// zb.embedding: y[p, :] = table[indices[p], :] for p < count; table
/// [vocab, h], y [count, h]. False if an index lies outside [0, vocab).
template <typename I>
bool embedding(const I *indices, const float *table, float *y, int64_t count,
               int64_t vocab, int64_t h, IndexError *error) noexcept;

/// Floats of workspace causalAttention needs: one S x S score matrix.
constexpr int64_t causalAttentionWorkspace(int64_t S) { return S * S; }

/// zb.causal_attention: qkv [B, S, 3H] holds q, k and v side by side along
/// the last dim (q in [0, H), k in [H, 2H), v in [2H, 3H)); head `hd` of
/// each is the slice [hd * d, (hd + 1) * d) of it, d = H / heads. Query i
/// attends to keys 0..i with scores q.k / sqrt(d) and a max-subtracted
/// softmax; out [B, S, H] holds head `hd`'s result in the same slice.
/// `workspace` holds causalAttentionWorkspace(S) floats. With `documents`,
/// each run of a row's ids is attended as a sequence of its own.
void causalAttention(const float *qkv, float *out, float *workspace, int64_t B,
                     int64_t S, int64_t H, int64_t heads,
                     DocumentIds documents = {}) noexcept;

/// zb.attention: causal grouped-query attention. q and out [B, S, heads *
/// d], k and v [B, S, kvHeads * d]; query head h attends with kv head h /
/// (heads / kvHeads), as causalAttention does with its own. `workspace`
/// holds causalAttentionWorkspace(S) floats.
void attention(const float *q, const float *k, const float *v, float *out,
               float *workspace, int64_t B, int64_t S, int64_t heads,
               int64_t kvHeads, int64_t d, DocumentIds documents = {}) noexcept;

/// zb.cross_entropy: *loss = mean over the label positions r whose label is
/// not `ignoreIndex` of logsumexp(logits[r, :]) - logits[r, labels[r]],
/// logits [rows, classes]; 0 when every label is ignored. False if a label
/// lies outside [0, classes) and is not ignoreIndex.
template <typename I>
bool crossEntropy(const float *logits, const I *labels, float *loss,
                  int64_t rows, int64_t classes, int64_t ignoreIndex,
                  IndexError *error) noexcept;

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

/// zb.fill: y[i] = value for i < n.
void fill(float *y, int64_t n, float value) noexcept;
/// zb.linear_grad_input: dx[rows, in] = dy[rows, out] @ w[in, out]^T (or
/// @ w[out, in] with `weightOutIn`).
void linearGradInput(const float *dy, const float *w, float *dx, int64_t rows,
                     int64_t in, int64_t out, bool weightOutIn = false) noexcept;
/// zb.linear_grad_weight: dw[in, out] = x[rows, in]^T @ dy[rows, out] (with
/// `weightOutIn`, dw[out, in] = dy^T @ x), written, not accumulated.
void linearGradWeight(const float *x, const float *dy, float *dw, int64_t rows,
                      int64_t in, int64_t out, bool weightOutIn = false) noexcept;
/// zb.matmul_grad_lhs: per batch, da[M, K] = dc[M, N] @ b[K, N]^T.
void matmulGradLhs(const float *dc, const float *b, float *da, int64_t batch,
                   int64_t M, int64_t K, int64_t N) noexcept;
/// zb.matmul_grad_rhs: per batch, db[K, N] = a[M, K]^T @ dc[M, N].
void matmulGradRhs(const float *a, const float *dc, float *db, int64_t batch,
                   int64_t M, int64_t K, int64_t N) noexcept;
/// zb.bias_grad (also a LayerNorm's beta gradient): db[i] = sum over rows of
/// dy[r, i].
void biasGrad(const float *dy, float *db, int64_t rows, int64_t n) noexcept;
/// zb.relu_grad: dx = x > 0 ? dy : 0.
void reluGrad(const float *dy, const float *x, float *dx, int64_t n) noexcept;
/// zb.gelu_grad: dx = dy * gelu'(x), the exact derivative of the tanh form.
void geluGrad(const float *dy, const float *x, float *dx, int64_t n) noexcept;
/// zb.layernorm_grad_input: with xhat = (x - mean) * rstd (recomputed from x)
/// and g = dy * gamma, dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).
void layerNormGradInput(const float *dy, const float *x, const float *gamma,
                        float *dx, int64_t rows, int64_t n,
                        float epsilon) noexcept;
/// zb.layernorm_grad_gamma: dgamma[i] = sum over rows of dy * xhat.
void layerNormGradGamma(const float *dy, const float *x, float *dgamma,
                        int64_t rows, int64_t n, float epsilon) noexcept;
/// zb.swiglu_grad_gate: dgate = dy * up * silu'(gate); zb.swiglu_grad_up:
/// dup = dy * silu(gate).
void swiGluGradGate(const float *dy, const float *gate, const float *up,
                    float *dgate, int64_t n) noexcept;
void swiGluGradUp(const float *dy, const float *gate, float *dup,
                  int64_t n) noexcept;
/// zb.rmsnorm_grad_input: with xhat = x * rstd (rstd recomputed from x) and
/// g = dy * weight, dx = rstd * (g - xhat * mean(g * xhat)).
void rmsNormGradInput(const float *dy, const float *x, const float *weight,
                      float *dx, int64_t rows, int64_t n,
                      float epsilon) noexcept;
/// zb.rmsnorm_grad_weight: dweight[i] = sum over rows of dy * xhat.
void rmsNormGradWeight(const float *dy, const float *x, float *dweight,
                       int64_t rows, int64_t n, float epsilon) noexcept;
/// zb.embedding_grad: zeroes dtable [vocab, h], then adds dy[p, :] into row
/// indices[p] for p < count. False if an index lies outside [0, vocab).
template <typename I>
bool embeddingGrad(const I *indices, const float *dy, float *dtable,
                   int64_t count, int64_t vocab, int64_t h,
                   IndexError *error) noexcept;

/// Floats of workspace causalAttentionGrad needs: the probabilities P and
/// dP (reused for dS), S x S each.
constexpr int64_t causalAttentionGradWorkspace(int64_t S) { return 2 * S * S; }

/// zb.causal_attention_grad: dqkv [B, S, 3H] (packed like qkv) from dout
/// [B, S, H], with P recomputed from qkv as causalAttention computes it:
/// dV = P^T dO, dP = dO V^T, dS = P * (dP - rowsum(dP * P)),
/// dQ = dS K / sqrt(d), dK = dS^T Q / sqrt(d). Every element of dqkv is
/// written. `workspace` holds causalAttentionGradWorkspace(S) floats.
void causalAttentionGrad(const float *dout, const float *qkv, float *dqkv,
                         float *workspace, int64_t B, int64_t S, int64_t H,
                         int64_t heads, DocumentIds documents = {}) noexcept;

/// zb.attention_grad: dq, dk and dv (shaped as q, k and v) from dout, as
/// causalAttentionGrad per query head; a kv head's dk and dv sum over its
/// group. `workspace` holds causalAttentionGradWorkspace(S) floats.
void attentionGrad(const float *dout, const float *q, const float *k,
                   const float *v, float *dq, float *dk, float *dv,
                   float *workspace, int64_t B, int64_t S, int64_t heads,
                   int64_t kvHeads, int64_t d,
                   DocumentIds documents = {}) noexcept;

/// zb.cross_entropy_grad: dlogits[r, c] = (*dloss / N) *
/// (softmax(logits[r, :])[c] - (c == labels[r])), N the labels that are not
/// `ignoreIndex`; the rows of ignored labels are 0. False if a label lies
/// outside [0, classes) and is not ignoreIndex.
template <typename I>
bool crossEntropyGrad(const float *logits, const I *labels, const float *dloss,
                      float *dlogits, int64_t rows, int64_t classes,
                      int64_t ignoreIndex, IndexError *error) noexcept;

//===----------------------------------------------------------------------===//
// The softmax cross-entropy over vocabulary shards
//===----------------------------------------------------------------------===//

// Note [Softmax over vocabulary shards] (zbc/contracts/VocabShards.h): a
// rank's logits [rows, shardRows] are the columns [first, first +
// shardRows) of a vocabulary of `vocab`; labels [rows] name columns of the
// whole vocabulary. The kernels that read labels return false, writing
// nothing, on one outside [0, vocab) that is not `ignoreIndex`.

/// Each row's statistics over this shard: max[r] = m, logSum[r] = log sum
/// exp(z - m), target[r] = z at the label where this shard holds it, else 0.
template <typename I>
bool vocabShardStats(const float *logits, const I *labels, float *max,
                     float *logSum, float *target, int64_t rows,
                     int64_t shardRows, int64_t first, int64_t vocab,
                     int64_t ignoreIndex, IndexError *error) noexcept;

/// This shard's term of each row's sum of exponentials once the maximum
/// over the shards is known: sumExp[r] = exp(max[r] + logSum[r] -
/// globalMax[r]).
void vocabShardSums(const float *max, const float *logSum,
                    const float *globalMax, float *sumExp,
                    int64_t rows) noexcept;

/// *loss = the mean over the rows whose label is not `ignoreIndex` of
/// globalMax + log sumExp - target, each summed over the shards; 0 when
/// every label is ignored: zb.cross_entropy of the whole logits.
template <typename I>
bool vocabShardLoss(const float *globalMax, const float *sumExp,
                    const float *target, const I *labels, float *loss,
                    int64_t rows, int64_t vocab, int64_t ignoreIndex,
                    IndexError *error) noexcept;

/// This shard's columns of zb.cross_entropy_grad of the whole logits:
/// dlogits[r, c] = (*dloss / N) (exp(z - globalMax - log sumExp) - (first
/// + c == labels[r])), N the labels that are not `ignoreIndex`; the rows
/// of ignored labels are 0.
template <typename I>
bool vocabShardGrad(const float *logits, const I *labels,
                    const float *globalMax, const float *sumExp,
                    const float *dloss, float *dlogits, int64_t rows,
                    int64_t shardRows, int64_t first, int64_t vocab,
                    int64_t ignoreIndex, IndexError *error) noexcept;

//===----------------------------------------------------------------------===//
// Gradient accumulation and optimizers
//===----------------------------------------------------------------------===//

/// acc[i] += x[i] (microbatch gradient accumulation).
void accumulate(float *acc, const float *x, int64_t n) noexcept;

/// torch.optim.SGD with momentum (no dampening, no Nesterov):
/// OptimizerConfig.h's SgdConfig, shared by every backend.
using zbc::rt::SgdConfig;

/// One SGD step over n elements: g = grad * gradScale (+ weightDecay * param
/// when weightDecay != 0, PyTorch's coupled L2), momentum = mu * momentum + g,
/// param -= lr * momentum. The momentum buffer starts at zero, so the first
/// step leaves it equal to g, as PyTorch's does.
void sgdMomentum(float *param, const float *grad, float *momentum, int64_t n,
                 const SgdConfig &config, float gradScale) noexcept;

/// torch.optim.AdamW (amsgrad off): OptimizerConfig.h's AdamWConfig.
using zbc::rt::AdamWConfig;

/// One AdamW step over n elements, `step` 1-based, as torch.optim.AdamW:
/// g = grad * gradScale; param *= 1 - lr * wd; m = b1 m + (1 - b1) g;
/// v = b2 v + (1 - b2) g g; param -= lr * mhat / (sqrt(vhat) + eps) with
/// mhat = m / (1 - b1^step), vhat = v / (1 - b2^step). Evaluated in
/// PyTorch's order: the per-step scalars lr / (1 - b1^step) and
/// sqrt(1 - b2^step) in double, then param -= stepSize * (m / (sqrt(v) /
/// sqrt(bc2) + eps)) in float. m and v start at zero.
void adamw(float *param, const float *grad, float *m, float *v, int64_t n,
           const AdamWConfig &config, int64_t step, float gradScale) noexcept;

// The index-reading kernels exist for int32 and int64 indices (Kernels.cpp).
extern template bool embedding(const int32_t *, const float *, float *,
                               int64_t, int64_t, int64_t,
                               IndexError *) noexcept;
extern template bool embedding(const int64_t *, const float *, float *,
                               int64_t, int64_t, int64_t,
                               IndexError *) noexcept;
extern template void rope(const float *, const int32_t *, float *, int64_t,
                         int64_t, int64_t, const math::RopeScaling &, bool) noexcept;
extern template void rope(const float *, const int64_t *, float *, int64_t,
                         int64_t, int64_t, const math::RopeScaling &, bool) noexcept;
extern template bool crossEntropy(const float *, const int32_t *, float *,
                                  int64_t, int64_t, int64_t,
                                  IndexError *) noexcept;
extern template bool crossEntropy(const float *, const int64_t *, float *,
                                  int64_t, int64_t, int64_t,
                                  IndexError *) noexcept;
extern template bool embeddingGrad(const int32_t *, const float *, float *,
                                   int64_t, int64_t, int64_t,
                                   IndexError *) noexcept;
extern template bool embeddingGrad(const int64_t *, const float *, float *,
                                   int64_t, int64_t, int64_t,
                                   IndexError *) noexcept;
extern template bool crossEntropyGrad(const float *, const int32_t *,
                                      const float *, float *, int64_t,
                                      int64_t, int64_t, IndexError *) noexcept;
extern template bool crossEntropyGrad(const float *, const int64_t *,
                                      const float *, float *, int64_t,
                                      int64_t, int64_t, IndexError *) noexcept;
// The vocabulary-shard kernels' instantiations, declared here (Extern:
// extern) and made in Kernels.cpp (Extern: empty).
#define ZBC_RT_VOCAB_SHARD_KERNELS(Extern, I)                                 \
  Extern template bool vocabShardStats(const float *, const I *, float *,    \
                                       float *, float *, int64_t, int64_t,   \
                                       int64_t, int64_t, int64_t,            \
                                       IndexError *) noexcept;               \
  Extern template bool vocabShardLoss(const float *, const float *,          \
                                      const float *, const I *, float *,     \
                                      int64_t, int64_t, int64_t,             \
                                      IndexError *) noexcept;                \
  Extern template bool vocabShardGrad(const float *, const I *,              \
                                      const float *, const float *,          \
                                      const float *, float *, int64_t,       \
                                      int64_t, int64_t, int64_t, int64_t,    \
                                      IndexError *) noexcept;
ZBC_RT_VOCAB_SHARD_KERNELS(extern, int32_t)
ZBC_RT_VOCAB_SHARD_KERNELS(extern, int64_t)

} // namespace zbc::rt::cpu

#endif // ZBC_RUNTIME_CPU_KERNELS_H
