//===- VocabShardsTest.cpp - the vocabulary split and its softmax ---------===//
//
// Note [Vocabulary shards] and Note [Softmax over vocabulary shards]
// (zbc/contracts/VocabShards.h): the rows each rank holds, as
// torch.tensor_split names them, and the CPU kernels of the sharded
// cross-entropy held to the unsplit ones (crossEntropy, crossEntropyGrad)
// on the same logits, with the all-reduces between them done here, over
// shard counts that do and do not divide the vocabulary and with ignored
// labels. Only the summation order differs, so the losses and gradients
// agree to a few ulps.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "zbc/contracts/VocabShards.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace {

using namespace zbc::rt::cpu;

TEST(VocabShards, RowsAsTensorSplit) {
  // torch.tensor_split(torch.arange(10), 4): 3, 3, 2, 2 from 0, 3, 6, 8.
  const int64_t first[] = {0, 3, 6, 8}, rows[] = {3, 3, 2, 2};
  for (int r = 0; r < 4; ++r) {
    zbc::VocabRows held = zbc::vocabRowsOf(10, 4, r);
    EXPECT_EQ(held.first, first[r]) << "rank " << r;
    EXPECT_EQ(held.rows, rows[r]) << "rank " << r;
  }
  // The examples of the Note, and every rank of a few splits: contiguous,
  // covering, none empty, counts within one.
  EXPECT_EQ(zbc::vocabRowsOf(128256, 16, 15).rows, 8016);
  EXPECT_EQ(zbc::vocabRowsOf(50257, 4, 0).rows, 12565);
  EXPECT_EQ(zbc::vocabRowsOf(50257, 4, 3).rows, 12564);
  for (int64_t vocab : {1, 7, 50257, 128256})
    for (int64_t ranks : {1, 2, 3, 7}) {
      if (ranks > vocab)
        continue;
      int64_t next = 0;
      for (int64_t r = 0; r < ranks; ++r) {
        zbc::VocabRows held = zbc::vocabRowsOf(vocab, ranks, r);
        EXPECT_EQ(held.first, next);
        EXPECT_GE(held.rows, vocab / ranks);
        EXPECT_LE(held.rows, vocab / ranks + 1);
        EXPECT_TRUE(held.holds(held.first + held.rows - 1));
        EXPECT_FALSE(held.holds(held.first + held.rows));
        next += held.rows;
      }
      EXPECT_EQ(next, vocab) << vocab << " over " << ranks;
    }
}

/// The unsplit and the sharded cross-entropy of the same logits.
struct Sharded {
  float loss = 0, wholeLoss = 0;
  std::vector<float> grad, wholeGrad;
};

/// Runs Note [Softmax over vocabulary shards] over `ranks` shards of random
/// logits [rows, vocab] (the all-reduces done here), beside the unsplit
/// kernels. Every `ignoreEvery`-th label is ignored (0: none).
Sharded runSharded(int64_t rows, int64_t vocab, int64_t ranks,
                   int64_t ignoreEvery, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  std::uniform_int_distribution<int64_t> token(0, vocab - 1);
  std::vector<float> logits(rows * vocab);
  for (float &x : logits)
    x = normal(rng);
  std::vector<int64_t> labels(rows);
  for (int64_t r = 0; r < rows; ++r)
    labels[r] = ignoreEvery && r % ignoreEvery == 0 ? -100 : token(rng);
  const float dloss = 0.75f;
  const int64_t ignore = -100;

  Sharded out;
  out.wholeGrad.resize(rows * vocab);
  EXPECT_TRUE(crossEntropy(logits.data(), labels.data(), &out.wholeLoss, rows,
                           vocab, ignore, nullptr));
  EXPECT_TRUE(crossEntropyGrad(logits.data(), labels.data(), &dloss,
                               out.wholeGrad.data(), rows, vocab, ignore,
                               nullptr));

  // The S pass on every shard, then the all-reduce max.
  std::vector<std::vector<float>> shard(ranks), max(ranks), logSum(ranks),
      target(ranks);
  std::vector<float> globalMax(rows, -INFINITY);
  for (int64_t k = 0; k < ranks; ++k) {
    zbc::VocabRows held = zbc::vocabRowsOf(vocab, ranks, k);
    for (int64_t r = 0; r < rows; ++r)
      shard[k].insert(shard[k].end(), logits.begin() + r * vocab + held.first,
                      logits.begin() + r * vocab + held.first + held.rows);
    max[k].resize(rows);
    logSum[k].resize(rows);
    target[k].resize(rows);
    EXPECT_TRUE(vocabShardStats(shard[k].data(), labels.data(), max[k].data(),
                                logSum[k].data(), target[k].data(), rows,
                                held.rows, held.first, vocab, ignore,
                                nullptr));
    for (int64_t r = 0; r < rows; ++r)
      globalMax[r] = std::max(globalMax[r], max[k][r]);
  }
  // Each shard's terms, then the all-reduce sum of them and of the targets.
  std::vector<float> sumExp(rows, 0.0f), sumTarget(rows, 0.0f), term(rows);
  for (int64_t k = 0; k < ranks; ++k) {
    vocabShardSums(max[k].data(), logSum[k].data(), globalMax.data(),
                   term.data(), rows);
    for (int64_t r = 0; r < rows; ++r) {
      sumExp[r] += term[r];
      sumTarget[r] += target[k][r];
    }
  }
  EXPECT_TRUE(vocabShardLoss(globalMax.data(), sumExp.data(), sumTarget.data(),
                             labels.data(), &out.loss, rows, vocab, ignore,
                             nullptr));
  // The T pass: each shard's columns of the gradient, put back in place.
  out.grad.assign(rows * vocab, NAN);
  for (int64_t k = 0; k < ranks; ++k) {
    zbc::VocabRows held = zbc::vocabRowsOf(vocab, ranks, k);
    std::vector<float> grad(rows * held.rows);
    EXPECT_TRUE(vocabShardGrad(shard[k].data(), labels.data(),
                               globalMax.data(), sumExp.data(), &dloss,
                               grad.data(), rows, held.rows, held.first, vocab,
                               ignore, nullptr));
    for (int64_t r = 0; r < rows; ++r)
      std::copy(grad.begin() + r * held.rows,
                grad.begin() + (r + 1) * held.rows,
                out.grad.begin() + r * vocab + held.first);
  }
  return out;
}

/// The largest difference between two gradients, relative to the largest
/// magnitude of the unsplit one.
float largestRelativeDifference(const std::vector<float> &a,
                                const std::vector<float> &b) {
  float scale = 0, diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    scale = std::max(scale, std::fabs(b[i]));
    diff = std::max(diff, std::fabs(a[i] - b[i]));
  }
  return scale > 0 ? diff / scale : diff;
}

TEST(VocabShards, SoftmaxEqualsTheUnsplitOne) {
  // One shard (the unsplit kernels' own arithmetic, through the merge), a
  // split that divides and ones that do not, down to a row per shard.
  for (auto [vocab, ranks] : {std::pair<int64_t, int64_t>{96, 1},
                              {96, 4},
                              {97, 4},
                              {50, 3},
                              {7, 7}}) {
    Sharded run = runSharded(/*rows=*/24, vocab, ranks, /*ignoreEvery=*/5,
                             /*seed=*/static_cast<unsigned>(vocab + ranks));
    EXPECT_NEAR(run.loss, run.wholeLoss, 2e-6f * std::fabs(run.wholeLoss))
        << vocab << " over " << ranks;
    EXPECT_LT(largestRelativeDifference(run.grad, run.wholeGrad), 2e-6f)
        << vocab << " over " << ranks;
  }
}

TEST(VocabShards, IgnoredLabelsAddNothing) {
  // Every 5th label ignored: their gradient rows are 0 on every shard and
  // the mean is over the others; all ignored: loss 0, gradient 0.
  Sharded run = runSharded(10, 30, 3, /*ignoreEvery=*/5, 7);
  for (int64_t c = 0; c < 30; ++c) {
    EXPECT_EQ(run.grad[0 * 30 + c], 0.0f);
    EXPECT_EQ(run.grad[5 * 30 + c], 0.0f);
  }
  Sharded none = runSharded(4, 30, 3, /*ignoreEvery=*/1, 7);
  EXPECT_EQ(none.loss, 0.0f);
  for (float g : none.grad)
    EXPECT_EQ(g, 0.0f);
}

TEST(VocabShards, LabelOutsideTheVocabularyIsRefused) {
  // A label is checked against the whole vocabulary, not the shard's rows,
  // and a bad one leaves the outputs untouched.
  std::vector<float> logits(2 * 3, 0.5f), max(2, -1), logSum(2, -1),
      target(2, -1);
  std::vector<int64_t> labels = {4, 10};
  IndexError error;
  EXPECT_FALSE(vocabShardStats(logits.data(), labels.data(), max.data(),
                               logSum.data(), target.data(), 2, 3, 3, 10, -100,
                               &error));
  EXPECT_EQ(error.position, 1);
  EXPECT_EQ(error.value, 10);
  EXPECT_EQ(error.bound, 10);
  EXPECT_EQ(max[0], -1.0f);
  labels = {4, 9};
  EXPECT_TRUE(vocabShardStats(logits.data(), labels.data(), max.data(),
                              logSum.data(), target.data(), 2, 3, 3, 10, -100,
                              &error));
  EXPECT_EQ(target[0], 0.5f); // label 4 is column 1 of rows [3, 6)
  EXPECT_EQ(target[1], 0.0f); // label 9 is another shard's
}

} // namespace
