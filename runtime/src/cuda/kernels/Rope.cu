//===- Rope.cu - rotary position embeddings (zb.rope, zb.rope_grad) ------===//
//
// Kernels.cpp's rope on the GPU: one thread per (row, pair j) computes the
// pair's inverse frequency (KernelMath.h's ropeInverseFrequency, in double),
// the angle position * inv_freq and its sine and cosine in double, rounds
// them to float once, and rotates pair j of every head of the row with
// them: the CPU's float arithmetic in the CPU's order (built with
// -fmad=false), so fp32 results agree with the CPU wherever the double sine
// and cosine round to the same floats. Positions are data the verifier
// bounds (max_positions) and any integer is a valid angle, so they are read
// as they are. In place is allowed: each thread reads its two elements
// before writing them.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

namespace zbc::rt::cuda {
namespace {

using namespace detail;

constexpr int kThreads = 256;

template <typename T, typename I>
__global__ void ropeKernel(const T *x, const I *positions, T *y, int64_t rows,
                           int64_t width, int64_t headDim,
                           math::RopeScaling scaling, bool inverse) {
  const int64_t half = headDim / 2;
  const int64_t work = rows * half;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t item = static_cast<int64_t>(blockIdx.x) * blockDim.x +
                      threadIdx.x;
       item < work; item += stride) {
    const int64_t r = item / half, j = item % half;
    const double angle = static_cast<double>(positions[r]) *
                         math::ropeInverseFrequency(j, headDim, scaling);
    double s = 0, c = 0;
    sincos(angle, &s, &c);
    const float cosine = static_cast<float>(c);
    const float sine = static_cast<float>(inverse ? -s : s);
    for (int64_t head = 0; head < width; head += headDim) {
      const int64_t at = r * width + head + j;
      const float x1 = toFloat(x[at]), x2 = toFloat(x[at + half]);
      y[at] = fromFloat<T>(x1 * cosine - x2 * sine);
      y[at + half] = fromFloat<T>(x2 * cosine + x1 * sine);
    }
  }
}

} // namespace

cudaError_t rope(Dtype dtype, IndexType indexType, const void *x,
                 const void *positions, void *y, int64_t rows, int64_t width,
                 int64_t headDim, const math::RopeScaling &scaling,
                 bool inverse, cudaStream_t stream) {
  const int64_t work = rows * (headDim / 2);
  if (work <= 0)
    return cudaSuccess;
  const unsigned blocks = gridFor(work, kThreads);
  ZBC_CUDA_DISPATCH(dtype, {
    if (indexType == IndexType::I32)
      ropeKernel<T, int32_t><<<blocks, kThreads, 0, stream>>>(
          static_cast<const T *>(x), static_cast<const int32_t *>(positions),
          static_cast<T *>(y), rows, width, headDim, scaling, inverse);
    else
      ropeKernel<T, int64_t><<<blocks, kThreads, 0, stream>>>(
          static_cast<const T *>(x), static_cast<const int64_t *>(positions),
          static_cast<T *>(y), rows, width, headDim, scaling, inverse);
  });
  return cudaGetLastError();
}

} // namespace zbc::rt::cuda
