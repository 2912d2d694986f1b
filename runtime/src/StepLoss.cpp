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

#include <algorithm>

namespace zbc::rt {

namespace {
/// The element count of data tensor `index`.
int64_t elementsOf(const zbc_rt_data &data) {
  int64_t count = 1;
  for (int32_t d = 0; d < data.rank_of_shape; ++d)
    count *= data.shape[d];
  return count;
}
} // namespace

void initLossWeights(zbc_rt_rank *rank) {
  const zbc_rt_program &p = *rank->program;
  if (p.counted_labels < 0)
    return;
  const zbc_rt_data &labels = p.data[p.counted_labels];
  LossWeights &w = rank->lossWeights;
  w.labels.resize(static_cast<size_t>(elementsOf(labels) *
                                      zbc_rt_element_bytes(labels.element)));
  // A step's microbatches, or an evaluation's (weighed together).
  size_t microbatches = std::max<size_t>(
      static_cast<size_t>(p.microbatches) * rank->transport->replicas(),
      static_cast<size_t>(rank->evalMicrobatches));
  w.counted.reserve(microbatches);
  w.weights.reserve(microbatches);
}

std::string lossWeightOf(zbc_rt_rank *rank, int32_t microbatch,
                         double &weight) {
  const zbc_rt_program &p = *rank->program;
  weight = 1.0;
  if (p.counted_labels < 0)
    return {};
  BatchPosition at = batchPosition(rank, microbatch);
  // A step weighs its own microbatches; an evaluation weighs all of its
  // microbatches together, so that its loss is the mean over every counted
  // label of the held-out data (the wrapped ones past evalMicrobatches count
  // for nothing).
  const int64_t batch = at.heldOut ? 0 : at.batch;
  const int64_t microbatches =
      at.heldOut ? rank->evalMicrobatches : at.microbatches;
  const int64_t index =
      at.heldOut ? at.batch * at.microbatches + at.microbatch : at.microbatch;
  LossWeights &cache = rank->lossWeights;
  if (cache.weights.empty() || cache.batch != batch ||
      cache.heldOut != at.heldOut) {
    const zbc_rt_data &labels = p.data[p.counted_labels];
    const int64_t count = elementsOf(labels);
    const char *buffer = cache.labels.data();
    cache.counted.clear(); // within the capacity initLossWeights reserved
    for (int64_t j = 0; j < microbatches; ++j) {
      BatchPosition each = at;
      each.batch = at.heldOut ? j / at.microbatches : at.batch;
      each.microbatch = j % at.microbatches;
      rank->data.fill(p.counted_labels, each, cache.labels.data(),
                      static_cast<int64_t>(cache.labels.size()));
      cache.counted.push_back(
          labels.element == ZBC_RT_I32
              ? countedLabels(reinterpret_cast<const int32_t *>(buffer),
                              count, p.ignore_index)
              : countedLabels(reinterpret_cast<const int64_t *>(buffer),
                              count, p.ignore_index));
    }
    if (!lossWeights(cache.counted, cache.weights))
      return at.heldOut
                 ? fmt::format("the held-out data: every '{}' of its {} "
                               "microbatches is the ignore_index {}: there is "
                               "no token to evaluate",
                               labels.key, microbatches, p.ignore_index)
                 : fmt::format("step {}: every '{}' of its {} microbatches is "
                               "the ignore_index {}: the step has no token "
                               "to train on",
                               at.batch + 1, labels.key, microbatches,
                               p.ignore_index);
    cache.batch = batch;
    cache.heldOut = at.heldOut;
  }
  weight = index < static_cast<int64_t>(cache.weights.size())
               ? cache.weights[static_cast<size_t>(index)]
               : 0.0;
  return {};
}

} // namespace zbc::rt
