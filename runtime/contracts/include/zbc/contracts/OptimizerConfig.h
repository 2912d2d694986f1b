//===- OptimizerConfig.h - the optimizers' hyperparameters -------*- C++ -*-===//
//
// What an optimizer step takes besides its tensors, and their defaults
// (zbc run's and the rank executables'; PyTorch's but SGD's lr): the same for every backend (the Device seam,
// runtime/src/Device.h, passes these; each backend's kernels read them) and
// for the reference interpreter, whose steps are written apart as the
// oracle but take the same hyperparameters. Plain C++.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_CONTRACTS_OPTIMIZERCONFIG_H
#define ZBC_CONTRACTS_OPTIMIZERCONFIG_H

namespace zbc::rt {

/// torch.optim.SGD (no dampening, no Nesterov), momentum 0 by default as
/// PyTorch's; the learning rate is zbc's own (PyTorch's is 1e-3). The
/// hyperparameters are double, as PyTorch's are (Python floats); a step
/// rounds each to float where PyTorch's kernels do.
struct SgdConfig {
  double lr = 0.01;
  double momentum = 0.0;
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

#endif // ZBC_CONTRACTS_OPTIMIZERCONFIG_H
