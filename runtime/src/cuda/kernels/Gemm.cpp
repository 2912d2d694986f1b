//===- Gemm.cpp - the GEMM ops through cuBLASLt ---------------------------===//
//
// Gemm (CudaKernels.h) and the ops that are one GEMM: linear, matmul and
// their gradients. The zb ops are row-major and cuBLASLt is column-major, so
// C[M, N] = op(A) op(B) runs as C^T = op(B)^T op(A)^T: B's buffer is
// cuBLASLt's first operand, A's the second, C is N x M with ld N, and a
// row-major [r, c] buffer is a column-major c x r one. Compute type
// CUBLAS_COMPUTE_32F (never the fast-TF32 modes: fp32 stays fp32, so the GPU
// matches the CPU's sgemm to accumulation order), fp32 scale, A/B/C all of
// the call's dtype. One plan per shape and alignment class: descriptors and
// the heuristic's best algorithm, made on the shape's first call, so a step
// only looks the plan up and launches.
//
//===----------------------------------------------------------------------===//

#include "CudaKernels.h"

#include <cublasLt.h>

#include <cstdint>

namespace zbc::rt::cuda {

struct Gemm::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t first = nullptr, second = nullptr, out = nullptr;
  cublasLtMatmulAlgo_t algo{};
};

namespace {

cudaError_t toCuda(cublasStatus_t status) {
  switch (status) {
  case CUBLAS_STATUS_SUCCESS:
    return cudaSuccess;
  case CUBLAS_STATUS_ALLOC_FAILED:
    return cudaErrorMemoryAllocation;
  case CUBLAS_STATUS_INVALID_VALUE:
    return cudaErrorInvalidValue;
  case CUBLAS_STATUS_NOT_SUPPORTED:
  case CUBLAS_STATUS_ARCH_MISMATCH:
    return cudaErrorNotSupported;
  case CUBLAS_STATUS_NOT_INITIALIZED:
    return cudaErrorInitializationError;
  default:
    return cudaErrorUnknown;
  }
}

#define ZBC_CUBLAS(call)                                                       \
  do {                                                                         \
    cublasStatus_t status_ = (call);                                           \
    if (status_ != CUBLAS_STATUS_SUCCESS)                                      \
      return toCuda(status_);                                                  \
  } while (0)

/// The largest power of two up to 256 that divides every address and
/// batch stride: the alignment cuBLASLt's heuristic may assume.
int64_t alignmentOf(const void *A, const void *B, const void *C, int64_t batch,
                    int64_t strideA, int64_t strideB, int64_t strideC) {
  uint64_t bits = reinterpret_cast<uintptr_t>(A) |
                  reinterpret_cast<uintptr_t>(B) |
                  reinterpret_cast<uintptr_t>(C) | 256u;
  if (batch > 1)
    bits |= static_cast<uint64_t>(strideA) | static_cast<uint64_t>(strideB) |
            static_cast<uint64_t>(strideC);
  return static_cast<int64_t>(bits & (~bits + 1)); // lowest set bit
}

} // namespace

cudaError_t Gemm::init(int64_t workspaceBytes) {
  cublasLtHandle_t handle = nullptr;
  ZBC_CUBLAS(cublasLtCreate(&handle));
  handle_ = handle;
  workspaceBytes_ = workspaceBytes > 0 ? workspaceBytes : 0;
  if (workspaceBytes_ > 0) {
    cudaError_t err = cudaMalloc(&workspace_, workspaceBytes_);
    if (err != cudaSuccess) {
      workspace_ = nullptr;
      workspaceBytes_ = 0;
      return err;
    }
  }
  return cudaSuccess;
}

void Gemm::destroy() {
  for (auto &entry : plans_) {
    Plan *plan = entry.second;
    if (plan->desc)
      cublasLtMatmulDescDestroy(plan->desc);
    for (cublasLtMatrixLayout_t layout : {plan->first, plan->second, plan->out})
      if (layout)
        cublasLtMatrixLayoutDestroy(layout);
    delete plan;
  }
  plans_.clear();
  if (workspace_)
    cudaFree(workspace_);
  workspace_ = nullptr;
  workspaceBytes_ = 0;
  if (handle_)
    cublasLtDestroy(static_cast<cublasLtHandle_t>(handle_));
  handle_ = nullptr;
}

namespace {

/// A matrix layout of `rows` x `cols`, column-major with leading dim `ld`,
/// `batch` of them `stride` elements apart.
cublasStatus_t makeLayout(cublasLtMatrixLayout_t *layout, cudaDataType_t type,
                          int64_t rows, int64_t cols, int64_t ld,
                          int64_t batch, int64_t stride) {
  cublasStatus_t status =
      cublasLtMatrixLayoutCreate(layout, type, static_cast<uint64_t>(rows),
                                 static_cast<uint64_t>(cols), ld);
  if (status != CUBLAS_STATUS_SUCCESS || batch <= 1)
    return status;
  int32_t count = static_cast<int32_t>(batch);
  status = cublasLtMatrixLayoutSetAttribute(
      *layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count);
  if (status != CUBLAS_STATUS_SUCCESS)
    return status;
  return cublasLtMatrixLayoutSetAttribute(
      *layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
      sizeof stride);
}

} // namespace

cudaError_t Gemm::run(Dtype dtype, bool transA, bool transB, const void *A,
                      const void *B, void *C, int64_t batch, int64_t M,
                      int64_t K, int64_t N, cudaStream_t stream) {
  if (batch <= 0 || M <= 0 || N <= 0)
    return cudaSuccess;
  if (K <= 0) // an empty sum: zeros, as the CPU's gemm writes
    return cudaMemsetAsync(C, 0, batch * M * N * bytesOf(dtype), stream);

  const int64_t bytes = bytesOf(dtype);
  const int64_t alignment = alignmentOf(A, B, C, batch, M * K * bytes,
                                        K * N * bytes, M * N * bytes);
  // The alignment class rides in the key's first field (dtype in the low
  // byte), so that a plan is never run on pointers it may not assume.
  auto key = std::make_tuple(static_cast<int>(dtype) |
                                 (static_cast<int>(alignment) << 8),
                             transA, transB, batch, M, K, N);
  auto found = plans_.find(key);
  Plan *plan = nullptr;
  if (found != plans_.end()) {
    plan = found->second;
  } else {
    plan = new Plan;
    auto fail = [&](cublasStatus_t status) {
      if (plan->desc)
        cublasLtMatmulDescDestroy(plan->desc);
      for (cublasLtMatrixLayout_t layout :
           {plan->first, plan->second, plan->out})
        if (layout)
          cublasLtMatrixLayoutDestroy(layout);
      delete plan;
      return toCuda(status);
    };
    cudaDataType_t type = dtype == Dtype::F32 ? CUDA_R_32F : CUDA_R_16BF;
    cublasStatus_t status =
        cublasLtMatmulDescCreate(&plan->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    if (status != CUBLAS_STATUS_SUCCESS)
      return fail(status);
    // First operand: B's buffer. Row-major [K, N] is column-major N x K
    // (no transpose); row-major [N, K] (transB) is K x N, transposed.
    cublasOperation_t opFirst = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
    // Second operand: A's buffer. Row-major [M, K] is K x M (no transpose);
    // row-major [K, M] (transA) is M x K, transposed.
    cublasOperation_t opSecond = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
    if ((status = cublasLtMatmulDescSetAttribute(
             plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opFirst,
             sizeof opFirst)) != CUBLAS_STATUS_SUCCESS ||
        (status = cublasLtMatmulDescSetAttribute(
             plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opSecond,
             sizeof opSecond)) != CUBLAS_STATUS_SUCCESS)
      return fail(status);
    if ((status = transB ? makeLayout(&plan->first, type, K, N, K, batch, K * N)
                         : makeLayout(&plan->first, type, N, K, N, batch,
                                      K * N)) != CUBLAS_STATUS_SUCCESS ||
        (status = transA ? makeLayout(&plan->second, type, M, K, M, batch,
                                      M * K)
                         : makeLayout(&plan->second, type, K, M, K, batch,
                                      M * K)) != CUBLAS_STATUS_SUCCESS ||
        (status = makeLayout(&plan->out, type, N, M, N, batch, M * N)) !=
            CUBLAS_STATUS_SUCCESS)
      return fail(status);

    cublasLtMatmulPreference_t preference = nullptr;
    if ((status = cublasLtMatmulPreferenceCreate(&preference)) !=
        CUBLAS_STATUS_SUCCESS)
      return fail(status);
    uint64_t workspace = static_cast<uint64_t>(workspaceBytes_);
    uint32_t align = static_cast<uint32_t>(alignment);
    status = cublasLtMatmulPreferenceSetAttribute(
        preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
        sizeof workspace);
    for (cublasLtMatmulPreferenceAttributes_t attribute :
         {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
      if (status == CUBLAS_STATUS_SUCCESS)
        status = cublasLtMatmulPreferenceSetAttribute(preference, attribute,
                                                      &align, sizeof align);
    cublasLtMatmulHeuristicResult_t result{};
    int returned = 0;
    if (status == CUBLAS_STATUS_SUCCESS)
      status = cublasLtMatmulAlgoGetHeuristic(
          static_cast<cublasLtHandle_t>(handle_), plan->desc, plan->first,
          plan->second, plan->out, plan->out, preference, 1, &result,
          &returned);
    cublasLtMatmulPreferenceDestroy(preference);
    if (status != CUBLAS_STATUS_SUCCESS)
      return fail(status);
    if (returned == 0 || result.state != CUBLAS_STATUS_SUCCESS)
      return fail(CUBLAS_STATUS_NOT_SUPPORTED);
    plan->algo = result.algo;
    plans_.emplace(key, plan);
  }

  const float alpha = 1.0f, beta = 0.0f;
  ZBC_CUBLAS(cublasLtMatmul(static_cast<cublasLtHandle_t>(handle_), plan->desc,
                            &alpha, B, plan->first, A, plan->second, &beta, C,
                            plan->out, C, plan->out, &plan->algo, workspace_,
                            static_cast<size_t>(workspaceBytes_), stream));
  return cudaGetLastError();
}

//===----------------------------------------------------------------------===//
// The GEMM ops (Kernels.h's shapes, in Gemm::run's terms)
//===----------------------------------------------------------------------===//

cudaError_t linear(Gemm &gemm, Dtype dtype, const void *x, const void *w,
                   void *y, int64_t rows, int64_t in, int64_t out,
                   bool weightOutIn, cudaStream_t stream) {
  // y[rows, out] = x[rows, in] @ w[in, out], or @ w^T for w [out, in] = [N, K].
  return gemm.run(dtype, false, weightOutIn, x, w, y, 1, rows, in, out, stream);
}

cudaError_t matmul(Gemm &gemm, Dtype dtype, const void *a, const void *b,
                   void *c, int64_t batch, int64_t M, int64_t K, int64_t N,
                   cudaStream_t stream) {
  return gemm.run(dtype, false, false, a, b, c, batch, M, K, N, stream);
}

cudaError_t linearGradInput(Gemm &gemm, Dtype dtype, const void *dy,
                            const void *w, void *dx, int64_t rows, int64_t in,
                            int64_t out, bool weightOutIn,
                            cudaStream_t stream) {
  // dx[rows, in] = dy[rows, out] @ w^T, w stored [in, out] = [N, K]; or
  // dy @ w for w [out, in] = [K, N].
  return gemm.run(dtype, false, !weightOutIn, dy, w, dx, 1, rows, out, in,
                  stream);
}

cudaError_t linearGradWeight(Gemm &gemm, Dtype dtype, const void *x,
                             const void *dy, void *dw, int64_t rows,
                             int64_t in, int64_t out, bool weightOutIn,
                             cudaStream_t stream) {
  // dw[in, out] = x^T @ dy[rows, out], x stored [rows, in] = [K, M]; or
  // dw[out, in] = dy^T @ x, dy stored [rows, out] = [K, M].
  if (weightOutIn)
    return gemm.run(dtype, true, false, dy, x, dw, 1, out, rows, in, stream);
  return gemm.run(dtype, true, false, x, dy, dw, 1, in, rows, out, stream);
}

cudaError_t matmulGradLhs(Gemm &gemm, Dtype dtype, const void *dc,
                          const void *b, void *da, int64_t batch, int64_t M,
                          int64_t K, int64_t N, cudaStream_t stream) {
  // da[M, K] = dc[M, N] @ b^T, b stored [K, N].
  return gemm.run(dtype, false, true, dc, b, da, batch, M, N, K, stream);
}

cudaError_t matmulGradRhs(Gemm &gemm, Dtype dtype, const void *a,
                          const void *dc, void *db, int64_t batch, int64_t M,
                          int64_t K, int64_t N, cudaStream_t stream) {
  // db[K, N] = a^T @ dc[M, N], a stored [M, K].
  return gemm.run(dtype, true, false, a, dc, db, batch, K, M, N, stream);
}

} // namespace zbc::rt::cuda
