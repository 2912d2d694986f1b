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

#include "zbc/contracts/OptimizerSchedule.h"
#include "zbc/contracts/TokenData.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <set>
#include <string>
#include <vector>

using namespace zbc::rt;

namespace {

constexpr int64_t kAnyVocabulary = std::numeric_limits<int64_t>::max();

/// Loads `path` for windows of `sequence` tokens (.bin as uint16).
std::string load(const std::string &path, int64_t sequence,
                 TokenCorpus &corpus, int64_t vocabulary = kAnyVocabulary) {
  return loadTokenCorpus(path, TokenType::U16, sequence, vocabulary, corpus);
}

TokenCorpus corpusOf(const std::string &text, int64_t sequence) {
  std::string path = ::testing::TempDir() + "/zbc-text-" +
                     std::to_string(text.size()) + ".txt";
  std::ofstream(path, std::ios::binary) << text;
  TokenCorpus corpus;
  std::string error = load(path, sequence, corpus);
  EXPECT_EQ(error, "");
  std::remove(path.c_str());
  return corpus;
}

TEST(TokenData, KeyedPermutationIsABijection) {
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

TEST(TokenData, EveryTrainingWindowOncePerEpoch) {
  std::string text;
  for (int i = 0; i < 3000; ++i)
    text += static_cast<char>('a' + i % 26);
  TokenCorpus corpus = corpusOf(text, 16);
  int64_t windows = corpus.trainWindows();
  ASSERT_GT(windows, 100);
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    std::set<int64_t> starts;
    for (int64_t g = epoch * windows; g < (epoch + 1) * windows; ++g) {
      int64_t start = windowStart(corpus, 7, false, g);
      EXPECT_GE(start, 0);
      EXPECT_LE(start + corpus.sequence + 1, corpus.trainTokens);
      starts.insert(start);
    }
    EXPECT_EQ(static_cast<int64_t>(starts.size()), windows);
  }
  // Another epoch, another seed: another order.
  EXPECT_NE(windowStart(corpus, 7, false, 0),
            windowStart(corpus, 7, false, windows));
  EXPECT_NE(windowStart(corpus, 7, false, 0), windowStart(corpus, 8, false, 0));
}

TEST(TokenData, HeldOutWindowsTileTheLastTenth) {
  TokenCorpus corpus = corpusOf(std::string(1000, 'x'), 8);
  EXPECT_EQ(corpus.trainTokens, 900);
  EXPECT_EQ(corpus.heldOutWindows(), (100 - 1) / 8);
  for (int64_t g = 0; g < 3 * corpus.heldOutWindows(); ++g) {
    int64_t start = windowStart(corpus, 0, true, g);
    EXPECT_GE(start, corpus.trainTokens);
    EXPECT_LE(start + corpus.sequence + 1,
              corpus.tokens);
  }
  // 12 windows: 6 whole microbatches of 2 rows, in 2 batches of 4; 5 of 3
  // rows (one window left out), in 2 batches.
  EXPECT_EQ(corpus.heldOutWindows(), 12);
  EXPECT_EQ(evalMicrobatches(corpus, 2), 6);
  EXPECT_EQ(evalBatches(corpus, 4, 2), 2);
  EXPECT_EQ(evalMicrobatches(corpus, 5), 2);
  EXPECT_EQ(evalBatches(corpus, 2, 5), 1);
  EXPECT_EQ(evalMicrobatches(corpus, 13), 0);
  EXPECT_EQ(evalBatches(corpus, 4, 13), 0);
}

TEST(TokenData, RolesFillTokensPositionsAndNextTokens) {
  std::string text;
  for (int i = 0; i < 500; ++i)
    text += static_cast<char>(i % 251);
  TokenCorpus corpus = corpusOf(text, 4);
  std::vector<int64_t> tokens(8), positions(8), targets(8);
  fillTokens(corpus, TokenRole::Tokens, 3, false, 10, 2, tokens.data());
  fillTokens(corpus, TokenRole::Positions, 3, false, 10, 2, positions.data());
  fillTokens(corpus, TokenRole::Targets, 3, false, 10, 2, targets.data());
  for (int r = 0; r < 2; ++r)
    for (int t = 0; t < 4; ++t) {
      EXPECT_EQ(positions[r * 4 + t], t);
      int64_t start = windowStart(corpus, 3, false, 10 + r);
      EXPECT_EQ(tokens[r * 4 + t], corpus.at(start + t));
      EXPECT_EQ(targets[r * 4 + t], corpus.at(start + t + 1));
    }
}

TEST(TokenData, ChecksNameWhatTextCannotFill) {
  int64_t sequence = 0, vocabulary = kAnyVocabulary;
  EXPECT_EQ(checkTokenKey({"input.tokens", "I64", true, 256, {2, 32}}, DataFormat::Text, sequence, vocabulary), "");
  EXPECT_EQ(sequence, 32);
  EXPECT_EQ(checkTokenKey({"input.positions", "I64", true, 32, {2, 32}}, DataFormat::Text, sequence, vocabulary), "");
  EXPECT_NE(checkTokenKey({"label.targets", "I64", true, 100, {2, 32}}, DataFormat::Text, sequence, vocabulary)
                .find("vocabulary is 256"),
            std::string::npos);
  EXPECT_NE(checkTokenKey({"input.positions", "I64", true, 16, {2, 32}}, DataFormat::Text, sequence, vocabulary)
                .find("positions"),
            std::string::npos);
  EXPECT_NE(checkTokenKey({"input.tokens", "I64", true, 256, {2, 16}}, DataFormat::Text, sequence, vocabulary)
                .find("sequence 16"),
            std::string::npos);
  EXPECT_NE(checkTokenKey({"input.x", "F32", false, 0, {8, 16}}, DataFormat::Text, sequence, vocabulary)
                .find("'input.x'"),
            std::string::npos);
}

TEST(TokenData, AStreamHasNoDocuments) {
  int64_t sequence = 0, vocabulary = kAnyVocabulary;
  EXPECT_NE(checkTokenKey({"input.documents", "I64", true, 32, {2, 32}},
                          DataFormat::Npy, sequence, vocabulary)
                .find("the model masks its attention by document (it reads "
                      "'input.documents') and a token stream has no "
                      "documents: pack them with `zbc pack`"),
            std::string::npos);
}

TEST(TokenData, TooShortAndEmptyFilesAreRefused) {
  std::string path = ::testing::TempDir() + "/zbc-short.txt";
  TokenCorpus corpus;
  std::ofstream(path) << "";
  EXPECT_NE(load(path, 8, corpus).find("is empty"), std::string::npos);
  std::ofstream(path) << std::string(18, 'a'); // 2 windows of 9 bytes, no room
  EXPECT_NE(load(path, 8, corpus).find("at least 19 bytes"),
            std::string::npos);
  std::ofstream(path) << std::string(19, 'a');
  EXPECT_EQ(load(path, 8, corpus), "");
  std::remove(path.c_str());
  EXPECT_NE(load(path, 8, corpus).find("cannot read"),
            std::string::npos);
}

TEST(TokenData, UnigramEntropy) {
  // Two bytes, equally often, in the training split: ln 2.
  std::string text;
  for (int i = 0; i < 1000; ++i)
    text += i % 2 ? 'a' : 'b';
  EXPECT_NEAR(corpusOf(text, 8).entropy, std::log(2.0), 1e-12);
}

/// Writes `ids` as a 1-D .npy array of `descr` ("<u2", ...), element
/// type T, to `path`.
template <typename T>
void writeNpy(const std::string &path, const std::string &descr,
              const std::vector<T> &ids, const std::string &shape = "") {
  std::string header = "{'descr': '" + descr +
                       "', 'fortran_order': False, 'shape': (" +
                       (shape.empty() ? std::to_string(ids.size()) + "," : shape) +
                       "), }";
  header.resize(((header.size() + 11) / 64 + 1) * 64 - 11, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  uint16_t length = static_cast<uint16_t>(header.size());
  out.write(reinterpret_cast<const char *>(&length), 2);
  out << header;
  out.write(reinterpret_cast<const char *>(ids.data()),
            static_cast<std::streamsize>(ids.size() * sizeof(T)));
}

std::vector<int64_t> ramp(int64_t n, int64_t modulo) {
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < n; ++i)
    ids.push_back((i * 7) % modulo);
  return ids;
}

template <typename T> std::vector<T> as(const std::vector<int64_t> &ids) {
  return std::vector<T>(ids.begin(), ids.end());
}

TEST(TokenData, NpyOfEveryTokenDtypeReadsTheSameStream) {
  std::vector<int64_t> ids = ramp(400, 60000);
  std::string path = ::testing::TempDir() + "/zbc-tokens.npy";
  auto check = [&](TokenType type) {
    TokenCorpus corpus;
    ASSERT_EQ(load(path, 8, corpus, 60000), "");
    EXPECT_EQ(corpus.type, type);
    ASSERT_EQ(corpus.tokens, 400);
    EXPECT_EQ(corpus.trainTokens, 360);
    for (int64_t i = 0; i < 400; ++i)
      ASSERT_EQ(corpus.at(i), ids[i]) << tokenTypeName(type) << " at " << i;
  };
  writeNpy(path, "<u2", as<uint16_t>(ids));
  check(TokenType::U16);
  writeNpy(path, "<u4", as<uint32_t>(ids));
  check(TokenType::U32);
  writeNpy(path, "<i4", as<int32_t>(ids));
  check(TokenType::I32);
  writeNpy(path, "<i8", ids);
  check(TokenType::I64);
  std::remove(path.c_str());
}

TEST(TokenData, NpyHeadersThatAreNotATokenStreamAreRefused) {
  std::string path = ::testing::TempDir() + "/zbc-bad.npy";
  TokenCorpus corpus;
  auto refusal = [&] { return load(path, 4, corpus); };
  writeNpy(path, "<f4", std::vector<float>(100, 1.0f));
  EXPECT_NE(refusal().find("its dtype is '<f4'"), std::string::npos);
  writeNpy(path, ">u2", std::vector<uint16_t>(100, 1));
  EXPECT_NE(refusal().find("little-endian"), std::string::npos);
  writeNpy(path, "<u2", std::vector<uint16_t>(100, 1), "10, 10");
  EXPECT_NE(refusal().find("its shape is (10, 10)"), std::string::npos);
  writeNpy(path, "<u2", std::vector<uint16_t>(100, 1), "101,");
  EXPECT_NE(refusal().find("says 101 tokens"), std::string::npos);
  writeNpy(path, "<u2", std::vector<uint16_t>(), "0,");
  EXPECT_NE(refusal().find("holds no tokens"), std::string::npos);
  std::ofstream(path, std::ios::binary) << "not numpy at all";
  EXPECT_NE(refusal().find("magic string"), std::string::npos);
  std::remove(path.c_str());
}

TEST(TokenData, BinIsRawLittleEndianIdsOfTheGivenWidth) {
  std::vector<int64_t> ids = ramp(300, 100000);
  std::string path = ::testing::TempDir() + "/zbc-tokens.bin";
  std::vector<uint32_t> wide = as<uint32_t>(ids);
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char *>(wide.data()), 4 * 300);
  TokenCorpus corpus;
  ASSERT_EQ(loadTokenCorpus(path, TokenType::U32, 8, 100000, corpus), "");
  ASSERT_EQ(corpus.tokens, 300);
  for (int64_t i = 0; i < 300; ++i)
    ASSERT_EQ(corpus.at(i), ids[i]);
  // Read as nanoGPT's uint16, the same bytes are twice as many ids, most of
  // them the high halves (0 or 1) and the low halves: in range, but wrong.
  ASSERT_EQ(loadTokenCorpus(path, TokenType::U16, 8, 100000, corpus), "");
  EXPECT_EQ(corpus.tokens, 600);
  // An odd number of bytes is not a stream of uint16.
  std::ofstream(path, std::ios::binary) << std::string(201, '\0');
  EXPECT_NE(load(path, 8, corpus).find("not a whole number of uint16"),
            std::string::npos);
  std::ofstream(path, std::ios::binary) << "";
  EXPECT_NE(load(path, 8, corpus).find("is empty"), std::string::npos);
  std::remove(path.c_str());
}

TEST(TokenData, AnIdOutsideTheVocabularyIsRefusedByPosition) {
  std::vector<int64_t> ids = ramp(500, 1000);
  ids[437] = 1000;
  std::string path = ::testing::TempDir() + "/zbc-range.npy";
  writeNpy(path, "<i8", ids);
  TokenCorpus corpus;
  EXPECT_NE(load(path, 8, corpus, 1000).find("token id 1000 at position 437"),
            std::string::npos);
  ids[437] = -3;
  writeNpy(path, "<i8", ids);
  EXPECT_NE(load(path, 8, corpus, 1000).find("token id -3 at position 437"),
            std::string::npos);
  ids[437] = 5;
  writeNpy(path, "<i8", ids);
  EXPECT_EQ(load(path, 8, corpus, 1000), "");
  // A stream shorter than a training window and a held-out one.
  writeNpy(path, "<u2", std::vector<uint16_t>(18, 1));
  EXPECT_NE(load(path, 8, corpus).find("has 18 tokens: too short"),
            std::string::npos);
  std::remove(path.c_str());
}

TEST(TokenData, TokenFilesHoldTheirIdsToTheModelsVocabulary) {
  int64_t sequence = 0, vocabulary = kAnyVocabulary;
  // A token file may feed a model of any vocabulary; the smallest bound of
  // the keys that take ids is the one the stream is held to.
  EXPECT_EQ(checkTokenKey({"input.tokens", "I64", true, 50, {2, 8}},
                          DataFormat::Npy, sequence, vocabulary),
            "");
  EXPECT_EQ(checkTokenKey({"label.targets", "I64", true, 40, {2, 8}},
                          DataFormat::Npy, sequence, vocabulary),
            "");
  EXPECT_EQ(vocabulary, 40);
  EXPECT_EQ(dataFormatOf("a/b.npy"), DataFormat::Npy);
  EXPECT_EQ(dataFormatOf("train.bin"), DataFormat::Bin);
  EXPECT_EQ(dataFormatOf("x.safetensors"), DataFormat::SafeTensors);
  EXPECT_EQ(dataFormatOf("shakespeare.txt"), DataFormat::Text);
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
