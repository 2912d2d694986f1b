//===- KernelMath.h - element math both backends' kernels share --*- C++ -*-===//
//
// The pieces of kernel arithmetic whose bits the CPU kernels
// (cpu/kernels/Kernels.cpp) and the CUDA kernels (cuda/kernels/) must share,
// so that the GPU matches the CPU to the bit wherever no summation order
// differs: the exp both use, the GELU and SiLU elements and their
// derivatives, and the rotary embeddings' frequencies. Each
// function is host code for GCC (which vectorises loops over it; the CPU
// library builds with -ffp-contract=off) and host-and-device code for nvcc
// (the CUDA files that use it build with -fmad=false), so the same
// operations run in the same order on both.
//
// Note [Vectorisable exp]
// glibc's expf and tanhf are calls the vectoriser cannot look into, and
// tanhf costs ~35 ns an element here: GELU by std::tanh would add ~70 ms to
// the ~105 ms forward of a GPT block at h = 512 over 1024 tokens. fastExp is
// Cephes' expf instead: x = n ln2 + r with n = round(x / ln2) (by the
// 1.5 * 2^23 trick, exact in round-to-nearest), ln2 in two parts
// (Cody-Waite), a degree-6 polynomial for e^r on |r| <= ln2 / 2 and 2^n
// built from its exponent bits; GCC vectorises all of it (SSE2 has every
// operation). Error < 1 ulp against double exp (0.99 ulp, checked on every
// float of its range). Inputs are clamped to [ln(FLT_MIN), ln(FLT_MAX)], so
// results below FLT_MIN (exp(-inf) included) come out as FLT_MIN instead of a
// denormal or 0 (harmless in a softmax sum or a logistic), nothing
// overflows, and a NaN gives NaN. Callers that would take differences of
// ones (1 + tanh, 1 - tanh^2) are written in forms that need none (see
// geluOf), so the ulp stays an ulp.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_KERNELMATH_H
#define ZBC_RUNTIME_KERNELMATH_H

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define ZBC_KERNEL_MATH __host__ __device__ __forceinline__
#else
#define ZBC_KERNEL_MATH inline
#endif

namespace zbc::rt::math {

ZBC_KERNEL_MATH float fastExp(float x) {
  constexpr float kMin = -87.3365447505531f; // ln(FLT_MIN)
  constexpr float kMax = 88.3762626647949f;  // keeps n <= 127
  x = x < kMin ? kMin : x;
  x = x > kMax ? kMax : x;
  constexpr float kRound = 12582912.0f; // 1.5 * 2^23
  float n = (x * 1.44269504088896341f + kRound) - kRound;
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // 2^n from its exponent bits; a NaN x (n NaN) takes 2^0, and p is NaN:
  // converting NaN to an integer, or shifting a negative one, is undefined.
  float whole = n == n ? n : 0.0f;
  uint32_t bits = static_cast<uint32_t>(static_cast<int32_t>(whole) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

// The constants of the tanh form of GELU (as the interpreter's kGeluScale /
// kGeluCubic, rounded to float).
constexpr float kGeluScale = 0.7978845608028654f; // sqrt(2 / pi)
constexpr float kGeluCubic = 0.044715f;

// GELU through the logistic function: 0.5 (1 + tanh u) = e q with e = e^{2u}
// and q = 1 / (1 + e). So gelu(x) = x (e q), with no 1 + tanh that would
// cancel for negative x, and (its derivative) 1 - tanh^2 u = 4 e q^2, with no
// 1 - tanh^2 that would cancel for large |x|. e stays finite (fastExp
// clamps), so e q is ~1 where e is huge, and never inf / inf. (The same
// math with t = e^{-2u} and s = 1 / (1 + t) runs half as fast on the CPU:
// GCC pushes the negation into fastExp's clamps and emits twice the code.)
ZBC_KERNEL_MATH float geluOf(float v) {
  float u = kGeluScale * (v + kGeluCubic * v * v * v);
  float e = fastExp(2.0f * u);
  float q = 1.0f / (1.0f + e);
  return v * (e * q);
}

// gelu'(x) = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) u'
//          = e q (1 + 2 x u' q), u' = c (1 + 3 a x^2), e and q as in geluOf.
ZBC_KERNEL_MATH float geluDerivativeOf(float v) {
  float u = kGeluScale * (v + kGeluCubic * v * v * v);
  float slope = kGeluScale * (1.0f + 3.0f * kGeluCubic * v * v);
  float e = fastExp(2.0f * u);
  float q = 1.0f / (1.0f + e);
  return (e * q) * (1.0f + 2.0f * v * slope * q);
}

// Note [RoPE frequencies]
// Rotary embeddings' inverse frequency of pair i of a head of d features,
// in f64 (Hugging Face's rope init): theta^(-2i/d); with Llama 3's scaling
// (factor > 0; low and high frequency factors; the original context length
// L): a wavelength 2 pi / inv_freq below L / high keeps its frequency, one
// above L / low has it divided by factor, and one between is interpolated,
// (1 - s) inv / factor + s inv with s = (L / wavelength - low) / (high -
// low) (`_compute_llama3_parameters`). The CPU and the CUDA kernels share
// it; the interpreter has its own, written from Hugging Face's code, so the
// two check each other.
struct RopeScaling {
  double theta = 10000.0;
  double factor = 0.0; // 0: no Llama 3 scaling
  double low = 0.0, high = 0.0, original = 0.0;
};

ZBC_KERNEL_MATH double ropeInverseFrequency(int64_t i, int64_t headDim,
                                            const RopeScaling &scaling) {
  double inv = 1.0 / pow(scaling.theta, static_cast<double>(2 * i) /
                                            static_cast<double>(headDim));
  if (!(scaling.factor > 0.0))
    return inv;
  double wavelength = 2.0 * 3.14159265358979323846 / inv;
  if (wavelength < scaling.original / scaling.high)
    return inv;
  if (wavelength > scaling.original / scaling.low)
    return inv / scaling.factor;
  double s = (scaling.original / wavelength - scaling.low) /
             (scaling.high - scaling.low);
  return (1.0 - s) * inv / scaling.factor + s * inv;
}

// SiLU through the logistic function: s = 1 / (1 + e^-x) by fastExp (which
// clamps, so s is never 0 / 0), silu(x) = x s and silu'(x) = s (1 + x (1 -
// s)).
ZBC_KERNEL_MATH float sigmoidOf(float v) { return 1.0f / (1.0f + fastExp(-v)); }
ZBC_KERNEL_MATH float siluOf(float v) { return v * sigmoidOf(v); }
ZBC_KERNEL_MATH float siluDerivativeOf(float v) {
  float s = sigmoidOf(v);
  return s * (1.0f + v * (1.0f - s));
}

} // namespace zbc::rt::math

#endif // ZBC_RUNTIME_KERNELMATH_H
