//===- DataSource.h - where a rank's microbatches come from ------*- C++ -*-===//
//
// A rank that loads data (the first stage's inputs, the last stage's
// labels) fills each microbatch from one of three sources, chosen by
// --data: seeded synthetic data (none given; SyntheticData.h), a
// safetensors file of samples (one tensor per data key, [N, *shape], the
// same N for every key, checked as DataFile.h says; microbatch j of step s
// reads sample (s m + j) mod N of each), or a token stream: text, .npy or
// .bin (Note [Token data] in zbc/contracts/TokenData.h), which also has a
// held-out split to evaluate on. Ranks that load no data never open the
// file.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_DATASOURCE_H
#define ZBC_RUNTIME_DATASOURCE_H

#include "zbc/contracts/TokenData.h"
#include "zbc/runtime/zbc_runtime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace zbc::rt {

/// Which microbatch to fill: of batch `batch` (the step, or the evaluation
/// batch), global microbatch `microbatch` of `microbatches` per batch.
struct BatchPosition {
  bool heldOut = false;
  int64_t batch = 0;
  int64_t microbatch = 0, microbatches = 1;
};

class DataSource {
public:
  enum class Kind { Synthetic, SafeTensors, Tokens };

  /// Opens `path` ("" for synthetic data) for `program`'s data keys, a
  /// .bin file's ids being `binTokens`; returns what is wrong (naming the
  /// file and the key) or "".
  std::string open(const zbc_rt_program &program, const std::string &path,
                   TokenType binTokens, uint64_t seed);

  Kind kind() const { return kind_; }
  /// A token stream only: the corpus (its entropy, its held-out windows).
  const TokenCorpus &tokens() const { return tokens_; }
  /// The number of rows (windows) of one microbatch, for a token stream.
  int64_t rows() const { return rows_; }

  /// Safetensors: the held-out samples of the same keys (--eval-data),
  /// which evaluation batches read; what is wrong with the file, or "".
  std::string openHeldOut(const std::string &path);
  /// The held-out samples openHeldOut read (0 without).
  int64_t heldOutSamples() const { return heldOutSamples_; }

  /// Safetensors: the number of samples of each key this rank reads (0 for
  /// other sources), and the keys' names ("'input.x', 'input.y'").
  int64_t samples() const { return samples_; }
  std::string keyNames() const;

  /// Fills `dst` (`bytes` long) with data key `index` at `at`.
  void fill(int32_t index, const BatchPosition &at, char *dst,
            int64_t bytes) const;

private:
  const zbc_rt_program *program_ = nullptr;
  Kind kind_ = Kind::Synthetic;
  uint64_t seed_ = 0;
  // Safetensors: per data key, its samples back to back; how many (the
  // same for every key: DataFile.h).
  std::vector<std::vector<char>> tensors_;
  int64_t samples_ = 0;
  // The held-out samples (--eval-data), laid out as tensors_.
  std::vector<std::vector<char>> heldOutTensors_;
  int64_t heldOutSamples_ = 0;
  // A token stream: the corpus, and per data key its role.
  TokenCorpus tokens_;
  std::vector<TokenRole> roles_;
  int64_t rows_ = 0;
};

} // namespace zbc::rt

#endif // ZBC_RUNTIME_DATASOURCE_H
