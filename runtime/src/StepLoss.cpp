//===- StepLoss.cpp - each microbatch's weight in its step's loss ---------===//
//
// Note [Loss over real tokens] (zbc/contracts/LossWeights.h) on a rank: the
// rank that computes the loss reads, once per batch (a training step or an
// evaluation batch), the counted labels of every microbatch of the batch,
// every replica's included, and weighs its own microbatches by them: the
// seed of each one's backward (zbc_rt_loss_seed) and its loss in the
// printed mean (zbc_rt_add_loss). A step whose labels are all ignored has
// nothing to train on and fails, naming the step.
//
//===----------------------------------------------------------------------===//

#include "Rank.h"

#include "zbc/contracts/LossWeights.h"

#include <fmt/format.h>

namespace zbc::rt {

std::string lossWeightOf(zbc_rt_rank *rank, int32_t microbatch,
                         double &weight) {
  const zbc_rt_program &p = *rank->program;
  weight = 1.0;
  if (p.counted_labels < 0)
    return {};
  BatchPosition at = batchPosition(rank, microbatch);
  LossWeights &cache = rank->lossWeights;
  if (cache.weights.empty() || cache.batch != at.batch ||
      cache.heldOut != at.heldOut) {
    const zbc_rt_data &labels = p.data[p.counted_labels];
    int64_t count = 1;
    for (int32_t d = 0; d < labels.rank_of_shape; ++d)
      count *= labels.shape[d];
    std::vector<char> buffer(
        static_cast<size_t>(count * zbc_rt_element_bytes(labels.element)));
    std::vector<int64_t> counted;
    BatchPosition each = at;
    for (each.microbatch = 0; each.microbatch < at.microbatches;
         ++each.microbatch) {
      rank->data.fill(p.counted_labels, each, buffer.data(),
                      static_cast<int64_t>(buffer.size()));
      counted.push_back(
          labels.element == ZBC_RT_I32
              ? countedLabels(reinterpret_cast<const int32_t *>(buffer.data()),
                              count, p.ignore_index)
              : countedLabels(reinterpret_cast<const int64_t *>(buffer.data()),
                              count, p.ignore_index));
    }
    cache.weights = lossWeights(counted);
    if (cache.weights.empty())
      return fmt::format(
          "{} {}: every '{}' of its {} microbatches is the ignore_index {}: "
          "the step has no token to train on",
          at.heldOut ? "evaluation batch" : "step", at.batch + 1, labels.key,
          at.microbatches, p.ignore_index);
    cache.batch = at.batch;
    cache.heldOut = at.heldOut;
  }
  weight = cache.weights[static_cast<size_t>(at.microbatch)];
  return {};
}

} // namespace zbc::rt
