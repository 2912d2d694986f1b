//===- Optimizers.cpp - reference SGD-momentum and AdamW steps ------------===//
//
// The steps of Optimizers.h, templated on float and double so that the
// tensors' precision is the precision of every elementwise operation. Kept
// as plain as the formulas (one statement per PyTorch tensor op) since they
// are the oracle; the fast kernels live in the runtime.
//
//===----------------------------------------------------------------------===//

#include "zbc/Interpreter/Optimizers.h"

#include <cmath>

namespace zbc::interp {
namespace {

template <typename T>
void sgdMomentumImpl(Tensor &param, Tensor &momentum, const Tensor &grad,
                     const SgdConfig &config, double gradScale) {
  T *p = param.data<T>(), *buf = momentum.data<T>();
  const T *g = grad.data<T>();
  const T lr = static_cast<T>(config.lr);
  const T mu = static_cast<T>(config.momentum);
  const T wd = static_cast<T>(config.weightDecay);
  const T scale = static_cast<T>(gradScale);
  for (int64_t i = 0; i < param.numElements(); ++i) {
    // d_p = grad (scaled); d_p = d_p + wd * param (torch: grad.add(param,
    // alpha=wd)).
    T dp = g[i] * scale;
    if (config.weightDecay != 0.0)
      dp = dp + wd * p[i];
    // buf = buf * mu + d_p (torch: buf.mul_(momentum).add_(d_p)); with buf
    // zero this is d_p, as torch's first-step clone.
    buf[i] = mu * buf[i] + dp;
    // param = param - lr * buf (torch: param.add_(buf, alpha=-lr)).
    p[i] = p[i] - lr * buf[i];
  }
}

template <typename T>
void adamwImpl(Tensor &param, Tensor &m, Tensor &v, const Tensor &grad,
               const AdamWConfig &config, int64_t step, double gradScale) {
  T *p = param.data<T>(), *md = m.data<T>(), *vd = v.data<T>();
  const T *g = grad.data<T>();
  // The scalars, in double as torch's Python code computes them.
  double biasCorrection1 =
      1.0 - std::pow(config.beta1, static_cast<double>(step));
  double biasCorrection2 =
      1.0 - std::pow(config.beta2, static_cast<double>(step));
  const T decay = static_cast<T>(1.0 - config.lr * config.weightDecay);
  const T beta1 = static_cast<T>(config.beta1);
  const T beta2 = static_cast<T>(config.beta2);
  const T oneMinusBeta1 = static_cast<T>(1.0 - config.beta1);
  const T oneMinusBeta2 = static_cast<T>(1.0 - config.beta2);
  const T stepSize = static_cast<T>(config.lr / biasCorrection1);
  const T correction2Sqrt = static_cast<T>(std::sqrt(biasCorrection2));
  const T epsilon = static_cast<T>(config.epsilon);
  const T scale = static_cast<T>(gradScale);
  for (int64_t i = 0; i < param.numElements(); ++i) {
    T gi = g[i] * scale;
    // param.mul_(1 - lr * weight_decay)
    p[i] = p[i] * decay;
    // exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
    md[i] = beta1 * md[i] + oneMinusBeta1 * gi;
    // exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    vd[i] = beta2 * vd[i] + oneMinusBeta2 * gi * gi;
    // denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
    T denom = std::sqrt(vd[i]) / correction2Sqrt + epsilon;
    // param.addcdiv_(exp_avg, denom, value=-step_size)
    p[i] = p[i] - stepSize * (md[i] / denom);
  }
}

} // namespace

void sgdMomentumStep(Tensor &param, Tensor &momentum, const Tensor &grad,
                     const SgdConfig &config, double gradScale) {
  if (param.precision() == Precision::F32)
    sgdMomentumImpl<float>(param, momentum, grad, config, gradScale);
  else
    sgdMomentumImpl<double>(param, momentum, grad, config, gradScale);
}

void adamwStep(Tensor &param, Tensor &m, Tensor &v, const Tensor &grad,
               const AdamWConfig &config, int64_t step, double gradScale) {
  if (param.precision() == Precision::F32)
    adamwImpl<float>(param, m, v, grad, config, step, gradScale);
  else
    adamwImpl<double>(param, m, v, grad, config, step, gradScale);
}

} // namespace zbc::interp
