//===- TokenData.cpp - token streams: text, .npy and .bin, cut into windows --===//
//
// Note [Token data] (TokenData.h). Opening a stream checks, in the order a
// user fixes them: the file (regular, readable), its format (a .npy header
// naming a 1-D array of a token dtype, a .bin a whole number of ids), its
// size (not empty, room for a training window and a held-out one), then
// every id against the vocabulary.
//
//===----------------------------------------------------------------------===//

#include "zbc/contracts/TokenData.h"

#include "zbc/contracts/Files.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <unordered_map>
#include <vector>

namespace zbc::rt {
namespace {

bool endsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.substr(text.size() - suffix.size()) == suffix;
}

/// The value of `key` in a .npy header's dict literal
/// ("{'descr': '<u2', 'fortran_order': False, 'shape': (10,), }"), up to the
/// next top-level comma; "" if absent.
std::string_view npyField(std::string_view header, std::string_view key) {
  std::string quoted = "'" + std::string(key) + "'";
  size_t at = header.find(quoted);
  if (at == std::string_view::npos)
    return {};
  at = header.find(':', at + quoted.size());
  if (at == std::string_view::npos)
    return {};
  size_t begin = header.find_first_not_of(' ', at + 1);
  if (begin == std::string_view::npos)
    return {};
  size_t end = header[begin] == '(' ? header.find(')', begin) + 1
                                    : header.find_first_of(",}", begin);
  if (end == std::string_view::npos || end == 0)
    return {};
  return header.substr(begin, end - begin);
}

/// Reads the header of the .npy file `path` (mapped as `data`, `size`
/// bytes): the token type, where the tokens start and how many there are.
std::string readNpyHeader(const std::string &path, const std::string &what,
                          const std::string &items, const char *data,
                          int64_t size, TokenType &type, int64_t &offset,
                          int64_t &count) {
  auto bad = [&](const std::string &why) {
    return fmt::format("{} '{}' is not a .npy array of {}: {}", what, path,
                       items, why);
  };
  std::string unit = items == "token ids" ? "tokens" : items;
  if (size < 10 || std::memcmp(data, "\x93NUMPY", 6) != 0)
    return bad("it does not start with .npy's magic string \\x93NUMPY");
  int major = static_cast<unsigned char>(data[6]);
  int64_t headerBytes = 0;
  if (major == 1) {
    headerBytes = static_cast<unsigned char>(data[8]) |
                  static_cast<unsigned char>(data[9]) << 8;
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12)
      return bad("its header is cut short");
    uint32_t length;
    std::memcpy(&length, data + 8, 4);
    headerBytes = length;
    offset = 12;
  } else {
    return bad(fmt::format("format version {} (zbc reads 1, 2 and 3)", major));
  }
  if (headerBytes > size - offset)
    return bad(fmt::format("its header claims {} bytes, the file has {} after "
                           "the preamble",
                           headerBytes, size - offset));
  std::string_view header(data + offset, static_cast<size_t>(headerBytes));
  offset += headerBytes;

  std::string_view descr = npyField(header, "descr");
  struct Descr {
    std::string_view name;
    TokenType type;
  };
  static const Descr descrs[] = {{"'<u2'", TokenType::U16},
                                 {"'<u4'", TokenType::U32},
                                 {"'<i4'", TokenType::I32},
                                 {"'<i8'", TokenType::I64}};
  auto known = std::find_if(std::begin(descrs), std::end(descrs),
                            [&](const Descr &d) { return d.name == descr; });
  if (known == std::end(descrs))
    return bad(fmt::format("its dtype is {}; {} must be little-endian "
                           "uint16, uint32, int32 or int64 ('<u2', '<u4', "
                           "'<i4', '<i8')",
                           descr.empty() ? "not given" : std::string(descr),
                           items));
  type = known->type;
  if (npyField(header, "fortran_order") != "False")
    return bad("it is stored in Fortran order");
  std::string_view shape = npyField(header, "shape");
  // "(N,)": one dimension.
  if (shape.size() < 4 || shape.front() != '(' ||
      shape.substr(shape.size() - 2) != ",)")
    return bad(fmt::format("its shape is {}; it must be 1-D (N,): "
                           "flatten it first (numpy's .reshape(-1))",
                           shape.empty() ? "not given" : std::string(shape)));
  std::string digits(shape.substr(1, shape.size() - 3));
  char *end = nullptr;
  errno = 0;
  long long n = std::strtoll(digits.c_str(), &end, 10);
  if (errno || *end || n < 0)
    return bad(fmt::format("its shape {} is not a length", shape));
  count = n;
  int64_t expected = size - offset;
  if (count > expected / tokenBytes(type) ||
      count * tokenBytes(type) != expected)
    return bad(fmt::format("its header says {} {} of {} ({} bytes) from "
                           "byte {}, the file has {} bytes there (truncated "
                           "or not what the header says)",
                           count, unit, tokenTypeName(type),
                           static_cast<__int128>(count) * tokenBytes(type) >
                                   std::numeric_limits<int64_t>::max()
                               ? std::string("too many")
                               : std::to_string(count * tokenBytes(type)),
                           offset, expected));
  return {};
}

} // namespace

int tokenBytes(TokenType type) {
  switch (type) {
  case TokenType::Byte:
    return 1;
  case TokenType::U16:
    return 2;
  case TokenType::U32:
  case TokenType::I32:
    return 4;
  case TokenType::I64:
    return 8;
  }
  return 1;
}

const char *tokenTypeName(TokenType type) {
  switch (type) {
  case TokenType::Byte:
    return "a byte (text)";
  case TokenType::U16:
    return "uint16";
  case TokenType::U32:
    return "uint32";
  case TokenType::I32:
    return "int32";
  case TokenType::I64:
    return "int64";
  }
  return "";
}

DataFormat dataFormatOf(std::string_view path) {
  if (endsWith(path, ".safetensors"))
    return DataFormat::SafeTensors;
  if (endsWith(path, ".npy"))
    return DataFormat::Npy;
  if (endsWith(path, ".bin"))
    return DataFormat::Bin;
  return DataFormat::Text;
}

bool parseBinTokenType(std::string_view name, TokenType &type) {
  if (name == "uint16")
    type = TokenType::U16;
  else if (name == "uint32")
    type = TokenType::U32;
  else
    return false;
  return true;
}

std::string openTokenStream(const std::string &path, TokenType binType,
                            TokenCorpus &corpus, const std::string &what,
                            const std::string &items) {
  int64_t size = 0;
  if (std::string error = regularFileError(path, what, size); !error.empty())
    return error;
  auto file = std::make_shared<MappedFile>();
  if (std::string error = file->map(path); !error.empty())
    return error;
  if (size == 0)
    return what + " '" + path + "' is empty";
  corpus = TokenCorpus();
  corpus.file = file;
  int64_t offset = 0;
  switch (dataFormatOf(path)) {
  case DataFormat::Npy:
    if (std::string error =
            readNpyHeader(path, what, items, file->data(), file->size(),
                          corpus.type, offset, corpus.tokens);
        !error.empty())
      return error;
    if (corpus.tokens == 0)
      return fmt::format("{} '{}' holds no {} (its shape is (0,))", what, path,
                         items == "token ids" ? "tokens" : items);
    break;
  case DataFormat::Bin:
    corpus.type = binType;
    if (size % tokenBytes(binType))
      return fmt::format("{} '{}' has {} bytes, not a whole number "
                         "of {} token ids ({} bytes each){}",
                         what, path, size, tokenTypeName(binType),
                         tokenBytes(binType),
                         binType == TokenType::U16
                             ? ""
                             : " (--data-dtype uint16 for nanoGPT's files)");
    corpus.tokens = size / tokenBytes(binType);
    break;
  case DataFormat::Text:
  case DataFormat::SafeTensors:
    corpus.type = TokenType::Byte;
    corpus.tokens = size;
    break;
  }
  corpus.first = file->data() + offset;
  return {};
}

std::string loadTokenCorpus(const std::string &path, TokenType binType,
                            int64_t sequence, int64_t vocabulary,
                            TokenCorpus &corpus) {
  if (std::string error = openTokenStream(path, binType, corpus);
      !error.empty())
    return error;
  corpus.sequence = sequence;

  int64_t window = sequence + 1;
  int64_t heldOut = std::max(corpus.tokens / 10, window);
  const char *unit = corpus.type == TokenType::Byte ? "bytes" : "tokens";
  if (corpus.tokens - heldOut < window + 1)
    return fmt::format("the data file '{}' has {} {}: too short for windows "
                       "of {} tokens (the model's sequence) plus a held-out "
                       "tenth; it needs at least {} {}",
                       path, corpus.tokens, unit, sequence, 2 * window + 1,
                       unit);
  corpus.trainTokens = corpus.tokens - heldOut;

  // Every id against the vocabulary, and the training split's unigram
  // counts: dense below 2^20 (any real vocabulary), hashed above (an
  // unbounded check, as `zbc inspect` without a model makes, meets any id).
  constexpr int64_t kDense = int64_t(1) << 20;
  std::vector<int64_t> counts;
  std::unordered_map<int64_t, int64_t> sparse;
  for (int64_t i = 0; i < corpus.tokens; ++i) {
    int64_t id = corpus.at(i);
    if (id < 0 || id >= vocabulary)
      return fmt::format("the data file '{}': token id {} at position {} "
                         "(counting from 0) is outside the model's "
                         "vocabulary [0, {})",
                         path, id, i, vocabulary);
    if (i >= corpus.trainTokens)
      continue;
    if (id >= kDense) {
      ++sparse[id];
      continue;
    }
    if (static_cast<size_t>(id) >= counts.size())
      counts.resize(static_cast<size_t>(id) + 1, 0);
    ++counts[static_cast<size_t>(id)];
  }
  auto add = [&](int64_t c) {
    if (c) {
      double q = double(c) / double(corpus.trainTokens);
      corpus.entropy -= q * std::log(q);
    }
  };
  for (int64_t c : counts)
    add(c);
  for (const auto &[id, c] : sparse)
    add(c);
  return {};
}

std::optional<TokenRole> tokenRoleOf(std::string_view key) {
  if (key == "input.tokens")
    return TokenRole::Tokens;
  if (key == "input.positions")
    return TokenRole::Positions;
  if (key == "label.targets")
    return TokenRole::Targets;
  return std::nullopt;
}

std::string checkTokenKey(const DataKey &key, DataFormat format,
                          int64_t &sequence, int64_t &vocabulary) {
  std::optional<TokenRole> role = tokenRoleOf(key.key);
  if (key.key == kDocumentsKey)
    return "the model masks its attention by document (it reads '" +
           key.key + "') and a token stream has no documents: pack them "
           "with `zbc pack` and give the .safetensors file it writes "
           "(Note [Packed documents])";
  if (!role)
    return "a token stream fills the inputs 'tokens' and 'positions' and the "
           "label 'targets'; the model also reads '" + key.key + "'";
  if (!key.integer || key.shape.size() != 2)
    return "'" + key.key + "' must be integers of shape [rows, sequence] to "
           "be read from a token stream";
  if (sequence == 0)
    sequence = key.shape[1];
  if (key.shape[1] != sequence)
    return "'" + key.key + "' has sequence " + std::to_string(key.shape[1]) +
           ", another data key " + std::to_string(sequence);
  if (*role == TokenRole::Positions) {
    if (key.bound < sequence)
      return fmt::format("'{}' takes values below {}, but a token stream "
                         "gives it values up to {} (the positions of the "
                         "sequence)",
                         key.key, key.bound, sequence - 1);
    return {};
  }
  vocabulary = std::min(vocabulary, key.bound);
  if (format == DataFormat::Text && key.bound < kTextVocabulary)
    return fmt::format("'{}' takes values below {}, but text gives it values "
                       "up to {} (a byte: the text tokenizer's vocabulary is "
                       "256)",
                       key.key, key.bound, kTextVocabulary - 1);
  return {};
}

uint64_t keyedPermutation(uint64_t x, uint64_t n, uint64_t key) {
  // A 4-round Feistel network on the smallest even number of bits that
  // holds n, walked until it lands in [0, n) (the domain is under 4n, so a
  // few rounds on average).
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

std::string checkEvaluation(const TokenCorpus &corpus, int64_t rows,
                            const std::string &path) {
  if (evalMicrobatches(corpus, rows) > 0)
    return "";
  int64_t windows = corpus.heldOutWindows();
  return fmt::format("--eval-every: the held-out tenth of '{}' holds {} "
                     "window{} of {} tokens, fewer than one microbatch of {}; "
                     "give a longer stream, or no --eval-every",
                     path, windows, windows == 1 ? "" : "s", corpus.sequence,
                     rows);
}

int64_t windowStart(const TokenCorpus &corpus, uint64_t seed, bool heldOut,
                    int64_t g) {
  if (heldOut)
    return corpus.trainTokens + (g % corpus.heldOutWindows()) * corpus.sequence;
  uint64_t windows = static_cast<uint64_t>(corpus.trainWindows());
  uint64_t epoch = static_cast<uint64_t>(g) / windows;
  uint64_t key = splitMix64(splitMix64(seed) ^ (epoch * 0x9e3779b97f4a7c15ull));
  return static_cast<int64_t>(
      keyedPermutation(static_cast<uint64_t>(g) % windows, windows, key));
}

} // namespace zbc::rt
