//===- Optimizers.h - reference SGD-momentum and AdamW steps ----*- C++ -*-===//
//
// The oracle of the runtime's optimizer kernels (runtime/src/cpu/kernels,
// zbc::rt::cpu::sgdMomentum and adamw): one step of torch.optim.SGD with
// momentum and of torch.optim.AdamW on interpreter tensors, as plain loops
// in the tensors' precision. The per-step scalars (learning rate, bias
// corrections, decay factor) are computed in double and rounded once to that
// precision, as PyTorch rounds a Python float where a kernel reads it; every
// elementwise operation is then in the tensors' precision, in PyTorch's
// order. The runtime kernels are written in the same order, so an F32 step
// here and there give the same bits (test/Runtime/OptimizerConformanceTest).
//
// Preconditions: all tensors are float tensors of one shape and precision.
// The state tensors (momentum, m, v) start as zeros.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_INTERPRETER_OPTIMIZERS_H
#define ZBC_INTERPRETER_OPTIMIZERS_H

#include "zbc/Interpreter/Tensor.h"
#include "zbc/contracts/OptimizerConfig.h"

#include <cstdint>

namespace zbc::interp {

/// The hyperparameters and their defaults (torch.optim.SGD with momentum,
/// no dampening, no Nesterov; torch.optim.AdamW, amsgrad off) are the
/// runtime's: one contract. The steps below are written apart from the
/// runtime's kernels, as the oracle.
using zbc::rt::AdamWConfig;
using zbc::rt::SgdConfig;

/// g = grad * gradScale (+ weightDecay * param if weightDecay != 0, coupled
/// L2); momentum = mu * momentum + g; param -= lr * momentum.
void sgdMomentumStep(Tensor &param, Tensor &momentum, const Tensor &grad,
                     const SgdConfig &config, double gradScale);

/// Step `step` (1-based): g = grad * gradScale; param *= 1 - lr * wd;
/// m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
/// param -= lr * mhat / (sqrt(vhat) + eps), mhat = m / (1 - b1^step),
/// vhat = v / (1 - b2^step), evaluated as PyTorch does:
/// param -= (lr / (1 - b1^step)) * (m / (sqrt(v) / sqrt(1 - b2^step) + eps)).
void adamwStep(Tensor &param, Tensor &m, Tensor &v, const Tensor &grad,
               const AdamWConfig &config, int64_t step, double gradScale);

} // namespace zbc::interp

#endif // ZBC_INTERPRETER_OPTIMIZERS_H
