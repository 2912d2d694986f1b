//===- Common.cuh - helpers shared by the CUDA kernels ------------*- CUDA -*-===//
//
// Element access (fp32 and bf16, Note [bf16]: read, compute in fp32, round
// once), launch sizing, block reductions, the index-error record and the
// CPU's exp and GELU element (KernelMath.h, the same code), for the kernel
// files of this folder. Internal: not part of CudaKernels.h.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_CUDA_KERNELS_COMMON_CUH
#define ZBC_RUNTIME_CUDA_KERNELS_COMMON_CUH

#include "CudaKernels.h"

#include "../../KernelMath.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace zbc::rt::cuda::detail {

using bf16 = __nv_bfloat16;

__device__ __forceinline__ float toFloat(float v) { return v; }
__device__ __forceinline__ float toFloat(bf16 v) { return __bfloat162float(v); }

template <typename T> __device__ __forceinline__ T fromFloat(float v);
template <> __device__ __forceinline__ float fromFloat<float>(float v) {
  return v;
}
template <> __device__ __forceinline__ bf16 fromFloat<bf16>(float v) {
  return __float2bfloat16_rn(v);
}

/// V elements of T, loaded and stored as one 16-byte access.
template <typename T, int V> struct alignas(sizeof(T) * V) Vec {
  T v[V];
};
/// Elements per 16-byte access.
template <typename T> constexpr int kVec = 16 / sizeof(T);

/// True if every pointer is aligned to `bytes`.
inline bool aligned(int64_t bytes, const void *p) {
  return reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(bytes) == 0;
}
template <typename... P>
inline bool aligned(int64_t bytes, const void *p, P... rest) {
  return aligned(bytes, p) && aligned(bytes, rest...);
}

/// Streaming multiprocessors of the current device (once per process: one
/// device per rank).
int smCount();

/// Blocks for a grid-stride loop over `work` items, `threads` per block:
/// enough to fill the device a few times over, never more than the work.
inline unsigned gridFor(int64_t work, int threads) {
  int64_t blocks = (work + threads - 1) / threads;
  int64_t cap = static_cast<int64_t>(smCount()) * 16;
  if (blocks > cap)
    blocks = cap;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks);
}

// Kernels.cpp's exp and GELU element, the same code (KernelMath.h): built
// with -fmad=false (CMakeLists.txt) they give the CPU's bits.
using math::fastExp;
using math::geluDerivativeOf;
using math::geluOf;
using math::siluDerivativeOf;
using math::siluOf;

/// Sum over a warp, the result in every lane (a fixed butterfly order).
__device__ __forceinline__ float warpSum(float v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warpMax(float v) {
  for (int o = 16; o > 0; o >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/// Sum over the block, the result in every thread; `scratch` holds 32
/// floats; blockDim.x a multiple of 32. Ends with the scratch free again.
__device__ __forceinline__ float blockSum(float v, float *scratch) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int warps = blockDim.x >> 5;
  v = warpSum(v);
  if (lane == 0)
    scratch[warp] = v;
  __syncthreads();
  float total = lane < warps ? scratch[lane] : 0.0f;
  total = warpSum(total);
  __syncthreads();
  return total;
}
__device__ __forceinline__ float blockMax(float v, float *scratch) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int warps = blockDim.x >> 5;
  v = warpMax(v);
  if (lane == 0)
    scratch[warp] = v;
  __syncthreads();
  float total = lane < warps ? scratch[lane] : -__int_as_float(0x7f800000);
  total = warpMax(total);
  __syncthreads();
  return total;
}

/// Reads index `position`, clamps it into [0, bound) and records the first
/// bad one in `*error` (one compare-and-swap decides which).
template <typename I>
__device__ __forceinline__ int64_t readIndex(const I *indices, int64_t position,
                                             int64_t bound,
                                             DeviceIndexError *error,
                                             int32_t op) {
  int64_t value = static_cast<int64_t>(indices[position]);
  if (value >= 0 && value < bound)
    return value;
  if (error && atomicCAS(&error->found, 0, 1) == 0) {
    error->op = op;
    error->position = position;
    error->value = value;
    error->bound = bound;
  }
  return value < 0 ? 0 : bound - 1;
}

} // namespace zbc::rt::cuda::detail

/// Calls `body` with the element type of `dtype` as `T` (a lambda taking a
/// type tag): float for F32, __nv_bfloat16 for BF16.
#define ZBC_CUDA_DISPATCH(dtype, ...)                                          \
  do {                                                                         \
    if ((dtype) == ::zbc::rt::cuda::Dtype::F32) {                              \
      using T = float;                                                         \
      __VA_ARGS__                                                              \
    } else {                                                                   \
      using T = ::zbc::rt::cuda::detail::bf16;                                 \
      __VA_ARGS__                                                              \
    }                                                                          \
  } while (0)

#endif // ZBC_RUNTIME_CUDA_KERNELS_COMMON_CUH
