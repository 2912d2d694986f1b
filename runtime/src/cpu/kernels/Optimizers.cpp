//===- Optimizers.cpp - SGD-momentum and AdamW steps on fp32 --------------===//
//
// The optimizer steps of Kernels.h, elementwise loops in PyTorch's operation
// order (torch.optim.SGD and torch.optim.AdamW, single-tensor path). The
// per-step scalars are computed in double and rounded to float once, as
// PyTorch rounds a Python float where a float kernel reads it; the loops are
// float. The reference optimizers (zbc/Interpreter/Optimizers.h) follow the
// same order, so OptimizerConformanceTest.cpp can ask for equal bits.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include <cmath>

namespace zbc::rt::cpu {

void sgdMomentum(float *__restrict param, const float *__restrict grad,
                 float *__restrict momentum, int64_t n,
                 const SgdConfig &config, float gradScale) noexcept {
  const float lr = static_cast<float>(config.lr);
  const float mu = static_cast<float>(config.momentum);
  const float wd = static_cast<float>(config.weightDecay);
  // Two loops rather than a test per element: each vectorises.
  if (config.weightDecay != 0.0) {
    for (int64_t i = 0; i < n; ++i) {
      float g = grad[i] * gradScale + wd * param[i];
      float buf = mu * momentum[i] + g;
      momentum[i] = buf;
      param[i] = param[i] - lr * buf;
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    float g = grad[i] * gradScale;
    float buf = mu * momentum[i] + g;
    momentum[i] = buf;
    param[i] = param[i] - lr * buf;
  }
}

void adamw(float *__restrict param, const float *__restrict grad,
           float *__restrict m, float *__restrict v, int64_t n,
           const AdamWConfig &config, int64_t step, float gradScale) noexcept {
  const double steps = static_cast<double>(step);
  const double correction1 = 1.0 - std::pow(config.beta1, steps);
  const double correction2 = 1.0 - std::pow(config.beta2, steps);
  const float decay =
      static_cast<float>(1.0 - config.lr * config.weightDecay);
  const float b1 = static_cast<float>(config.beta1);
  const float b2 = static_cast<float>(config.beta2);
  const float oneMinusB1 = static_cast<float>(1.0 - config.beta1);
  const float oneMinusB2 = static_cast<float>(1.0 - config.beta2);
  const float stepSize = static_cast<float>(config.lr / correction1);
  const float sqrtCorrection2 = static_cast<float>(std::sqrt(correction2));
  const float eps = static_cast<float>(config.epsilon);
  for (int64_t i = 0; i < n; ++i) {
    float g = grad[i] * gradScale;
    float p = param[i] * decay;
    float mi = b1 * m[i] + oneMinusB1 * g;
    float vi = b2 * v[i] + oneMinusB2 * g * g;
    m[i] = mi;
    v[i] = vi;
    float denom = std::sqrt(vi) / sqrtCorrection2 + eps;
    param[i] = p - stepSize * (mi / denom);
  }
}

} // namespace zbc::rt::cpu
