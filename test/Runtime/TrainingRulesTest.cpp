//===- TrainingRulesTest.cpp - text windows, learning rates, clipping -----===//
//
// The rules the compiled ranks and the reference trainer share, checked on
// their own: the keyed permutation visits every training window once per
// epoch (and another seed or epoch orders them differently), windows stay
// inside their split, text fills each data key by its role, the checks name
// what text cannot fill, the unigram entropy of a known text, and the
// learning-rate schedule and clipping at their corners.
//
//===----------------------------------------------------------------------===//

#include "zbc/runtime/OptimizerSchedule.h"
#include "zbc/runtime/TextData.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <vector>

using namespace zbc::rt;

namespace {

TextCorpus corpusOf(const std::string &text, int64_t sequence) {
  std::string path = ::testing::TempDir() + "/zbc-text-" +
                     std::to_string(text.size()) + ".txt";
  std::ofstream(path, std::ios::binary) << text;
  TextCorpus corpus;
  std::string error = loadTextCorpus(path, sequence, corpus);
  EXPECT_EQ(error, "");
  std::remove(path.c_str());
  return corpus;
}

TEST(TextData, KeyedPermutationIsABijection) {
  for (uint64_t n : {1ull, 2ull, 3ull, 17ull, 64ull, 1000ull, 4097ull}) {
    std::set<uint64_t> seen;
    for (uint64_t x = 0; x < n; ++x) {
      uint64_t y = keyedPermutation(x, n, 12345);
      EXPECT_LT(y, n);
      seen.insert(y);
    }
    EXPECT_EQ(seen.size(), n) << "n = " << n;
  }
}

TEST(TextData, EveryTrainingWindowOncePerEpoch) {
  std::string text;
  for (int i = 0; i < 3000; ++i)
    text += static_cast<char>('a' + i % 26);
  TextCorpus corpus = corpusOf(text, 16);
  int64_t windows = corpus.trainWindows();
  ASSERT_GT(windows, 100);
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    std::set<int64_t> starts;
    for (int64_t g = epoch * windows; g < (epoch + 1) * windows; ++g) {
      int64_t start = windowStart(corpus, 7, false, g);
      EXPECT_GE(start, 0);
      EXPECT_LE(start + corpus.sequence + 1, corpus.trainBytes);
      starts.insert(start);
    }
    EXPECT_EQ(static_cast<int64_t>(starts.size()), windows);
  }
  // Another epoch, another seed: another order.
  EXPECT_NE(windowStart(corpus, 7, false, 0),
            windowStart(corpus, 7, false, windows));
  EXPECT_NE(windowStart(corpus, 7, false, 0), windowStart(corpus, 8, false, 0));
}

TEST(TextData, HeldOutWindowsTileTheLastTenth) {
  TextCorpus corpus = corpusOf(std::string(1000, 'x'), 8);
  EXPECT_EQ(corpus.trainBytes, 900);
  EXPECT_EQ(corpus.heldOutWindows(), (100 - 1) / 8);
  for (int64_t g = 0; g < 3 * corpus.heldOutWindows(); ++g) {
    int64_t start = windowStart(corpus, 0, true, g);
    EXPECT_GE(start, corpus.trainBytes);
    EXPECT_LE(start + corpus.sequence + 1,
              static_cast<int64_t>(corpus.bytes.size()));
  }
  EXPECT_EQ(evalBatches(corpus, 2, 2), (corpus.heldOutWindows() + 3) / 4);
}

TEST(TextData, RolesFillTokensPositionsAndNextTokens) {
  std::string text;
  for (int i = 0; i < 500; ++i)
    text += static_cast<char>(i % 251);
  TextCorpus corpus = corpusOf(text, 4);
  std::vector<int64_t> tokens(8), positions(8), targets(8);
  fillText(corpus, TextRole::Tokens, 3, false, 10, 2, tokens.data());
  fillText(corpus, TextRole::Positions, 3, false, 10, 2, positions.data());
  fillText(corpus, TextRole::Targets, 3, false, 10, 2, targets.data());
  for (int r = 0; r < 2; ++r)
    for (int t = 0; t < 4; ++t) {
      EXPECT_EQ(positions[r * 4 + t], t);
      int64_t start = windowStart(corpus, 3, false, 10 + r);
      EXPECT_EQ(tokens[r * 4 + t], corpus.bytes[start + t]);
      EXPECT_EQ(targets[r * 4 + t], corpus.bytes[start + t + 1]);
    }
}

TEST(TextData, ChecksNameWhatTextCannotFill) {
  int64_t sequence = 0;
  EXPECT_EQ(checkTextKey({"input.tokens", "I64", true, 256, {2, 32}}, sequence), "");
  EXPECT_EQ(sequence, 32);
  EXPECT_EQ(checkTextKey({"input.positions", "I64", true, 32, {2, 32}}, sequence), "");
  EXPECT_NE(checkTextKey({"label.targets", "I64", true, 100, {2, 32}}, sequence)
                .find("vocabulary is 256"),
            std::string::npos);
  EXPECT_NE(checkTextKey({"input.positions", "I64", true, 16, {2, 32}}, sequence)
                .find("positions"),
            std::string::npos);
  EXPECT_NE(checkTextKey({"input.tokens", "I64", true, 256, {2, 16}}, sequence)
                .find("sequence 16"),
            std::string::npos);
  EXPECT_NE(checkTextKey({"input.x", "F32", false, 0, {8, 16}}, sequence)
                .find("'input.x'"),
            std::string::npos);
}

TEST(TextData, TooShortAndEmptyFilesAreRefused) {
  std::string path = ::testing::TempDir() + "/zbc-short.txt";
  TextCorpus corpus;
  std::ofstream(path) << "";
  EXPECT_NE(loadTextCorpus(path, 8, corpus).find("is empty"), std::string::npos);
  std::ofstream(path) << std::string(18, 'a'); // 2 windows of 9 bytes, no room
  EXPECT_NE(loadTextCorpus(path, 8, corpus).find("at least 19 bytes"),
            std::string::npos);
  std::ofstream(path) << std::string(19, 'a');
  EXPECT_EQ(loadTextCorpus(path, 8, corpus), "");
  std::remove(path.c_str());
  EXPECT_NE(loadTextCorpus(path, 8, corpus).find("cannot read"),
            std::string::npos);
}

TEST(TextData, UnigramEntropy) {
  // Two bytes, equally often, in the training split: ln 2.
  std::string text;
  for (int i = 0; i < 1000; ++i)
    text += i % 2 ? 'a' : 'b';
  EXPECT_NEAR(unigramEntropy(corpusOf(text, 8)), std::log(2.0), 1e-12);
}

TEST(LearningRate, WarmUpThenCosineToTheFloor) {
  LearningRateSchedule s{10, 110, 0.1};
  EXPECT_DOUBLE_EQ(learningRateAt(1.0, 0, s), 0.1);
  EXPECT_DOUBLE_EQ(learningRateAt(1.0, 9, s), 1.0);
  EXPECT_DOUBLE_EQ(learningRateAt(1.0, 10, s), 1.0);
  EXPECT_NEAR(learningRateAt(1.0, 60, s), 0.55, 1e-12); // half way down
  EXPECT_DOUBLE_EQ(learningRateAt(1.0, 110, s), 0.1);
  EXPECT_DOUBLE_EQ(learningRateAt(1.0, 500, s), 0.1);
  EXPECT_DOUBLE_EQ(learningRateAt(0.5, 3, LearningRateSchedule{}), 0.5);
}

TEST(Clipping, OnlyAboveTheLimit) {
  EXPECT_DOUBLE_EQ(clipCoefficient(0.5, 1.0), 1.0);
  EXPECT_NEAR(clipCoefficient(4.0, 1.0), 0.25, 1e-6);
  EXPECT_DOUBLE_EQ(clipCoefficient(1e9, 0.0), 1.0); // 0: no clipping
}

} // namespace
