//===- OptimizerConfig.h - the optimizers' hyperparameters -------*- C++ -*-===//
//
// What an optimizer step takes besides its tensors, the same for every
// backend: the Device seam (Device.h) passes these, and each backend's
// kernels (cpu/kernels, cuda/kernels) read them. Plain C++, no backend.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_OPTIMIZERCONFIG_H
#define ZBC_RUNTIME_OPTIMIZERCONFIG_H

namespace zbc::rt {

/// torch.optim.SGD with momentum (no dampening, no Nesterov). The
/// hyperparameters are double, as PyTorch's are (Python floats); a step
/// rounds each to float where PyTorch's kernels do.
struct SgdConfig {
  double lr = 0.01;
  double momentum = 0.9;
  double weightDecay = 0.0;
};

/// torch.optim.AdamW (amsgrad off); double hyperparameters, as SgdConfig's.
struct AdamWConfig {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  double weightDecay = 0.01;
};

} // namespace zbc::rt

#endif // ZBC_RUNTIME_OPTIMIZERCONFIG_H
