//===- TokenData.h - a language model's training windows over a token stream -*- C++ -*-===//
//
// Note [Token data]
// `--data FILE` on a file that is not safetensors trains a language model on
// a stream of token ids. What the stream is depends on FILE's extension:
//   .npy   a NumPy array, 1-D, of uint16, uint32, int32 or int64 (its header
//          names the dtype; little-endian, C order);
//   .bin   raw little-endian uint16 ids, nanoGPT's convention, or uint32
//          with `--data-dtype uint32` (vocabularies above 65,536);
//   other  text: each byte is a token (the identity tokenizer, vocabulary
//          256).
// No tokenizer runs inside zbc: a user writes the ids with the model's own
// tokenizer (docs/user-guide.md). Every id must lie in [0, vocabulary) of the model (an
// id outside is refused naming its position), checked once when the file
// is opened, before the first step.
//
// The last tenth of the stream (at least one window) is held out; the rest
// is the training split. A window is sequence + 1 consecutive tokens; the
// model's data keys are filled by role:
//   input "tokens"    the window's first `sequence` tokens,
//   input "positions" 0, 1, ..., sequence - 1,
//   label "targets"   the window's last `sequence` tokens (the next tokens),
// each of shape [rows, sequence] per microbatch, one window per row. No
// other key can be filled from a token stream; in particular a stream has
// no documents, so a model that reads "documents" needs packed samples
// (`zbc pack`, Note [Packed documents] in DataFile.h).
//
// Which window a row reads: rows are numbered across the run, sample
// g = (batch * M + J) * rows + r for row r of global microbatch J (of M per
// batch) of batch `batch` (the step when training, the evaluation batch when
// evaluating). Training windows start at every token of the training split
// that leaves room for a window; epoch e = g / W of the W windows visits each
// once, in the order of a keyed permutation of [0, W) (a Feistel network
// keyed by the seed and e, cycle-walked onto [0, W): O(1) memory and time,
// the same order on every rank and in the reference trainer). Held-out
// windows tile the held-out split, sequence tokens apart. Evaluation counts
// each of the whole microbatches of them once: the held-out loss is the mean
// over the first evalMicrobatches x rows windows (the rest, fewer than a
// microbatch's rows, is not evaluated: a microbatch's loss is one mean), and
// the last batch's microbatches past them run but are not counted (no
// window counts twice).
//
// The stream is mapped, not read (MappedFile.h): only the ranks that read
// data open it, and a rank touches the pages of the windows it reads (and
// once, the whole stream for the check). Plain C++17: the runtime, the
// reference trainer and `zbc run` (which checks the file before any rank
// starts) share it.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_TOKENDATA_H
#define ZBC_RUNTIME_TOKENDATA_H

#include "zbc/contracts/DataFile.h"
#include "zbc/contracts/MappedFile.h"
#include "zbc/contracts/SyntheticData.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace zbc::rt {

/// The byte tokenizer's vocabulary.
inline constexpr int64_t kTextVocabulary = 256;

/// How one token is stored.
enum class TokenType { Byte, U16, U32, I32, I64 };

/// Its width in bytes.
int tokenBytes(TokenType type);
/// Its name in messages: "a byte (text)", "uint16", ...
const char *tokenTypeName(TokenType type);

/// What `--data path` is, by its extension (Note [Token data]).
enum class DataFormat { SafeTensors, Npy, Bin, Text };
DataFormat dataFormatOf(std::string_view path);

/// True when `--data path` names a safetensors file of samples.
inline bool isSafeTensorsPath(std::string_view path) {
  return dataFormatOf(path) == DataFormat::SafeTensors;
}

/// `--data-dtype NAME` (the ids of a .bin file): sets `type` to U16 for
/// "uint16" or U32 for "uint32"; false for any other name.
bool parseBinTokenType(std::string_view name, TokenType &type);

/// A token stream cut into windows (Note [Token data]).
struct TokenCorpus {
  std::shared_ptr<const MappedFile> file;
  const char *first = nullptr; // the first token's bytes
  TokenType type = TokenType::Byte;
  int64_t tokens = 0;      // in the stream
  int64_t trainTokens = 0; // [0, trainTokens) trains; the rest is held out
  int64_t sequence = 0;
  /// The unigram entropy of the training split in nats per token: the
  /// loss of a model that knows only token frequencies, the yardstick of a
  /// run's loss.
  double entropy = 0;

  /// Token `i` of the stream.
  int64_t at(int64_t i) const {
    const char *p = first + i * tokenBytes(type);
    switch (type) {
    case TokenType::Byte:
      return static_cast<unsigned char>(*p);
    case TokenType::U16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case TokenType::U32: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case TokenType::I32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case TokenType::I64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
    }
    return 0;
  }
  int64_t heldOutTokens() const { return tokens - trainTokens; }
  int64_t trainWindows() const { return trainTokens - sequence; }
  int64_t heldOutWindows() const { return (heldOutTokens() - 1) / sequence; }
};

/// Opens `path` as a token stream (text, .npy or .bin of `binType`) and
/// nothing more: `corpus` gets its file, type and token count (no windows,
/// no vocabulary check). `what` names the file in errors ("the data file",
/// "the offsets file") and `items` what a .npy holds ("token ids",
/// "offsets"). `zbc pack` reads its inputs with it; returns what is wrong
/// or "".
std::string openTokenStream(const std::string &path, TokenType binType,
                            TokenCorpus &corpus,
                            const std::string &what = "the data file",
                            const std::string &items = "token ids");

/// Opens `path` as a token stream (text, .npy or .bin of `binType`) for
/// windows of `sequence` tokens whose ids lie in [0, vocabulary); returns
/// what is wrong (naming the file, and for a bad id its position) or "".
std::string loadTokenCorpus(const std::string &path, TokenType binType,
                            int64_t sequence, int64_t vocabulary,
                            TokenCorpus &corpus);

/// What a data key receives from a token stream.
enum class TokenRole { Tokens, Positions, Targets };

/// The role of data key `key` ("input.tokens", ...), if a stream can fill it.
std::optional<TokenRole> tokenRoleOf(std::string_view key);

/// Whether a token stream of `format` can fill `key`. On success sets
/// `sequence` (the shape's last dim) if it was 0 and requires the same
/// sequence otherwise, and lowers `vocabulary` (start it at INT64_MAX) to
/// the key's bound for token ids. Text must fit the model's vocabulary
/// whole (any byte may come); a token file is held to it id by id when it
/// is loaded. Returns what is wrong or "".
std::string checkTokenKey(const DataKey &key, DataFormat format,
                          int64_t &sequence, int64_t &vocabulary);

/// A bijection of [0, n) keyed by `key` (Note [Token data]).
uint64_t keyedPermutation(uint64_t x, uint64_t n, uint64_t key);

/// Where the window of sample g starts (Note [Token data]).
int64_t windowStart(const TokenCorpus &corpus, uint64_t seed, bool heldOut,
                    int64_t g);

/// Fills one microbatch of `role`, `rows` windows from sample `firstSample`
/// on, into `out` ([rows, sequence]).
template <typename Int>
void fillTokens(const TokenCorpus &corpus, TokenRole role, uint64_t seed,
                bool heldOut, int64_t firstSample, int64_t rows, Int *out) {
  int64_t s = corpus.sequence;
  for (int64_t r = 0; r < rows; ++r) {
    Int *row = out + r * s;
    if (role == TokenRole::Positions) {
      for (int64_t t = 0; t < s; ++t)
        row[t] = static_cast<Int>(t);
      continue;
    }
    int64_t start = windowStart(corpus, seed, heldOut, firstSample + r) +
                    (role == TokenRole::Targets ? 1 : 0);
    for (int64_t t = 0; t < s; ++t)
      row[t] = static_cast<Int>(corpus.at(start + t));
  }
}

/// The first sample of global microbatch `microbatch` (of `microbatches`) of
/// batch `batch`, with `rows` windows per microbatch.
inline int64_t firstSampleOf(int64_t batch, int64_t microbatches,
                             int64_t microbatch, int64_t rows) {
  return (batch * microbatches + microbatch) * rows;
}

/// How many whole microbatches of `rows` windows the held-out split holds:
/// the microbatches the held-out loss averages (0: too few windows).
inline int64_t evalMicrobatches(const TokenCorpus &corpus, int64_t rows) {
  return corpus.heldOutWindows() / rows;
}

/// --eval-every's check: "" if the held-out split of `path` fills at least
/// one microbatch of `rows` windows, else why not.
std::string checkEvaluation(const TokenCorpus &corpus, int64_t rows,
                            const std::string &path);

/// How many evaluation batches of `microbatches` cover those once.
inline int64_t evalBatches(const TokenCorpus &corpus, int64_t microbatches,
                           int64_t rows) {
  return (evalMicrobatches(corpus, rows) + microbatches - 1) / microbatches;
}

} // namespace zbc::rt

#endif // ZBC_RUNTIME_TOKENDATA_H
