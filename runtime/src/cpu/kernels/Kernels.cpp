//===- Kernels.cpp - fp32 CPU kernels of the zb tensor ops ----------------===//
//
// The op kernels of Kernels.h (the optimizers are in Optimizers.cpp). GEMMs,
// attention's included, go to cblas_sgemm; the rest are loops over restrict
// pointers that GCC -O3 vectorises (the reductions through `omp simd`, see
// CMakeLists.txt). exp, and tanh through it, is a polynomial the vectoriser
// can inline (Note [Vectorisable exp]); everything else is IEEE float
// arithmetic in the order of the op's definition.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "../../KernelMath.h"

#include <cblas.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

// Note [Elementwise clones]
// The library is built for baseline x86-64 (SSE2), so that it runs on any
// machine it is copied to; the GELU loops, bound by their arithmetic, run
// 2.5x (gelu) and 3.3x (geluGrad) faster with 8-wide AVX2 (bench/gpt_layer.py).
// So GCC compiles them twice and picks the clone at load time (an ifunc):
// x86-64-v3 where the CPU has it, the baseline elsewhere. Both clones give
// the same bits: each element is computed alone, in the same order, and the
// library is built with -ffp-contract=off, so no clone fuses a multiply-add.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) &&            \
    !defined(__SANITIZE_ADDRESS__)
#define ZBC_RT_ELEMENTWISE_CLONES                                              \
  __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define ZBC_RT_ELEMENTWISE_CLONES
#endif

namespace zbc::rt::cpu {
namespace {

//===----------------------------------------------------------------------===//
// Math helpers
//===----------------------------------------------------------------------===//

// fastExp and the GELU element (Note [Vectorisable exp]) are KernelMath.h's,
// shared with the CUDA kernels.
using math::fastExp;
using math::geluDerivativeOf;
using math::geluOf;
using math::ropeInverseFrequency;
using math::siluDerivativeOf;
using math::siluOf;

} // namespace
} // namespace zbc::rt::cpu

/// The allocation counter's pause (test/e2e/AllocationCounter.c; null
/// without it): the runtime allocates nothing in a step, but OpenBLAS's
/// small-matrix GEMM on AVX-512 CPUs (its SKYLAKEX kernels) mallocs a buffer
/// per call, as MPI's calls do; both are left out of the count.
extern "C" __attribute__((weak)) void zbc_rt_test_pause_allocations(int paused);

namespace zbc::rt::cpu {
namespace {

/// C[M, N] = alpha * op(A) op(B) + beta * C, row-major (beta 0: C is
/// overwritten, whatever it held; 1: added to). Handles the degenerate
/// sizes cblas rejects or leaves undefined: nothing to do for an empty C,
/// beta * C for an empty sum. Dims must fit the cblas int.
void gemm(CBLAS_TRANSPOSE transA, CBLAS_TRANSPOSE transB, int64_t M, int64_t N,
          int64_t K, float alpha, const float *A, int64_t lda, const float *B,
          int64_t ldb, float *C, int64_t ldc, float beta = 0.0f) {
  if (M <= 0 || N <= 0)
    return;
  if (K <= 0) {
    if (beta == 0.0f)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n)
          C[m * ldc + n] = 0.0f;
    return;
  }
  if (zbc_rt_test_pause_allocations)
    zbc_rt_test_pause_allocations(1);
  cblas_sgemm(CblasRowMajor, transA, transB, static_cast<blasint>(M),
              static_cast<blasint>(N), static_cast<blasint>(K), alpha, A,
              static_cast<blasint>(lda), B, static_cast<blasint>(ldb), beta, C,
              static_cast<blasint>(ldc));
  if (zbc_rt_test_pause_allocations)
    zbc_rt_test_pause_allocations(0);
}

/// The statistics of one LayerNorm row, for xhat = ((x - shift) - mean) *
/// rstd: the row's mean is shift + mean, rstd = 1 / sqrt(biased variance +
/// epsilon).
struct RowStats {
  float shift, mean, rstd;
};

/// Two passes, as the interpreter's rowStats, but over x - x[0]: each
/// difference rounds at the row's range instead of its magnitude (and is
/// exact between values within a factor of two, Sterbenz), so a row of mean
/// 100 and spread 1 is summed as values of size 1 and its mean is never
/// rounded at ulp(100), which would cost xhat 1e-5 of its 1. The math is the
/// op's; only the rounding differs.
inline RowStats rowStats(const float *__restrict row, int64_t n,
                         float epsilon) {
  const float shift = row[0];
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i)
    sum += row[i] - shift;
  const float mean = sum / static_cast<float>(n);
  float squares = 0.0f;
#pragma omp simd reduction(+ : squares)
  for (int64_t i = 0; i < n; ++i) {
    float centered = (row[i] - shift) - mean;
    squares += centered * centered;
  }
  float rstd = 1.0f / std::sqrt(squares / static_cast<float>(n) + epsilon);
  return {shift, mean, rstd};
}

/// 1 / sqrt(mean of squares + epsilon) of one RMSNorm row.
inline float rmsRstd(const float *__restrict row, int64_t n, float epsilon) {
  float squares = 0.0f;
#pragma omp simd reduction(+ : squares)
  for (int64_t i = 0; i < n; ++i)
    squares += row[i] * row[i];
  return 1.0f / std::sqrt(squares / static_cast<float>(n) + epsilon);
}

/// log(sum(exp(row))) = max + logSum, max the row maximum, returned as the
/// two parts: callers subtract max from a logit first (exact when they are
/// close) and logSum second, so logits far from 0 (say 1000 +- 10) lose no
/// digits to an lse rounded at ulp(1000).
struct LogSumExp {
  float max, logSum;
};
inline LogSumExp logSumExp(const float *__restrict row, int64_t n) {
  float max = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : max)
  for (int64_t i = 0; i < n; ++i)
    max = row[i] > max ? row[i] : max;
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i)
    sum += fastExp(row[i] - max);
  return {max, std::log(sum)};
}


/// checkIndices for class labels, where `ignoreIndex` is also allowed (and
/// not counted); `counted` is the number of the others.
template <typename I>
bool checkLabels(const I *labels, int64_t rows, int64_t classes,
                 int64_t ignoreIndex, int64_t &counted, IndexError *error) {
  counted = 0;
  for (int64_t p = 0; p < rows; ++p) {
    int64_t value = static_cast<int64_t>(labels[p]);
    if (value == ignoreIndex)
      continue;
    if (value < 0 || value >= classes) {
      if (error)
        *error = IndexError{p, value, classes};
      return false;
    }
    ++counted;
  }
  return true;
}

/// The first of `count` indices outside [0, bound), into `error`.
template <typename I>
bool checkIndices(const I *indices, int64_t count, int64_t bound,
                  IndexError *error) {
  for (int64_t p = 0; p < count; ++p) {
    int64_t value = static_cast<int64_t>(indices[p]);
    if (value >= 0 && value < bound)
      continue;
    if (error)
      *error = IndexError{p, value, bound};
    return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

// Note [Causal attention blocks]
// Query rows are taken kAttentionBlock at a time: the rows [r0, r1) attend
// to keys [0, r1) only, so each GEMM of the block covers keys < r1 instead
// of all S (5/8 of the full S x S work at S = 256). The probabilities (and
// dS) are exactly 0 above the diagonal and are stored as such, so a GEMM that
// reads a block's upper-right corner adds exact zeros: the blocking changes
// no result beyond GEMM summation order.
constexpr int64_t kAttentionBlock = 64;

/// One query head's q and the k and v it reads, as [S, d] matrices of the
/// given row strides, and the same head's slice of the result.
struct AttentionHead {
  const float *q, *k, *v;
  int64_t ldq, ldkv; // row strides of q, and of k and v
  int64_t out;       // offset of the head's [S, d] slice in the output
  int64_t ldo;       // the output's row stride

  /// Head `hd` of batch `b` of packed qkv [B, S, 3H] (zb.causal_attention):
  /// q, k and v side by side, row stride 3H; the output [B, S, H].
  static AttentionHead packed(const float *qkv, int64_t b, int64_t hd,
                              int64_t S, int64_t H, int64_t d) {
    const float *q = qkv + b * S * 3 * H + hd * d;
    return {q, q + H, q + 2 * H, 3 * H, 3 * H, b * S * H + hd * d, H};
  }
  /// Query head `h` of batch `b` of zb.attention: q [B, S, heads * d], and
  /// kv head h / (heads / kvHeads) of k and v [B, S, kvHeads * d]; the
  /// output is shaped as q.
  static AttentionHead grouped(const float *q, const float *k, const float *v,
                               int64_t b, int64_t h, int64_t S, int64_t heads,
                               int64_t kvHeads, int64_t d) {
    int64_t g = h / (heads / kvHeads);
    int64_t qOffset = b * S * heads * d + h * d;
    int64_t kvOffset = b * S * kvHeads * d + g * d;
    return {q + qOffset,  k + kvOffset, v + kvOffset, heads * d,
            kvHeads * d,  qOffset,      heads * d};
  }
  /// The same head from row `s0` on: a document that starts there
  /// (DocumentIds) is attended as a sequence of its own.
  AttentionHead rows(int64_t s0) const {
    return {q + s0 * ldq, k + s0 * ldkv, v + s0 * ldkv, ldq, ldkv,
            out + s0 * ldo, ldo};
  }
};

/// Rows [r0, r1) of the probabilities P [S, S] of one head: scores q.k * scale
/// for keys j <= i, max-subtracted softmax over them, zeros for j > i.
void attentionProbRows(const AttentionHead &head, float *P, int64_t r0,
                       int64_t r1, int64_t S, int64_t d, float scale) {
  gemm(CblasNoTrans, CblasTrans, r1 - r0, r1, d, scale, head.q + r0 * head.ldq,
       head.ldq, head.k, head.ldkv, P + r0 * S, S);
  for (int64_t i = r0; i < r1; ++i) {
    float *__restrict row = P + i * S;
    int64_t keys = i + 1;
    float max = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : max)
    for (int64_t j = 0; j < keys; ++j)
      max = row[j] > max ? row[j] : max;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < keys; ++j) {
      row[j] = fastExp(row[j] - max);
      sum += row[j];
    }
    for (int64_t j = 0; j < keys; ++j)
      row[j] /= sum;
    for (int64_t j = keys; j < S; ++j)
      row[j] = 0.0f;
  }
}

/// One head's causal attention into out (the whole output): P one block of
/// query rows at a time (Note [Causal attention blocks]), then P V.
void attendHead(const AttentionHead &head, float *out, float *P, int64_t S,
                int64_t d, float scale) {
  for (int64_t r0 = 0; r0 < S; r0 += kAttentionBlock) {
    int64_t r1 = r0 + kAttentionBlock < S ? r0 + kAttentionBlock : S;
    attentionProbRows(head, P, r0, r1, S, d, scale);
    // out[r0:r1] = P[r0:r1, 0:r1] @ V[0:r1].
    gemm(CblasNoTrans, CblasNoTrans, r1 - r0, d, r1, 1.0f, P + r0 * S, S,
         head.v, head.ldkv, out + head.out + r0 * head.ldo, head.ldo);
  }
}

/// Where one head's gradients go: dQ, dK and dV at the head's q, k and v
/// (row strides as q's and k's); `addKv` adds dK and dV to what they hold
/// (a kv head shared by a group of query heads) instead of writing them.
struct HeadGrads {
  float *dq, *dk, *dv;
  bool addKv;
};

/// One head's attention gradients from dout (the whole output gradient),
/// the probabilities recomputed in P and dS kept beside them.
void attendHeadGrad(const AttentionHead &head, const float *dout,
                    const HeadGrads &g, float *P, float *dS, int64_t S,
                    int64_t d, float scale) {
  const float *dO = dout + head.out;
  const int64_t ldo = head.ldo;
  for (int64_t r0 = 0; r0 < S; r0 += kAttentionBlock) {
    int64_t r1 = r0 + kAttentionBlock < S ? r0 + kAttentionBlock : S;
    attentionProbRows(head, P, r0, r1, S, d, scale);
    // dP[r0:r1, 0:r1] = dO[r0:r1] @ V[0:r1]^T, then in place
    // dS = P * (dP - rowsum(dP * P)) on j <= i, 0 above.
    gemm(CblasNoTrans, CblasTrans, r1 - r0, r1, d, 1.0f, dO + r0 * ldo, ldo,
         head.v, head.ldkv, dS + r0 * S, S);
    for (int64_t i = r0; i < r1; ++i) {
      const float *__restrict p = P + i * S;
      float *__restrict row = dS + i * S;
      int64_t keys = i + 1;
      float rowDot = 0.0f;
#pragma omp simd reduction(+ : rowDot)
      for (int64_t j = 0; j < keys; ++j)
        rowDot += row[j] * p[j];
      for (int64_t j = 0; j < keys; ++j)
        row[j] = p[j] * (row[j] - rowDot);
      for (int64_t j = keys; j < S; ++j)
        row[j] = 0.0f;
    }
    // dQ[r0:r1] = scale * dS[r0:r1, 0:r1] @ K[0:r1].
    gemm(CblasNoTrans, CblasNoTrans, r1 - r0, d, r1, scale, dS + r0 * S, S,
         head.k, head.ldkv, g.dq + r0 * head.ldq, head.ldq);
  }
  // Key block [c0, c1) gets contributions from queries i >= c0 only:
  // dV[c0:c1] = P[c0:S, c0:c1]^T @ dO[c0:S] and
  // dK[c0:c1] = scale * dS[c0:S, c0:c1]^T @ Q[c0:S].
  const float beta = g.addKv ? 1.0f : 0.0f;
  for (int64_t c0 = 0; c0 < S; c0 += kAttentionBlock) {
    int64_t c1 = c0 + kAttentionBlock < S ? c0 + kAttentionBlock : S;
    gemm(CblasTrans, CblasNoTrans, c1 - c0, d, S - c0, 1.0f, P + c0 * S + c0,
         S, dO + c0 * ldo, ldo, g.dv + c0 * head.ldkv, head.ldkv, beta);
    gemm(CblasTrans, CblasNoTrans, c1 - c0, d, S - c0, scale,
         dS + c0 * S + c0, S, head.q + c0 * head.ldq, head.ldq,
         g.dk + c0 * head.ldkv, head.ldkv, beta);
  }
}

} // namespace

void causalAttention(const float *qkv, float *out, float *workspace, int64_t B,
                     int64_t S, int64_t H, int64_t heads,
                     DocumentIds documents) noexcept {
  int64_t d = H / heads;
  float scale = 1.0f / std::sqrt(static_cast<float>(d));
  for (int64_t b = 0; b < B; ++b)
    documents.forEachRun(b, S, [&](int64_t s0, int64_t s1) {
      for (int64_t hd = 0; hd < heads; ++hd)
        attendHead(AttentionHead::packed(qkv, b, hd, S, H, d).rows(s0), out,
                   workspace, s1 - s0, d, scale);
    });
}

void causalAttentionGrad(const float *dout, const float *qkv, float *dqkv,
                         float *workspace, int64_t B, int64_t S, int64_t H,
                         int64_t heads, DocumentIds documents) noexcept {
  int64_t d = H / heads;
  float scale = 1.0f / std::sqrt(static_cast<float>(d));
  for (int64_t b = 0; b < B; ++b)
    documents.forEachRun(b, S, [&](int64_t s0, int64_t s1) {
      for (int64_t hd = 0; hd < heads; ++hd) {
        AttentionHead head = AttentionHead::packed(qkv, b, hd, S, H, d).rows(s0);
        // dqkv has qkv's layout: the same offsets address dQ, dK, dV.
        HeadGrads g{dqkv + (head.q - qkv), dqkv + (head.k - qkv),
                    dqkv + (head.v - qkv), /*addKv=*/false};
        attendHeadGrad(head, dout, g, workspace, workspace + S * S, s1 - s0, d,
                       scale);
      }
    });
}

void attention(const float *q, const float *k, const float *v, float *out,
               float *workspace, int64_t B, int64_t S, int64_t heads,
               int64_t kvHeads, int64_t d, DocumentIds documents) noexcept {
  float scale = 1.0f / std::sqrt(static_cast<float>(d));
  for (int64_t b = 0; b < B; ++b)
    documents.forEachRun(b, S, [&](int64_t s0, int64_t s1) {
      for (int64_t h = 0; h < heads; ++h)
        attendHead(
            AttentionHead::grouped(q, k, v, b, h, S, heads, kvHeads, d).rows(s0),
            out, workspace, s1 - s0, d, scale);
    });
}

void attentionGrad(const float *dout, const float *q, const float *k,
                   const float *v, float *dq, float *dk, float *dv,
                   float *workspace, int64_t B, int64_t S, int64_t heads,
                   int64_t kvHeads, int64_t d, DocumentIds documents) noexcept {
  float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const int64_t group = heads / kvHeads;
  for (int64_t b = 0; b < B; ++b)
    documents.forEachRun(b, S, [&](int64_t s0, int64_t s1) {
      for (int64_t h = 0; h < heads; ++h) {
        AttentionHead head =
            AttentionHead::grouped(q, k, v, b, h, S, heads, kvHeads, d)
                .rows(s0);
        // The gradients have their inputs' layouts; the first query head of
        // a group writes its kv head's dK and dV (the run's rows), the others
        // add to them.
        HeadGrads g{dq + (head.q - q), dk + (head.k - k), dv + (head.v - v),
                    /*addKv=*/h % group != 0};
        attendHeadGrad(head, dout, g, workspace, workspace + S * S, s1 - s0, d,
                       scale);
      }
    });
}

//===----------------------------------------------------------------------===//
// GEMMs
//===----------------------------------------------------------------------===//

void linear(const float *x, const float *w, float *y, int64_t rows, int64_t in,
            int64_t out, bool weightOutIn) noexcept {
  if (weightOutIn) // w [out, in]: x @ w^T
    gemm(CblasNoTrans, CblasTrans, rows, out, in, 1.0f, x, in, w, in, y, out);
  else
    gemm(CblasNoTrans, CblasNoTrans, rows, out, in, 1.0f, x, in, w, out, y,
         out);
}

void matmul(const float *a, const float *b, float *c, int64_t batch, int64_t M,
            int64_t K, int64_t N) noexcept {
  for (int64_t n0 = 0; n0 < batch; ++n0)
    gemm(CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, a + n0 * M * K, K,
         b + n0 * K * N, N, c + n0 * M * N, N);
}

void linearGradInput(const float *dy, const float *w, float *dx, int64_t rows,
                     int64_t in, int64_t out, bool weightOutIn) noexcept {
  if (weightOutIn) // w [out, in]: dx = dy @ w
    gemm(CblasNoTrans, CblasNoTrans, rows, in, out, 1.0f, dy, out, w, in, dx,
         in);
  else
    gemm(CblasNoTrans, CblasTrans, rows, in, out, 1.0f, dy, out, w, out, dx,
         in);
}

void linearGradWeight(const float *x, const float *dy, float *dw, int64_t rows,
                      int64_t in, int64_t out, bool weightOutIn) noexcept {
  if (weightOutIn) // dw [out, in] = dy^T @ x
    gemm(CblasTrans, CblasNoTrans, out, in, rows, 1.0f, dy, out, x, in, dw,
         in);
  else
    gemm(CblasTrans, CblasNoTrans, in, out, rows, 1.0f, x, in, dy, out, dw,
         out);
}

void matmulGradLhs(const float *dc, const float *b, float *da, int64_t batch,
                   int64_t M, int64_t K, int64_t N) noexcept {
  for (int64_t n0 = 0; n0 < batch; ++n0)
    gemm(CblasNoTrans, CblasTrans, M, K, N, 1.0f, dc + n0 * M * N, N,
         b + n0 * K * N, N, da + n0 * M * K, K);
}

void matmulGradRhs(const float *a, const float *dc, float *db, int64_t batch,
                   int64_t M, int64_t K, int64_t N) noexcept {
  for (int64_t n0 = 0; n0 < batch; ++n0)
    gemm(CblasTrans, CblasNoTrans, K, N, M, 1.0f, a + n0 * M * K, K,
         dc + n0 * M * N, N, db + n0 * K * N, N);
}

//===----------------------------------------------------------------------===//
// Elementwise and row-wise forward ops
//===----------------------------------------------------------------------===//

// Note [In-place elementwise kernels]
// The elementwise kernels may run in place (an output the very pointer of an
// input, Kernels.h), so those pointers are not restrict; `omp simd` tells GCC
// what it may assume instead: no dependence between iterations, which holds
// for y[i] = f(x[i]) even when y == x, and lets it vectorise without
// runtime overlap checks.

void biasAdd(const float *x, const float *__restrict bias, float *y,
             int64_t rows, int64_t n) noexcept {
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * n;
    float *yr = y + r * n;
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      yr[i] = xr[i] + bias[i];
  }
}

void add(const float *a, const float *b, float *y, int64_t n) noexcept {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    y[i] = a[i] + b[i];
}

void transpose(const float *x, float *y, int64_t rows, int64_t cols) noexcept {
  constexpr int64_t kTile = 32;
  for (int64_t i0 = 0; i0 < rows; i0 += kTile)
    for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
      int64_t i1 = std::min(rows, i0 + kTile), j1 = std::min(cols, j0 + kTile);
      for (int64_t i = i0; i < i1; ++i)
        for (int64_t j = j0; j < j1; ++j)
          y[j * rows + i] = x[i * cols + j];
    }
}

void relu(const float *x, float *y, int64_t n) noexcept {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

// GELU: KernelMath.h's geluOf (through the logistic function).
ZBC_RT_ELEMENTWISE_CLONES
void gelu(const float *x, float *y, int64_t n) noexcept {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    y[i] = geluOf(x[i]);
  }
}

// SwiGLU: KernelMath.h's siluOf (through the logistic function).
ZBC_RT_ELEMENTWISE_CLONES
void swiGlu(const float *gate, const float *up, float *y, int64_t n) noexcept {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    y[i] = siluOf(gate[i]) * up[i];
}

// RoPE: the row's sines and cosines once (in double, as the interpreter
// computes them), then every head's pairs with them in float.
template <typename I>
void rope(const float *x, const I *positions, float *y, int64_t rows,
          int64_t width, int64_t headDim, const math::RopeScaling &scaling,
          bool inverse) noexcept {
  const int64_t half = headDim / 2;
  double invFreq[kMaxRopeHeadDim / 2];
  for (int64_t i = 0; i < half; ++i)
    invFreq[i] = ropeInverseFrequency(i, headDim, scaling);
  float cosines[kMaxRopeHeadDim / 2], sines[kMaxRopeHeadDim / 2];
  for (int64_t r = 0; r < rows; ++r) {
    const double position = static_cast<double>(positions[r]);
    for (int64_t i = 0; i < half; ++i) {
      const double angle = position * invFreq[i];
      cosines[i] = static_cast<float>(std::cos(angle));
      sines[i] = static_cast<float>(inverse ? -std::sin(angle)
                                            : std::sin(angle));
    }
    for (int64_t head = 0; head < width; head += headDim) {
      const float *xh = x + r * width + head;
      float *yh = y + r * width + head;
#pragma omp simd
      for (int64_t i = 0; i < half; ++i) {
        const float x1 = xh[i], x2 = xh[i + half];
        yh[i] = x1 * cosines[i] - x2 * sines[i];
        yh[i + half] = x2 * cosines[i] + x1 * sines[i];
      }
    }
  }
}

void layerNorm(const float *x, const float *__restrict gamma,
               const float *__restrict beta, float *y, int64_t rows, int64_t n,
               float epsilon) noexcept {
  for (int64_t r = 0; r < rows; ++r) {
    const float *__restrict xr = x + r * n;
    float *__restrict yr = y + r * n;
    RowStats st = rowStats(xr, n, epsilon);
    for (int64_t i = 0; i < n; ++i)
      yr[i] = gamma[i] * (((xr[i] - st.shift) - st.mean) * st.rstd) + beta[i];
  }
}

void rmsNorm(const float *x, const float *__restrict weight, float *y,
             int64_t rows, int64_t n, float epsilon) noexcept {
  for (int64_t r = 0; r < rows; ++r) {
    const float *__restrict xr = x + r * n;
    float *__restrict yr = y + r * n;
    const float rstd = rmsRstd(xr, n, epsilon);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      yr[i] = weight[i] * (xr[i] * rstd);
  }
}

template <typename I>
bool embedding(const I *indices, const float *table, float *y, int64_t count,
               int64_t vocab, int64_t h, IndexError *error) noexcept {
  if (!checkIndices(indices, count, vocab, error))
    return false;
  for (int64_t p = 0; p < count; ++p) {
    const float *__restrict src = table + static_cast<int64_t>(indices[p]) * h;
    float *__restrict dst = y + p * h;
    for (int64_t i = 0; i < h; ++i)
      dst[i] = src[i];
  }
  return true;
}

/// The mean over the rows whose label is not `ignoreIndex` of
/// tokenLoss(r), 0 when every label is; false on a bad label. The rows are
/// summed in double: one add per row, and the mean of a large batch then
/// carries no error of the summation order.
template <typename I, typename TokenLoss>
bool meanTokenLoss(const I *labels, float *loss, int64_t rows, int64_t classes,
                   int64_t ignoreIndex, IndexError *error,
                   TokenLoss tokenLoss) {
  int64_t counted = 0;
  if (!checkLabels(labels, rows, classes, ignoreIndex, counted, error))
    return false;
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r)
    if (static_cast<int64_t>(labels[r]) != ignoreIndex)
      total += static_cast<double>(tokenLoss(r));
  *loss = counted ? static_cast<float>(total / static_cast<double>(counted))
                  : 0.0f;
  return true;
}

template <typename I>
bool crossEntropy(const float *logits, const I *labels, float *loss,
                  int64_t rows, int64_t classes, int64_t ignoreIndex,
                  IndexError *error) noexcept {
  return meanTokenLoss(labels, loss, rows, classes, ignoreIndex, error,
                       [&](int64_t r) {
                         const float *row = logits + r * classes;
                         LogSumExp lse = logSumExp(row, classes);
                         float logit = row[static_cast<int64_t>(labels[r])];
                         return (lse.max - logit) + lse.logSum;
                       });
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

void fill(float *__restrict y, int64_t n, float value) noexcept {
  for (int64_t i = 0; i < n; ++i)
    y[i] = value;
}

void biasGrad(const float *__restrict dy, float *__restrict db, int64_t rows,
              int64_t n) noexcept {
  for (int64_t i = 0; i < n; ++i)
    db[i] = 0.0f;
  for (int64_t r = 0; r < rows; ++r) {
    const float *__restrict row = dy + r * n;
    for (int64_t i = 0; i < n; ++i)
      db[i] += row[i];
  }
}

void reluGrad(const float *dy, const float *x, float *dx, int64_t n) noexcept {
  // dy is read unconditionally, so that the select needs no masked load.
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    float g = dy[i];
    dx[i] = x[i] > 0.0f ? g : 0.0f;
  }
}

ZBC_RT_ELEMENTWISE_CLONES
void geluGrad(const float *dy, const float *x, float *dx, int64_t n) noexcept {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    dx[i] = dy[i] * geluDerivativeOf(x[i]);
}

ZBC_RT_ELEMENTWISE_CLONES
void swiGluGradGate(const float *dy, const float *gate, const float *up,
                    float *dgate, int64_t n) noexcept {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    dgate[i] = dy[i] * up[i] * siluDerivativeOf(gate[i]);
}

ZBC_RT_ELEMENTWISE_CLONES
void swiGluGradUp(const float *dy, const float *gate, float *dup,
                  int64_t n) noexcept {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    dup[i] = dy[i] * siluOf(gate[i]);
}

void layerNormGradInput(const float *dy, const float *x,
                        const float *__restrict gamma, float *dx, int64_t rows,
                        int64_t n, float epsilon) noexcept {
  for (int64_t r = 0; r < rows; ++r) {
    const float *__restrict xr = x + r * n;
    const float *__restrict dyr = dy + r * n;
    float *__restrict dxr = dx + r * n;
    RowStats st = rowStats(xr, n, epsilon);
    // g = dy * gamma and xhat are recomputed in each loop: the kernel holds
    // no row buffer.
    float sumG = 0.0f, sumGXhat = 0.0f;
#pragma omp simd reduction(+ : sumG, sumGXhat)
    for (int64_t i = 0; i < n; ++i) {
      float g = dyr[i] * gamma[i];
      sumG += g;
      sumGXhat += g * (((xr[i] - st.shift) - st.mean) * st.rstd);
    }
    float meanG = sumG / static_cast<float>(n);
    float meanGXhat = sumGXhat / static_cast<float>(n);
    for (int64_t i = 0; i < n; ++i) {
      float g = dyr[i] * gamma[i];
      float xhat = ((xr[i] - st.shift) - st.mean) * st.rstd;
      dxr[i] = st.rstd * (g - meanG - xhat * meanGXhat);
    }
  }
}

void layerNormGradGamma(const float *dy, const float *x,
                        float *__restrict dgamma, int64_t rows, int64_t n,
                        float epsilon) noexcept {
  for (int64_t i = 0; i < n; ++i)
    dgamma[i] = 0.0f;
  for (int64_t r = 0; r < rows; ++r) {
    const float *__restrict xr = x + r * n;
    const float *__restrict dyr = dy + r * n;
    RowStats st = rowStats(xr, n, epsilon);
    for (int64_t i = 0; i < n; ++i)
      dgamma[i] += dyr[i] * (((xr[i] - st.shift) - st.mean) * st.rstd);
  }
}

void rmsNormGradInput(const float *dy, const float *x,
                      const float *__restrict weight, float *dx, int64_t rows,
                      int64_t n, float epsilon) noexcept {
  for (int64_t r = 0; r < rows; ++r) {
    const float *__restrict xr = x + r * n;
    const float *__restrict dyr = dy + r * n;
    float *__restrict dxr = dx + r * n;
    const float rstd = rmsRstd(xr, n, epsilon);
    float sumGXhat = 0.0f;
#pragma omp simd reduction(+ : sumGXhat)
    for (int64_t i = 0; i < n; ++i)
      sumGXhat += (dyr[i] * weight[i]) * (xr[i] * rstd);
    const float meanGXhat = sumGXhat / static_cast<float>(n);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      dxr[i] = rstd * (dyr[i] * weight[i] - (xr[i] * rstd) * meanGXhat);
  }
}

void rmsNormGradWeight(const float *dy, const float *x,
                       float *__restrict dweight, int64_t rows, int64_t n,
                       float epsilon) noexcept {
  for (int64_t i = 0; i < n; ++i)
    dweight[i] = 0.0f;
  for (int64_t r = 0; r < rows; ++r) {
    const float *__restrict xr = x + r * n;
    const float *__restrict dyr = dy + r * n;
    const float rstd = rmsRstd(xr, n, epsilon);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      dweight[i] += dyr[i] * (xr[i] * rstd);
  }
}

template <typename I>
bool embeddingGrad(const I *indices, const float *dy, float *dtable,
                   int64_t count, int64_t vocab, int64_t h,
                   IndexError *error) noexcept {
  if (!checkIndices(indices, count, vocab, error))
    return false;
  fill(dtable, vocab * h, 0.0f);
  for (int64_t p = 0; p < count; ++p) {
    const float *__restrict src = dy + p * h;
    float *__restrict dst = dtable + static_cast<int64_t>(indices[p]) * h;
    for (int64_t i = 0; i < h; ++i)
      dst[i] += src[i];
  }
  return true;
}

/// zb.cross_entropy_grad over the columns [first, first + columns) of
/// `classes`: dlogits[r, c] = (*dloss / N) (exp(z - max - logSum) - (first +
/// c == labels[r])), N the labels that are not `ignoreIndex` (their rows
/// 0), with each row's max and log-sum from `softmaxOf(r, row)`: the row's
/// own (crossEntropyGrad), or over every shard (vocabShardGrad).
template <typename I, typename SoftmaxOf>
bool softmaxCrossEntropyGrad(const float *logits, const I *labels,
                             const float *dloss, float *dlogits, int64_t rows,
                             int64_t columns, int64_t classes, int64_t first,
                             int64_t ignoreIndex, IndexError *error,
                             SoftmaxOf softmaxOf) {
  int64_t counted = 0;
  if (!checkLabels(labels, rows, classes, ignoreIndex, counted, error))
    return false;
  float scale = counted ? *dloss / static_cast<float>(counted) : 0.0f;
  for (int64_t r = 0; r < rows; ++r) {
    const float *__restrict row = logits + r * columns;
    float *__restrict out = dlogits + r * columns;
    if (static_cast<int64_t>(labels[r]) == ignoreIndex) {
      fill(out, columns, 0.0f);
      continue;
    }
    LogSumExp lse = softmaxOf(r, row);
#pragma omp simd
    for (int64_t c = 0; c < columns; ++c)
      out[c] = scale * fastExp((row[c] - lse.max) - lse.logSum);
    int64_t label = static_cast<int64_t>(labels[r]) - first;
    if (label >= 0 && label < columns)
      out[label] = scale * (fastExp((row[label] - lse.max) - lse.logSum) - 1.0f);
  }
  return true;
}

template <typename I>
bool crossEntropyGrad(const float *logits, const I *labels, const float *dloss,
                      float *dlogits, int64_t rows, int64_t classes,
                      int64_t ignoreIndex, IndexError *error) noexcept {
  return softmaxCrossEntropyGrad(
      logits, labels, dloss, dlogits, rows, classes, classes, /*first=*/0,
      ignoreIndex, error,
      [&](int64_t, const float *row) { return logSumExp(row, classes); });
}

//===----------------------------------------------------------------------===//
// The softmax cross-entropy over vocabulary shards
//===----------------------------------------------------------------------===//

template <typename I>
bool vocabShardStats(const float *logits, const I *labels, float *max,
                     float *logSum, float *target, int64_t rows,
                     int64_t shardRows, int64_t first, int64_t vocab,
                     int64_t ignoreIndex, IndexError *error) noexcept {
  int64_t counted = 0;
  if (!checkLabels(labels, rows, vocab, ignoreIndex, counted, error))
    return false;
  for (int64_t r = 0; r < rows; ++r) {
    const float *row = logits + r * shardRows;
    LogSumExp lse = logSumExp(row, shardRows);
    max[r] = lse.max;
    logSum[r] = lse.logSum;
    int64_t column = static_cast<int64_t>(labels[r]) - first;
    bool held = static_cast<int64_t>(labels[r]) != ignoreIndex &&
                column >= 0 && column < shardRows;
    target[r] = held ? row[column] : 0.0f;
  }
  return true;
}

void vocabShardSums(const float *__restrict max,
                    const float *__restrict logSum,
                    const float *__restrict globalMax,
                    float *__restrict sumExp, int64_t rows) noexcept {
  for (int64_t r = 0; r < rows; ++r)
    sumExp[r] = fastExp((max[r] - globalMax[r]) + logSum[r]);
}

template <typename I>
bool vocabShardLoss(const float *globalMax, const float *sumExp,
                    const float *target, const I *labels, float *loss,
                    int64_t rows, int64_t vocab, int64_t ignoreIndex,
                    IndexError *error) noexcept {
  // As crossEntropy's (max - logit) + log-sum.
  return meanTokenLoss(labels, loss, rows, vocab, ignoreIndex, error,
                       [&](int64_t r) {
                         return (globalMax[r] - target[r]) +
                                std::log(sumExp[r]);
                       });
}

template <typename I>
bool vocabShardGrad(const float *logits, const I *labels,
                    const float *globalMax, const float *sumExp,
                    const float *dloss, float *dlogits, int64_t rows,
                    int64_t shardRows, int64_t first, int64_t vocab,
                    int64_t ignoreIndex, IndexError *error) noexcept {
  return softmaxCrossEntropyGrad(
      logits, labels, dloss, dlogits, rows, shardRows, vocab, first,
      ignoreIndex, error, [&](int64_t r, const float *) {
        return LogSumExp{globalMax[r], std::log(sumExp[r])};
      });
}

void accumulate(float *__restrict acc, const float *__restrict x,
                int64_t n) noexcept {
  for (int64_t i = 0; i < n; ++i)
    acc[i] += x[i];
}

//===----------------------------------------------------------------------===//
// Instantiations for int32 and int64 indices
//===----------------------------------------------------------------------===//

template bool embedding(const int32_t *, const float *, float *, int64_t,
                        int64_t, int64_t, IndexError *) noexcept;
template bool embedding(const int64_t *, const float *, float *, int64_t,
                        int64_t, int64_t, IndexError *) noexcept;
template void rope(const float *, const int32_t *, float *, int64_t, int64_t,
                  int64_t, const math::RopeScaling &, bool) noexcept;
template void rope(const float *, const int64_t *, float *, int64_t, int64_t,
                  int64_t, const math::RopeScaling &, bool) noexcept;
template bool crossEntropy(const float *, const int32_t *, float *, int64_t,
                           int64_t, int64_t, IndexError *) noexcept;
template bool crossEntropy(const float *, const int64_t *, float *, int64_t,
                           int64_t, int64_t, IndexError *) noexcept;
template bool embeddingGrad(const int32_t *, const float *, float *, int64_t,
                            int64_t, int64_t, IndexError *) noexcept;
template bool embeddingGrad(const int64_t *, const float *, float *, int64_t,
                            int64_t, int64_t, IndexError *) noexcept;
template bool crossEntropyGrad(const float *, const int32_t *, const float *,
                               float *, int64_t, int64_t, int64_t,
                               IndexError *) noexcept;
template bool crossEntropyGrad(const float *, const int64_t *, const float *,
                               float *, int64_t, int64_t, int64_t,
                               IndexError *) noexcept;

ZBC_RT_VOCAB_SHARD_KERNELS(, int32_t)
ZBC_RT_VOCAB_SHARD_KERNELS(, int64_t)

} // namespace zbc::rt::cpu
