//===- CudaKernels.h - the zb ops on an NVIDIA GPU, fp32 and bf16 -*- C++ -*-===//
//
// The CUDA backend's kernels: the same functions as the CPU backend's
// (runtime/src/cpu/kernels/Kernels.h, whose comments state each op's math),
// on device pointers, launched on a caller's stream. The CPU kernels are the
// oracle: bench/gpu/kernel-check holds every function here to them on the
// GPU.
//
// Contract, for every function:
//  - Launch only: nothing synchronises the device, nothing allocates device
//    memory (the arena and the Gemm's workspace are allocated at start-up),
//    no host allocation after the first call of a shape (the Gemm caches a
//    plan per shape).
//  - The float tensors of one call share one element type `dtype`: F32, or
//    BF16 (stored as 16-bit bfloat, computed in fp32: every kernel reads
//    bf16, does its arithmetic and reductions in fp32, and rounds its
//    results to bf16 once, to nearest even). GEMMs accumulate in fp32
//    (cuBLASLt, CUBLAS_COMPUTE_32F). Exceptions are named: gradient
//    accumulators, master weights and optimizer state are always fp32.
//  - Indices and labels are int32 or int64 (`indexType`). A kernel that
//    reads them clamps a bad one into range and records the first one it
//    met in `*error` (device memory; the runtime reads it back when the step
//    has synchronised and reports the op that wrote it).
//  - Shapes are the verified IR's and trusted, as on the CPU.
//  - Returns the launch's status (cudaGetLastError), never throws.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_CUDA_KERNELS_H
#define ZBC_RUNTIME_CUDA_KERNELS_H

#include "../../KernelMath.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <tuple>

namespace zbc::rt::cuda {

enum class Dtype : int32_t { F32 = 0, BF16 = 1 };
enum class IndexType : int32_t { I32 = 0, I64 = 1 };

/// Bytes of one element of `dtype`.
constexpr int64_t bytesOf(Dtype dtype) { return dtype == Dtype::F32 ? 4 : 2; }

/// The first bad index a kernel met (device memory, zeroed at start-up and
/// after each report). `found` is set once, by an atomic compare-and-swap.
struct DeviceIndexError {
  int32_t found;
  int32_t op; // the op of the order the launch belongs to (the caller's)
  int64_t position, value, bound;
};

/// GEMMs through cuBLASLt, row-major as the zb ops are. One per rank, made
/// at start-up: it owns the cuBLASLt handle and a workspace.
class Gemm {
public:
  /// Creates the handle and allocates `workspaceBytes` on the device.
  cudaError_t init(int64_t workspaceBytes);
  void destroy();

  /// C[batch][M, N] = op(A) @ op(B) (+ C if accumulate), all row-major;
  /// transA: A is stored [K, M]; transB: B is stored [N, K]. Strides
  /// between batch matrices are the matrices' sizes.
  cudaError_t run(Dtype dtype, bool transA, bool transB, const void *A,
                  const void *B, void *C, int64_t batch, int64_t M, int64_t K,
                  int64_t N, cudaStream_t stream);

private:
  void *handle_ = nullptr;    // cublasLtHandle_t
  void *workspace_ = nullptr; // device
  int64_t workspaceBytes_ = 0;
  struct Plan; // layouts, descriptor and the heuristic's algorithm
  std::map<std::tuple<int, bool, bool, int64_t, int64_t, int64_t, int64_t>,
           Plan *>
      plans_;
};

//===----------------------------------------------------------------------===//
// Model-level ops (Kernels.h's names; GEMM ops take the rank's Gemm)
//===----------------------------------------------------------------------===//

cudaError_t linear(Gemm &gemm, Dtype dtype, const void *x, const void *w,
                   void *y, int64_t rows, int64_t in, int64_t out,
                   bool weightOutIn, cudaStream_t stream);
cudaError_t matmul(Gemm &gemm, Dtype dtype, const void *a, const void *b,
                   void *c, int64_t batch, int64_t M, int64_t K, int64_t N,
                   cudaStream_t stream);
cudaError_t biasAdd(Dtype dtype, const void *x, const void *bias, void *y,
                    int64_t rows, int64_t n, cudaStream_t stream);
cudaError_t add(Dtype dtype, const void *a, const void *b, void *y, int64_t n,
                cudaStream_t stream);
cudaError_t relu(Dtype dtype, const void *x, void *y, int64_t n,
                 cudaStream_t stream);
cudaError_t transpose(Dtype dtype, const void *x, void *y, int64_t rows,
                      int64_t cols, cudaStream_t stream);
cudaError_t gelu(Dtype dtype, const void *x, void *y, int64_t n,
                 cudaStream_t stream);
cudaError_t swiGlu(Dtype dtype, const void *gate, const void *up, void *y,
                   int64_t n, cudaStream_t stream);
/// zb.rope, and zb.rope_grad when `inverse` (the rotation by minus the
/// angle); headDim even, at most 256.
cudaError_t rope(Dtype dtype, IndexType indexType, const void *x,
                 const void *positions, void *y, int64_t rows, int64_t width,
                 int64_t headDim, const math::RopeScaling &scaling,
                 bool inverse, cudaStream_t stream);
cudaError_t layerNorm(Dtype dtype, const void *x, const void *gamma,
                      const void *beta, void *y, int64_t rows, int64_t n,
                      float epsilon, cudaStream_t stream);
cudaError_t rmsNorm(Dtype dtype, const void *x, const void *weight, void *y,
                    int64_t rows, int64_t n, float epsilon, cudaStream_t stream);
cudaError_t embedding(Dtype dtype, IndexType indexType, const void *indices,
                      const void *table, void *y, int64_t count, int64_t vocab,
                      int64_t h, DeviceIndexError *error, int32_t op,
                      cudaStream_t stream);
/// An attention call's document ids, [B, S] of `type` in device memory, or
/// none (`ids` null: each row is one causal sequence). Query i attends to
/// the keys j <= i with no change of id between j and i (Note [Document
/// masks] in dialect/docs/ZB.md; on the GPU, Note [Document runs on the
/// GPU] in Attention.cu): each run of equal ids is a causal attention of
/// its own, and the kernels skip the work outside the runs.
struct Documents {
  const void *ids = nullptr;
  IndexType type = IndexType::I64;
};

/// `workspace` holds `workspaceBytes` (the compile-time figure: S * S
/// elements of dtype); the kernel may use less.
cudaError_t causalAttention(Dtype dtype, const void *qkv, Documents documents,
                            void *out, void *workspace, int64_t workspaceBytes,
                            int64_t B, int64_t S, int64_t H, int64_t heads,
                            cudaStream_t stream);
/// zb.attention (GroupedAttention.cu): `workspace` holds `workspaceBytes`,
/// at least attentionPackedElements elements of dtype and what
/// causalAttention needs beside them.
int64_t attentionPackedElements(int64_t B, int64_t S, int64_t heads,
                                int64_t d);
cudaError_t attention(Dtype dtype, const void *q, const void *k, const void *v,
                      Documents documents, void *out, void *workspace,
                      int64_t workspaceBytes, int64_t B, int64_t S,
                      int64_t heads, int64_t kvHeads, int64_t d,
                      cudaStream_t stream);
/// The mean over the rows whose label is not `ignoreIndex` (0 when there is
/// none); an ignored label is never an index error.
cudaError_t crossEntropy(Dtype dtype, IndexType indexType, const void *logits,
                         const void *labels, void *loss, int64_t rows,
                         int64_t classes, int64_t ignoreIndex,
                         DeviceIndexError *error, int32_t op,
                         cudaStream_t stream);

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

cudaError_t fill(Dtype dtype, void *y, int64_t n, float value,
                 cudaStream_t stream);
cudaError_t linearGradInput(Gemm &gemm, Dtype dtype, const void *dy,
                            const void *w, void *dx, int64_t rows, int64_t in,
                            int64_t out, bool weightOutIn, cudaStream_t stream);
cudaError_t linearGradWeight(Gemm &gemm, Dtype dtype, const void *x,
                             const void *dy, void *dw, int64_t rows,
                             int64_t in, int64_t out, bool weightOutIn,
                             cudaStream_t stream);
cudaError_t matmulGradLhs(Gemm &gemm, Dtype dtype, const void *dc,
                          const void *b, void *da, int64_t batch, int64_t M,
                          int64_t K, int64_t N, cudaStream_t stream);
cudaError_t matmulGradRhs(Gemm &gemm, Dtype dtype, const void *a,
                          const void *dc, void *db, int64_t batch, int64_t M,
                          int64_t K, int64_t N, cudaStream_t stream);
cudaError_t biasGrad(Dtype dtype, const void *dy, void *db, int64_t rows,
                     int64_t n, cudaStream_t stream);
cudaError_t reluGrad(Dtype dtype, const void *dy, const void *x, void *dx,
                     int64_t n, cudaStream_t stream);
cudaError_t geluGrad(Dtype dtype, const void *dy, const void *x, void *dx,
                     int64_t n, cudaStream_t stream);
cudaError_t swiGluGradGate(Dtype dtype, const void *dy, const void *gate,
                           const void *up, void *dgate, int64_t n,
                           cudaStream_t stream);
cudaError_t swiGluGradUp(Dtype dtype, const void *dy, const void *gate,
                         void *dup, int64_t n, cudaStream_t stream);
cudaError_t layerNormGradInput(Dtype dtype, const void *dy, const void *x,
                               const void *gamma, void *dx, int64_t rows,
                               int64_t n, float epsilon, cudaStream_t stream);
cudaError_t layerNormGradGamma(Dtype dtype, const void *dy, const void *x,
                               void *dgamma, int64_t rows, int64_t n,
                               float epsilon, cudaStream_t stream);
cudaError_t rmsNormGradInput(Dtype dtype, const void *dy, const void *x,
                             const void *weight, void *dx, int64_t rows,
                             int64_t n, float epsilon, cudaStream_t stream);
cudaError_t rmsNormGradWeight(Dtype dtype, const void *dy, const void *x,
                              void *dweight, int64_t rows, int64_t n,
                              float epsilon, cudaStream_t stream);
cudaError_t embeddingGrad(Dtype dtype, IndexType indexType,
                          const void *indices, const void *dy, void *dtable,
                          int64_t count, int64_t vocab, int64_t h,
                          DeviceIndexError *error, int32_t op,
                          cudaStream_t stream);
/// `workspace` holds `workspaceBytes` (2 * S * S elements of dtype).
cudaError_t causalAttentionGrad(Dtype dtype, const void *dout, const void *qkv,
                                Documents documents, void *dqkv,
                                void *workspace, int64_t workspaceBytes,
                                int64_t B, int64_t S, int64_t H, int64_t heads,
                                cudaStream_t stream);
/// `workspace` holds `workspaceBytes`: twice attentionPackedElements
/// elements of dtype and what causalAttentionGrad needs beside them.
cudaError_t attentionGrad(Dtype dtype, const void *dout, const void *q,
                          const void *k, const void *v, Documents documents,
                          void *dq, void *dk, void *dv, void *workspace,
                          int64_t workspaceBytes, int64_t B, int64_t S,
                          int64_t heads, int64_t kvHeads, int64_t d,
                          cudaStream_t stream);
/// dloss is one element of dtype. The rows of labels equal to `ignoreIndex`
/// are 0, the others are scaled by dloss / N, N the labels not ignored:
/// counted on the device first, into `counted` (one int64 of device memory
/// the caller owns, as `error`; no host synchronisation).
cudaError_t crossEntropyGrad(Dtype dtype, IndexType indexType,
                             const void *logits, const void *labels,
                             const void *dloss, void *dlogits, int64_t rows,
                             int64_t classes, int64_t ignoreIndex,
                             int64_t *counted, DeviceIndexError *error,
                             int32_t op, cudaStream_t stream);

/// The output layer over a vocabulary shard (Note [Softmax over vocabulary
/// shards]): logits [rows, columns] are the columns [first, first +
/// columns) of `vocab`; stats are the planes [m, l, t, M] of KernelTable.h.
/// vocabGrad counts the labels not ignored into `counted` first, as
/// crossEntropyGrad does.
cudaError_t vocabStats(Dtype dtype, IndexType indexType, const void *logits,
                       const void *labels, void *stats, int64_t rows,
                       int64_t columns, int64_t first, int64_t vocab,
                       int64_t ignoreIndex, DeviceIndexError *error,
                       int32_t op, cudaStream_t stream);
cudaError_t vocabLoss(Dtype dtype, IndexType indexType, const void *stats,
                      const void *labels, void *loss, int64_t rows,
                      int64_t vocab, int64_t ignoreIndex,
                      DeviceIndexError *error, int32_t op,
                      cudaStream_t stream);
cudaError_t vocabGrad(Dtype dtype, IndexType indexType, const void *logits,
                      const void *labels, const void *stats,
                      const void *dloss, void *dlogits, int64_t rows,
                      int64_t columns, int64_t first, int64_t vocab,
                      int64_t ignoreIndex, int64_t *counted,
                      DeviceIndexError *error, int32_t op,
                      cudaStream_t stream);

//===----------------------------------------------------------------------===//
// Accumulation, conversion, optimizers (fp32 state)
//===----------------------------------------------------------------------===//

/// acc[i] += x[i]: acc fp32, x of `dtype`.
cudaError_t accumulate(float *acc, Dtype dtype, const void *x, int64_t n,
                       cudaStream_t stream);
/// *sum += (double) (weight * x[0]) (the loss accumulator; x one element of
/// dtype, weight its microbatch's in the step's loss).
cudaError_t addScalar(float *sum, Dtype dtype, const void *x, float weight,
                      cudaStream_t stream);
/// y (dtype) = x (fp32), rounded to nearest even for bf16.
cudaError_t convertFromF32(Dtype dtype, const float *x, void *y, int64_t n,
                           cudaStream_t stream);
/// *sumOfSquares += sum of grad[i]^2 (fp32 products, double sum), for the
/// global gradient norm; one atomicAdd per block.
cudaError_t addSumOfSquares(const float *grad, int64_t n, double *sumOfSquares,
                            cudaStream_t stream);

/// Kernels.h's SgdConfig and AdamWConfig, and the same order of operations
/// (the per-step scalars computed on the host in double, rounded to float).
struct SgdStep {
  float lr, momentum, weightDecay, gradScale;
};
struct AdamWStep {
  float decay, b1, b2, oneMinusB1, oneMinusB2, stepSize, sqrtCorrection2,
      eps, gradScale;
};
/// One step on fp32 `weights` (the parameter, or its fp32 master copy); if
/// `copy` is non-null, the updated weights are also written to it as
/// `copyDtype` (a bf16 parameter's working copy).
cudaError_t sgdMomentum(float *weights, const float *grad, float *momentum,
                        int64_t n, const SgdStep &step, void *copy,
                        Dtype copyDtype, cudaStream_t stream);
cudaError_t adamw(float *weights, const float *grad, float *m, float *v,
                  int64_t n, const AdamWStep &step, void *copy,
                  Dtype copyDtype, cudaStream_t stream);

} // namespace zbc::rt::cuda

#endif // ZBC_RUNTIME_CUDA_KERNELS_H
