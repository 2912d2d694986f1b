//===- BFloat16.h - the one rounding rule of bf16 tensors --------*- C++ -*-===//
//
// Note [bf16]
// A tensor of element type bf16 holds 16-bit bfloat values (fp32's sign and
// exponent, 7 mantissa bits). Every op that yields one computes in fp32 and
// rounds its result once, to nearest with ties to even; NaN stays a (quiet)
// NaN. The CPU backend stores bf16 buffers as these 16 bits and widens them
// to fp32 to compute (KernelCalls.cpp), the reference interpreter rounds
// each bf16 value with the same function (so it is the oracle of bf16 runs
// too), and the CUDA kernels round with __float2bfloat16_rn, which is this
// rule. Gradient accumulators, a bf16 parameter's fp32 master copy and
// optimizer state stay fp32 (Note [Master weights] in ZB.md).
//
// Header-only and dependency-free: the runtime, the interpreter and the
// tests include it.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_BFLOAT16_H
#define ZBC_RUNTIME_BFLOAT16_H

#include <cstdint>
#include <cstring>

namespace zbc::rt {

/// The bf16 bits nearest to `value` (ties to even).
inline uint16_t toBFloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0)
    return static_cast<uint16_t>((bits >> 16) | 0x0040u); // quiet NaN
  uint32_t lsb = (bits >> 16) & 1u;
  bits += 0x7fffu + lsb;
  return static_cast<uint16_t>(bits >> 16);
}

/// The fp32 value of bf16 bits (exact).
inline float fromBFloat16(uint16_t value) {
  uint32_t bits = static_cast<uint32_t>(value) << 16;
  float result;
  std::memcpy(&result, &bits, 4);
  return result;
}

/// `value` rounded to the nearest bf16, as an fp32.
inline float roundToBFloat16(float value) {
  return fromBFloat16(toBFloat16(value));
}

} // namespace zbc::rt

#endif // ZBC_RUNTIME_BFLOAT16_H
