//===- Optimizers.cu - SGD-momentum and AdamW steps on fp32 state ---------===//
//
// Optimizers.cpp's per-element loops, one thread per element (grid-stride),
// in the same float operations and order, with the per-step scalars the
// host computed (SgdStep, AdamWStep). Built with -fmad=false and IEEE
// division and square root (nvcc's defaults), so the updated weights and
// state are the CPU's bits. When `copy` is set, the updated weight is also
// written to it rounded to `copyDtype` (a bf16 parameter's working copy).
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

#include <type_traits>

namespace zbc::rt::cuda {
namespace {

using namespace detail;

constexpr int kThreads = 256;

template <typename C>
__device__ __forceinline__ void writeCopy(void *copy, int64_t i, float value) {
  if constexpr (!std::is_void_v<C>)
    static_cast<C *>(copy)[i] = fromFloat<C>(value);
}

template <bool WeightDecay, typename C>
__global__ void sgdKernel(float *__restrict__ weights,
                          const float *__restrict__ grad,
                          float *__restrict__ momentum, int64_t n,
                          SgdStep step, void *copy) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += stride) {
    float param = weights[i];
    float g = grad[i] * step.gradScale;
    if constexpr (WeightDecay)
      g = g + step.weightDecay * param;
    float buf = step.momentum * momentum[i] + g;
    momentum[i] = buf;
    param = param - step.lr * buf;
    weights[i] = param;
    writeCopy<C>(copy, i, param);
  }
}

template <typename C>
__global__ void adamwKernel(float *__restrict__ weights,
                            const float *__restrict__ grad,
                            float *__restrict__ m, float *__restrict__ v,
                            int64_t n, AdamWStep step, void *copy) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += stride) {
    float g = grad[i] * step.gradScale;
    float p = weights[i] * step.decay;
    float mi = step.b1 * m[i] + step.oneMinusB1 * g;
    float vi = step.b2 * v[i] + step.oneMinusB2 * g * g;
    m[i] = mi;
    v[i] = vi;
    float denom = sqrtf(vi) / step.sqrtCorrection2 + step.eps;
    p = p - step.stepSize * (mi / denom);
    weights[i] = p;
    writeCopy<C>(copy, i, p);
  }
}

/// Calls body with the copy's element type (void: no copy).
template <typename F>
void dispatchCopy(const void *copy, Dtype copyDtype, F &&body) {
  if (!copy)
    body(static_cast<void *>(nullptr));
  else if (copyDtype == Dtype::F32)
    body(static_cast<float *>(nullptr));
  else
    body(static_cast<bf16 *>(nullptr));
}

} // namespace

cudaError_t sgdMomentum(float *weights, const float *grad, float *momentum,
                        int64_t n, const SgdStep &step, void *copy,
                        Dtype copyDtype, cudaStream_t stream) {
  if (n <= 0)
    return cudaSuccess;
  const unsigned blocks = gridFor(n, kThreads);
  // Optimizers.cpp tests the configured weight decay (a double) against
  // zero; its float rounding is zero exactly when it is.
  const bool decay = step.weightDecay != 0.0f;
  dispatchCopy(copy, copyDtype, [&](auto tag) {
    using C = std::remove_pointer_t<decltype(tag)>;
    if (decay)
      sgdKernel<true, C><<<blocks, kThreads, 0, stream>>>(weights, grad,
                                                          momentum, n, step,
                                                          copy);
    else
      sgdKernel<false, C><<<blocks, kThreads, 0, stream>>>(weights, grad,
                                                           momentum, n, step,
                                                           copy);
  });
  return cudaGetLastError();
}

cudaError_t adamw(float *weights, const float *grad, float *m, float *v,
                  int64_t n, const AdamWStep &step, void *copy,
                  Dtype copyDtype, cudaStream_t stream) {
  if (n <= 0)
    return cudaSuccess;
  const unsigned blocks = gridFor(n, kThreads);
  dispatchCopy(copy, copyDtype, [&](auto tag) {
    using C = std::remove_pointer_t<decltype(tag)>;
    adamwKernel<C><<<blocks, kThreads, 0, stream>>>(weights, grad, m, v, n,
                                                    step, copy);
  });
  return cudaGetLastError();
}

} // namespace zbc::rt::cuda
