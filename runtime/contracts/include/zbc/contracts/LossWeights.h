//===- LossWeights.h - each microbatch's weight in the step's loss -*- C++ -*-===//
//
// Note [Loss over real tokens]
// The loss of a training step is the sum of its token losses over every
// microbatch (of every data-parallel replica) divided by the number of
// labels the step counts: a zb.cross_entropy counts its labels that are
// not its ignore_index (-100: padding, a document's last token). Each
// microbatch's zb.cross_entropy is the mean over its own n counted labels,
// so with M microbatches in the step and T counted labels in all, the step's
// loss is (1/M) sum_j w_j mean_j with w_j = M n_j / T: the backward of
// microbatch j is seeded with w_j (zb.loss_seed), the optimizer keeps its
// 1/M (Note [Mean over microbatches] in ZB.md), and the printed loss sums
// w_j mean_j over M. Averaging each microbatch's mean instead would weigh a
// microbatch of a few real tokens as much as a full one (the bug of
// gradient accumulation that transformers fixed in 2024).
// When every microbatch counts as many labels (no label ignored: every
// unpacked model), w_j = M n / (M n) is exactly 1 and every number is what
// it was before labels could be ignored, bit for bit.
// The weights are known before the step's first backward: the ranks that
// compute the loss read the labels of every microbatch of the step, all
// replicas' included (they are the same data), so the replicas agree on T
// without exchanging it. The reference interpreter (runPipelineStep) and
// the runtime (Rank.cpp) both take them from lossWeights below.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_CONTRACTS_LOSSWEIGHTS_H
#define ZBC_CONTRACTS_LOSSWEIGHTS_H

#include <cstdint>
#include <vector>

namespace zbc::rt {

/// The weight of each microbatch of a step whose microbatches count
/// `counted` labels each (Note [Loss over real tokens]); empty when the step
/// counts none (nothing to train on: the caller reports it).
inline std::vector<double> lossWeights(const std::vector<int64_t> &counted) {
  int64_t total = 0;
  for (int64_t n : counted)
    total += n;
  if (total <= 0)
    return {};
  std::vector<double> weights;
  weights.reserve(counted.size());
  const double microbatches = static_cast<double>(counted.size());
  for (int64_t n : counted)
    weights.push_back(microbatches * static_cast<double>(n) /
                      static_cast<double>(total));
  return weights;
}

/// The labels of `count` that are not `ignoreIndex`.
template <typename I>
int64_t countedLabels(const I *labels, int64_t count, int64_t ignoreIndex) {
  int64_t n = 0;
  for (int64_t i = 0; i < count; ++i)
    n += static_cast<int64_t>(labels[i]) != ignoreIndex;
  return n;
}

} // namespace zbc::rt

#endif // ZBC_CONTRACTS_LOSSWEIGHTS_H
