//===- TextData.h - a language model's training windows over a text file -*- C++ -*-===//
//
// Note [Text data]
// `--data FILE` on a file that is not safetensors trains a language model on
// FILE's bytes: the tokenizer is the identity on bytes (vocabulary 256). The
// last tenth of the file (at least one window) is held out; the rest is the
// training split. A window is sequence + 1 consecutive bytes; the model's
// data keys are filled by role:
//   input "tokens"    the window's first `sequence` bytes,
//   input "positions" 0, 1, ..., sequence - 1,
//   label "targets"   the window's last `sequence` bytes (the next tokens),
// each of shape [rows, sequence] per microbatch, one window per row. No
// other key can be filled from text.
//
// Which window a row reads: rows are numbered across the run, sample
// g = (batch * M + J) * rows + r for row r of global microbatch J (of M per
// batch) of batch `batch` (the step when training, the evaluation batch when
// evaluating). Training windows start at every byte of the training split
// that leaves room for a window; epoch e = g / W of the W windows visits each
// once, in the order of a keyed permutation of [0, W) (a Feistel network
// keyed by the seed and e, cycle-walked onto [0, W): O(1) memory and time,
// the same order on every rank and in the reference trainer). Held-out
// windows tile the held-out split, sequence bytes apart; evaluation covers
// each of them once, the last batch wrapping around.
//
// Header only, plain C++17: the runtime, the reference trainer and `zbc run`
// (which checks the file before any rank starts) share it.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_TEXTDATA_H
#define ZBC_RUNTIME_TEXTDATA_H

#include "zbc/runtime/DataFile.h"
#include "zbc/runtime/Files.h"
#include "zbc/runtime/SyntheticData.h"

#include <cmath>
#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zbc::rt {

/// The byte tokenizer's vocabulary.
inline constexpr int64_t kTextVocabulary = 256;

/// True when `--data path` names a safetensors file (by its extension);
/// otherwise it is text.
inline bool isSafeTensorsPath(std::string_view path) {
  std::string_view suffix = ".safetensors";
  return path.size() >= suffix.size() &&
         path.substr(path.size() - suffix.size()) == suffix;
}

struct TextCorpus {
  std::vector<unsigned char> bytes;
  int64_t trainBytes = 0; // [0, trainBytes) trains; the rest is held out
  int64_t sequence = 0;

  int64_t heldOutBytes() const {
    return static_cast<int64_t>(bytes.size()) - trainBytes;
  }
  int64_t trainWindows() const { return trainBytes - sequence; }
  int64_t heldOutWindows() const { return (heldOutBytes() - 1) / sequence; }
};

/// Reads `path` for windows of `sequence` tokens; returns what is wrong
/// (naming the file) or "".
inline std::string loadTextCorpus(const std::string &path, int64_t sequence,
                                  TextCorpus &corpus) {
  int64_t size = 0;
  if (std::string error = regularFileError(path, "the data file", size);
      !error.empty())
    return error;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return "cannot read the data file '" + path + "'";
  corpus.bytes.resize(static_cast<size_t>(size));
  in.read(reinterpret_cast<char *>(corpus.bytes.data()), size);
  if (in.gcount() != size)
    return "cannot read the data file '" + path + "': it has " +
           std::to_string(size) + " bytes, " + std::to_string(in.gcount()) +
           " could be read";
  if (size == 0)
    return "the data file '" + path + "' is empty";
  int64_t window = sequence + 1;
  int64_t heldOut = std::max(size / 10, window);
  if (size - heldOut < window + 1)
    return "the data file '" + path + "' has " + std::to_string(size) +
           " bytes: too short for windows of " + std::to_string(sequence) +
           " tokens (the model's sequence) plus a held-out tenth; it needs "
           "at least " +
           std::to_string(2 * window + 1) + " bytes";
  corpus.trainBytes = size - heldOut;
  corpus.sequence = sequence;
  return {};
}

/// The unigram entropy of the training split in nats per token: the loss of
/// a model that knows only byte frequencies, the yardstick of a run's loss.
inline double unigramEntropy(const TextCorpus &corpus) {
  int64_t counts[kTextVocabulary] = {};
  for (int64_t i = 0; i < corpus.trainBytes; ++i)
    ++counts[corpus.bytes[static_cast<size_t>(i)]];
  double entropy = 0;
  for (int64_t c : counts)
    if (c) {
      double q = double(c) / double(corpus.trainBytes);
      entropy -= q * std::log(q);
    }
  return entropy;
}

/// A bijection of [0, n) keyed by `key`: a 4-round Feistel network on the
/// smallest even number of bits that holds n, walked until it lands in
/// [0, n) (the domain is under 4n, so a few rounds on average).
inline uint64_t keyedPermutation(uint64_t x, uint64_t n, uint64_t key) {
  int bits = 2;
  while ((uint64_t(1) << bits) < n)
    bits += 2;
  int half = bits / 2;
  uint64_t mask = (uint64_t(1) << half) - 1;
  do {
    uint64_t left = x >> half, right = x & mask;
    for (uint64_t round = 0; round < 4; ++round) {
      uint64_t next = left ^ (splitMix64(right ^ key ^ (round << 56)) & mask);
      left = right;
      right = next;
    }
    x = (left << half) | right;
  } while (x >= n);
  return x;
}

/// Where the window of sample g starts (Note [Text data]).
inline int64_t windowStart(const TextCorpus &corpus, uint64_t seed,
                           bool heldOut, int64_t g) {
  if (heldOut)
    return corpus.trainBytes + (g % corpus.heldOutWindows()) * corpus.sequence;
  uint64_t windows = static_cast<uint64_t>(corpus.trainWindows());
  uint64_t epoch = static_cast<uint64_t>(g) / windows;
  uint64_t key = splitMix64(splitMix64(seed) ^ (epoch * 0x9e3779b97f4a7c15ull));
  return static_cast<int64_t>(
      keyedPermutation(static_cast<uint64_t>(g) % windows, windows, key));
}

/// What a data key receives from text.
enum class TextRole { Tokens, Positions, Targets };

/// The role of data key `key` ("input.tokens", ...), if text can fill it.
inline std::optional<TextRole> textRoleOf(std::string_view key) {
  if (key == "input.tokens")
    return TextRole::Tokens;
  if (key == "input.positions")
    return TextRole::Positions;
  if (key == "label.targets")
    return TextRole::Targets;
  return std::nullopt;
}

/// Whether text can fill `key`; on success sets `sequence` (the shape's last
/// dim) if it was 0, and requires the same sequence otherwise. Returns what
/// is wrong or "".
inline std::string checkTextKey(const DataKey &key, int64_t &sequence) {
  std::optional<TextRole> role = textRoleOf(key.key);
  if (!role)
    return "text data fills the inputs 'tokens' and 'positions' and the "
           "label 'targets'; the model also reads '" + key.key + "'";
  if (!key.integer || key.shape.size() != 2)
    return "'" + key.key + "' must be integers of shape [rows, sequence] to "
           "be read from text";
  if (sequence == 0)
    sequence = key.shape[1];
  if (key.shape[1] != sequence)
    return "'" + key.key + "' has sequence " + std::to_string(key.shape[1]) +
           ", another data key " + std::to_string(sequence);
  int64_t needed = *role == TextRole::Positions ? sequence : kTextVocabulary;
  if (key.bound < needed)
    return "'" + key.key + "' takes values below " + std::to_string(key.bound) +
           ", but text gives it values up to " + std::to_string(needed - 1) +
           (*role == TextRole::Positions
                ? " (the positions of the sequence)"
                : " (a byte: the text tokenizer's vocabulary is 256)");
  return {};
}

/// Fills one microbatch of `role`, `rows` windows from sample `firstSample`
/// on, into `out` ([rows, sequence]).
template <typename Int>
void fillText(const TextCorpus &corpus, TextRole role, uint64_t seed,
              bool heldOut, int64_t firstSample, int64_t rows, Int *out) {
  int64_t s = corpus.sequence;
  for (int64_t r = 0; r < rows; ++r) {
    Int *row = out + r * s;
    if (role == TextRole::Positions) {
      for (int64_t t = 0; t < s; ++t)
        row[t] = static_cast<Int>(t);
      continue;
    }
    int64_t start = windowStart(corpus, seed, heldOut, firstSample + r) +
                    (role == TextRole::Targets ? 1 : 0);
    for (int64_t t = 0; t < s; ++t)
      row[t] = static_cast<Int>(corpus.bytes[static_cast<size_t>(start + t)]);
  }
}

/// The first sample of global microbatch `microbatch` (of `microbatches`) of
/// batch `batch`, with `rows` windows per microbatch.
inline int64_t firstSampleOf(int64_t batch, int64_t microbatches,
                             int64_t microbatch, int64_t rows) {
  return (batch * microbatches + microbatch) * rows;
}

/// How many evaluation batches cover the held-out windows once.
inline int64_t evalBatches(const TextCorpus &corpus, int64_t microbatches,
                           int64_t rows) {
  int64_t perBatch = microbatches * rows;
  return (corpus.heldOutWindows() + perBatch - 1) / perBatch;
}

} // namespace zbc::rt

#endif // ZBC_RUNTIME_TEXTDATA_H
