//===- OptimizerSchedule.h - learning rate per step, gradient clipping -*- C++ -*-===//
//
// The rules around an optimizer step that the compiled ranks and the
// reference trainer (test/tools/zbc-reference) must apply identically:
//  - the learning rate of step t (0-based): linear warm-up over the first
//    `warmup` steps (lr (t + 1) / warmup), then, if `decaySteps` is set, a
//    cosine from lr down to minLr at step decaySteps and minLr after it
//    (nanoGPT's schedule); otherwise lr;
//  - global gradient-norm clipping as torch.nn.utils.clip_grad_norm_: the
//    norm is that of all parameters' mean gradients together (over every
//    pipeline rank), and every gradient is scaled by
//    min(1, maxNorm / (norm + 1e-6)).
//
// Header only, plain C++17.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_OPTIMIZERSCHEDULE_H
#define ZBC_RUNTIME_OPTIMIZERSCHEDULE_H

#include <cmath>
#include <cstdint>

namespace zbc::rt {

struct LearningRateSchedule {
  int64_t warmup = 0;
  int64_t decaySteps = 0; // 0: constant after the warm-up
  double minLr = 0;
};

inline double learningRateAt(double lr, int64_t step,
                             const LearningRateSchedule &schedule) {
  if (step < schedule.warmup)
    return lr * double(step + 1) / double(schedule.warmup);
  if (schedule.decaySteps <= 0)
    return lr;
  if (step >= schedule.decaySteps)
    return schedule.minLr;
  double progress = double(step - schedule.warmup) /
                    double(schedule.decaySteps - schedule.warmup);
  return schedule.minLr + 0.5 * (lr - schedule.minLr) *
                              (1.0 + std::cos(3.14159265358979323846 * progress));
}

/// The factor every gradient is scaled by when their global norm is `norm`
/// (maxNorm 0: no clipping).
inline double clipCoefficient(double norm, double maxNorm) {
  if (maxNorm <= 0)
    return 1.0;
  double coefficient = maxNorm / (norm + 1e-6);
  return coefficient < 1.0 ? coefficient : 1.0;
}

} // namespace zbc::rt

#endif // ZBC_RUNTIME_OPTIMIZERSCHEDULE_H
