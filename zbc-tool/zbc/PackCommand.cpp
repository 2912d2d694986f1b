//===- PackCommand.cpp - `zbc pack`: documents packed into training samples -===//
//
//   zbc pack INPUT --seq-len S --microbatch-size B (--eos ID | --offsets O.npy)
//       [--vocab V] [--held-out FRACTION] [--seed N] [--data-dtype T]
//       [--balance | --in-order] -o OUT.safetensors
//
// Reads documents and writes them packed (Pack.h, Note [Packing]) as the
// safetensors samples `zbc run --data` reads (Note [Packed documents] in
// zbc/contracts/DataFile.h). INPUT is a token stream read as `zbc run`
// reads one (TokenData.h: .npy, .bin, anything else as text bytes), cut
// into documents either
//   - by `--eos ID`: each document ends with (and keeps) the id, so the
//     model learns to end a document; a last document without it is kept;
//   - or by `--offsets O.npy`, a 1-D integer .npy: D+1 boundaries starting
//     at 0 (document i is [o[i], o[i+1])), or D ends (np.cumsum of the
//     lengths: document i ends at o[i], the first starts at 0). An array
//     whose first value is 0 is read as boundaries; a cumsum whose first
//     document is empty also starts with 0, and reads the same, as empty
//     documents are skipped. The offsets never decrease and end at the
//     number of tokens.
// Every id must be non-negative, and below --vocab when given (also the
// EOS id). The rows go into samples in a random order drawn from --seed,
// with --balance so that the samples carry similar attention work, with
// --in-order as first-fit-decreasing opened them (Note [Packing]).
// `--held-out F` draws round(F x D) of the D documents (at least
// one; a keyed permutation seeded by --seed) and packs them apart into
// OUT with `.heldout` before `.safetensors`. Each output is written whole
// or not at all (OutputFile.h), and summarised on stdout.
//
//===----------------------------------------------------------------------===//

#include "Options.h"
#include "OutputFile.h"
#include "Pack.h"

#include "zbc/Options/OptionValues.h"
#include "zbc/contracts/DataFile.h"
#include "zbc/contracts/SafeTensors.h"
#include "zbc/contracts/SyntheticData.h"
#include "zbc/contracts/TokenData.h"
#include "zbc/Support/Limits.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

using namespace llvm;
using namespace zbc;

namespace {

cl::opt<std::string> inputOpt(cl::Positional, cl::Required,
                              cl::desc("<INPUT: a token stream, .npy, .bin or text>"),
                              cl::sub(zbc::packCommand()),
                              cl::cat(zbcCategory));
cl::opt<std::string> outputOpt("o",
                               cl::desc("Write the packed samples here (and "
                                        "the held-out ones beside it, "
                                        "OUT.heldout.safetensors)"),
                               cl::value_desc("OUT.safetensors"),
                               cl::sub(zbc::packCommand()),
                               cl::cat(zbcCategory));
cl::opt<std::string> seqLenOpt("seq-len",
                               cl::desc("Tokens per row: the model's "
                                        "sequence"),
                               cl::value_desc("S"),
                               cl::sub(zbc::packCommand()),
                               cl::cat(zbcCategory));
cl::opt<std::string> microbatchOpt("microbatch-size",
                                   cl::desc("Rows per sample: the model's "
                                            "microbatch"),
                                   cl::value_desc("B"),
                                   cl::sub(zbc::packCommand()),
                                   cl::cat(zbcCategory));
cl::opt<std::string> eosOpt("eos",
                            cl::desc("The id that ends each document of "
                                     "INPUT (kept as its last token)"),
                            cl::value_desc("ID"), cl::sub(zbc::packCommand()),
                            cl::cat(zbcCategory));
cl::opt<std::string> offsetsOpt(
    "offsets",
    cl::desc("Documents as offsets into INPUT instead of --eos: a 1-D "
             "integer .npy, D+1 boundaries starting at 0 or D ends "
             "(np.cumsum of the lengths)"),
    cl::value_desc("OFFSETS.npy"), cl::sub(zbc::packCommand()),
    cl::cat(zbcCategory));
cl::opt<std::string> vocabOpt("vocab",
                              cl::desc("Every id, and --eos, must lie in "
                                       "[0, V) (default: any id >= 0)"),
                              cl::value_desc("V"), cl::sub(zbc::packCommand()),
                              cl::cat(zbcCategory));
cl::opt<std::string> heldOutOpt(
    "held-out",
    cl::desc("Pack this fraction of the documents (a seeded draw) apart, "
             "into OUT.heldout.safetensors (default 0: none)"),
    cl::value_desc("FRACTION"), cl::sub(zbc::packCommand()),
    cl::cat(zbcCategory));
cl::opt<bool> balanceOpt(
    "balance",
    cl::desc("Order the rows so that the samples (microbatches) carry "
             "similar attention work (the sum of their documents' squared "
             "lengths), then the samples at random"),
    cl::sub(zbc::packCommand()), cl::cat(zbcCategory));
cl::opt<bool> inOrderOpt(
    "in-order",
    cl::desc("Keep the rows in the order packing opened them (the longest "
             "documents first) instead of a random order"),
    cl::sub(zbc::packCommand()), cl::cat(zbcCategory));
cl::opt<std::string> seedOpt("seed",
                             cl::desc("Seed of the held-out draw and of the "
                                      "rows' order (default 0)"),
                             cl::value_desc("N"), cl::init("0"),
                             cl::sub(zbc::packCommand()),
                             cl::cat(zbcCategory));
cl::opt<std::string> dataDtypeOpt("data-dtype",
                                  cl::desc("The ids of a .bin INPUT: uint16 "
                                           "(default) or uint32"),
                                  cl::value_desc("T"), cl::init("uint16"),
                                  cl::sub(zbc::packCommand()),
                                  cl::cat(zbcCategory));

/// The longest row and the most rows per sample accepted: far beyond any
/// model's sequence and microbatch, and their product times any sample
/// count a stream makes stays far inside int64.
constexpr int64_t kMaxSeqLen = int64_t(1) << 20;
constexpr int64_t kMaxMicrobatchSize = int64_t(1) << 20;

/// The largest id a stream of `type` can hold.
int64_t largestId(rt::TokenType type) {
  switch (type) {
  case rt::TokenType::Byte:
    return 255;
  case rt::TokenType::U16:
    return 65535;
  case rt::TokenType::U32:
    return 4294967295;
  case rt::TokenType::I32:
    return std::numeric_limits<int32_t>::max();
  case rt::TokenType::I64:
    break;
  }
  return std::numeric_limits<int64_t>::max();
}

/// `path` with `.heldout` before `.safetensors`.
std::string heldOutPath(StringRef path) {
  return (path.drop_back(StringRef(".safetensors").size()) +
          ".heldout.safetensors")
      .str();
}

/// The documents of `stream` (read from `path`) ended by `eos`, every id
/// checked against [0, vocab); an error names the file, the position and
/// the document. `empty`: documents of fewer than 2 tokens, left out.
Error documentsByEos(const std::string &path, const rt::TokenCorpus &stream,
                     int64_t eos, std::optional<int64_t> vocab,
                     std::vector<PackDocument> &documents, int64_t &empty,
                     bool &sawEos) {
  int64_t begin = 0, index = 0;
  auto end = [&](int64_t next) {
    if (next - begin >= 2)
      documents.push_back({begin, next - begin});
    else
      ++empty;
    begin = next;
    ++index;
  };
  for (int64_t i = 0; i < stream.tokens; ++i) {
    int64_t id = stream.at(i);
    if (id < 0 || (vocab && id >= *vocab))
      return fail(formatv("the token file '{0}': token id {1} at position {2} "
                          "(document {3}, counting from 0) is outside {4}",
                          path, id, i, index,
                          vocab ? formatv("the vocabulary [0, {0})", *vocab)
                                      .str()
                                : std::string("[0, ...): ids are not "
                                              "negative")));
    if (id == eos) {
      sawEos = true;
      end(i + 1);
    }
  }
  if (begin < stream.tokens)
    end(stream.tokens); // the last document, without its EOS
  return Error::success();
}

/// The documents of `stream` (read from `path`) at the offsets in
/// `offsetsPath` (file comment), every id checked against [0, vocab).
Error documentsByOffsets(const std::string &path,
                         const rt::TokenCorpus &stream,
                         const std::string &offsetsPath,
                         std::optional<int64_t> vocab,
                         std::vector<PackDocument> &documents, int64_t &empty) {
  if (rt::dataFormatOf(offsetsPath) != rt::DataFormat::Npy)
    return fail(formatv("--offsets '{0}' is not a .npy file: give the "
                        "documents' offsets as a 1-D integer NumPy array "
                        "(np.save)",
                        offsetsPath));
  rt::TokenCorpus offsets;
  if (std::string e = rt::openTokenStream(offsetsPath, rt::TokenType::U16,
                                          offsets, "the offsets file",
                                          "offsets");
      !e.empty())
    return fail(e);
  // Boundaries (0, ends...) or ends alone: document i ends at ends[i].
  bool boundaries = offsets.at(0) == 0;
  int64_t first = boundaries ? 1 : 0;
  int64_t begin = 0;
  for (int64_t i = first; i < offsets.tokens; ++i) {
    int64_t end = offsets.at(i);
    int64_t document = i - first;
    if (end < 0)
      return fail(formatv("the offsets file '{0}': offset {1} (counting from "
                          "0) is {2}: offsets are not negative",
                          offsetsPath, i, end));
    if (end < begin)
      return fail(formatv("the offsets file '{0}': offset {1} (counting from "
                          "0) is {2}, below the {3} before it: offsets must "
                          "not decrease (document {4} would end before it "
                          "starts)",
                          offsetsPath, i, end, begin, document));
    if (end > stream.tokens)
      return fail(formatv("the offsets file '{0}': offset {1} (counting from "
                          "0) is {2}, past the {3} tokens of '{4}'",
                          offsetsPath, i, end, stream.tokens, path));
    for (int64_t t = begin; t < end; ++t)
      if (int64_t id = stream.at(t); id < 0 || (vocab && id >= *vocab))
        return fail(formatv(
            "the token file '{0}': token id {1} at position {2} (document "
            "{3}, counting from 0) is outside {4}",
            path, id, t, document,
            vocab ? formatv("the vocabulary [0, {0})", *vocab).str()
                  : std::string("[0, ...): ids are not negative")));
    if (end - begin >= 2)
      documents.push_back({begin, end - begin});
    else
      ++empty;
    begin = end;
  }
  if (begin != stream.tokens)
    return fail(formatv("the offsets file '{0}' ends at {1}, but '{2}' holds "
                        "{3} tokens: the last {4} would belong to no "
                        "document (offsets of another token file?)",
                        offsetsPath, begin, path, stream.tokens,
                        stream.tokens - begin));
  return Error::success();
}

/// "1 row", "2 rows".
std::string count(int64_t n, StringRef noun) {
  return formatv("{0} {1}{2}", n, noun, n == 1 ? "" : "s").str();
}

/// The bytes of memory this machine has (0 if unknown).
int64_t physicalMemory() {
  long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? int64_t(pages) * int64_t(page) : 0;
}

/// Packs `documents` into `path` and says what it made.
Error packInto(const std::string &path, const rt::TokenCorpus &stream,
               const std::vector<PackDocument> &documents, int64_t seqLen,
               int64_t microbatchSize, PackOrder order, uint64_t seed,
               const std::string &what) {
  PackPlan plan = planPack(documents, seqLen, microbatchSize, order, seed);
  const PackSummary &s = plan.summary;
  // The four tensors, the file's bytes and the writer's copy of them are
  // held at once: refused before they are allocated, not by the allocator.
  std::optional<int64_t> fileBytes = limits::checkedMul(s.slots, 4 * 8);
  if (!fileBytes || *fileBytes > limits::kMaxTensorBytes ||
      (physicalMemory() && *fileBytes > physicalMemory() / 3))
    return fail(formatv("packing into '{0}' makes {1} samples of {2} x {3} "
                        "slots ({4} rows hold documents): {5} bytes of "
                        "tensors, more than a third of this machine's memory; "
                        "a smaller --microbatch-size or --seq-len, or fewer "
                        "documents at a time",
                        path, s.samples, microbatchSize, seqLen, s.rows,
                        fileBytes ? std::to_string(*fileBytes)
                                  : std::string("too many")));
  rt::TensorFile tensors;
  fillPack(plan, stream, documents, tensors);
  std::map<std::string, std::string> metadata = {
      {"format", "zbc-pack"},
      {"source", inputOpt},
      {"seq_len", std::to_string(seqLen)},
      {"microbatch_size", std::to_string(microbatchSize)},
      {"documents", std::to_string(s.documents)},
      {"real_tokens", std::to_string(s.tokens)}};
  std::string bytes = rt::encodeSafeTensors(tensors, metadata);
  tensors.clear();
  if (Error e = writeFile(path, StringRef(bytes)))
    return e;
  raw_ostream &os = outs();
  os << formatv("packed {0} into '{1}': {2} of {3} of {4}\n", what, path,
                count(s.samples, "sample"), count(microbatchSize, "row"),
                count(seqLen, "token"));
  os << formatv("  documents           {0}", s.documents);
  if (s.split)
    os << formatv(" ({0} longer than a row, cut into pieces of at most {1}: "
                  "{2} pieces in all)",
                  s.split, seqLen, s.pieces);
  os << "\n";
  if (s.droppedTails)
    os << formatv("  one-token tails     {0} left out (the last piece of a "
                  "cut document, with no target)\n",
                  s.droppedTails);
  os << formatv("  real tokens         {0}\n", s.tokens);
  os << formatv("  slots               {0}\n", s.slots);
  os << formatv("  packing efficiency  {0:F2}% (real tokens / slots)\n",
                100.0 * double(s.tokens) / double(s.slots));
  os << formatv("  rows                {0}", s.rows);
  if (s.paddingRows)
    os << formatv(" (and {0} of padding that fill{1} the last sample)",
                  s.paddingRows, s.paddingRows == 1 ? "s" : "");
  os << "\n";
  os << formatv("  samples             {0}\n", s.samples);
  os << formatv("  attention work      {0:F4} of unmasked rows (sum over rows "
                "of squared document lengths / (rows x {1}^2))\n",
                s.attentionWork, seqLen);
  os << formatv("  sample work         the heaviest sample {0:F3}x the mean "
                "({1})\n",
                s.sampleWorkSpread,
                order == PackOrder::Balanced ? "balanced"
                : order == PackOrder::Opened ? "rows in the order opened"
                                             : "rows in a random order");
  return Error::success();
}

Error runPack() {
  // Named here rather than by llvm::cl's "must be specified at least once".
  for (const cl::opt<std::string> *required :
       {&seqLenOpt, &microbatchOpt, &outputOpt})
    if (!required->getNumOccurrences())
      return fail(formatv("zbc pack needs {0}{1} {2}: {3}",
                          required->ArgStr.size() == 1 ? "-" : "--",
                          required->ArgStr, required->ValueStr,
                          required->HelpStr));
  Expected<int64_t> seqLen =
      parseInteger("--seq-len", seqLenOpt, 1, kMaxSeqLen);
  if (!seqLen)
    return seqLen.takeError();
  Expected<int64_t> microbatchSize = parseInteger(
      "--microbatch-size", microbatchOpt, 1, kMaxMicrobatchSize);
  if (!microbatchSize)
    return microbatchSize.takeError();
  std::optional<int64_t> vocab;
  if (vocabOpt.getNumOccurrences()) {
    Expected<int64_t> v = parseInteger("--vocab", vocabOpt, 1,
                                       std::numeric_limits<int64_t>::max());
    if (!v)
      return v.takeError();
    vocab = *v;
  }
  double heldOut = 0;
  if (heldOutOpt.getNumOccurrences()) {
    Expected<double> f = parseNumber("--held-out", heldOutOpt, 0, 1);
    if (!f)
      return f.takeError();
    if (*f >= 1)
      return fail(formatv("--held-out is the fraction of the documents held "
                          "out, below 1 (some must be left to train on); got "
                          "{0}",
                          heldOutOpt.getValue()));
    heldOut = *f;
  }
  Expected<int64_t> seed = parseInteger("--seed", seedOpt, 0,
                                        std::numeric_limits<int64_t>::max());
  if (!seed)
    return seed.takeError();
  if (balanceOpt && inOrderOpt)
    return fail("--balance and --in-order are two orders of the rows: give "
                "one");
  PackOrder order = balanceOpt   ? PackOrder::Balanced
                    : inOrderOpt ? PackOrder::Opened
                                 : PackOrder::Shuffled;
  rt::TokenType binTokens;
  if (!rt::parseBinTokenType(dataDtypeOpt, binTokens))
    return fail("--data-dtype needs uint16 or uint32, got '" + dataDtypeOpt +
                "'");

  const std::string &input = inputOpt;
  const std::string &output = outputOpt;
  if (!StringRef(output).ends_with(".safetensors"))
    return fail(formatv("-o '{0}': packed samples are a .safetensors file "
                        "(zbc run --data reads any other name as a token "
                        "stream); name it OUT.safetensors",
                        output));
  if (rt::isSafeTensorsPath(input))
    return fail(formatv("'{0}' is a .safetensors file: zbc pack reads a "
                        "token stream (.npy, .bin or text) and cuts it into "
                        "documents",
                        input));
  bool byOffsets = offsetsOpt.getNumOccurrences() > 0;
  bool byEos = eosOpt.getNumOccurrences() > 0;
  if (byOffsets && byEos)
    return fail("--eos and --offsets are two ways to cut INPUT into "
                "documents: give one");
  if (!byOffsets && !byEos)
    return fail("zbc pack needs to know where documents end: --eos ID (the "
                "id that ends each document of the stream) or --offsets "
                "OFFSETS.npy");
  int64_t eos = -1;
  if (byEos) {
    Expected<int64_t> e =
        parseInteger("--eos", eosOpt, std::numeric_limits<int64_t>::min(),
                     std::numeric_limits<int64_t>::max());
    if (!e)
      return e.takeError();
    eos = *e;
    if (eos < 0)
      return fail(formatv("--eos {0} is negative: token ids lie in [0, "
                          "vocabulary)",
                          eos));
    if (vocab && eos >= *vocab)
      return fail(formatv("--eos {0} is outside the vocabulary [0, {1}) "
                          "(--vocab {1})",
                          eos, *vocab));
  }

  rt::TokenCorpus stream;
  if (std::string e = rt::openTokenStream(input, binTokens, stream,
                                          "the token file");
      !e.empty())
    return fail(e);
  if (byEos && eos > largestId(stream.type))
    return fail(formatv("--eos {0} cannot occur in '{1}', whose ids are at "
                        "most {2} ({3})",
                        eos, input, largestId(stream.type),
                        stream.type == rt::TokenType::Byte
                            ? std::string("text: a token is a byte")
                            : std::string(rt::tokenTypeName(stream.type)) +
                                  " ids"));

  std::vector<PackDocument> documents;
  int64_t empty = 0;
  bool sawEos = false;
  if (byEos) {
    if (Error e = documentsByEos(input, stream, eos, vocab, documents, empty,
                                 sawEos))
      return e;
    if (!sawEos)
      errs() << formatv("zbc: warning: '{0}' holds no --eos {1}: it is one "
                        "document\n",
                        input, eos);
  } else if (Error e = documentsByOffsets(input, stream, offsetsOpt, vocab,
                                          documents, empty)) {
    return e;
  }
  int64_t documentsRead = static_cast<int64_t>(documents.size());
  outs() << formatv("read '{0}': {1}", input,
                    count(documentsRead + empty, "document"));
  if (empty)
    outs() << formatv(", {0} of them left out (empty or a single token: "
                      "nothing to predict)",
                      empty);
  outs() << "\n";
  if (documentsRead == 0)
    return fail(formatv("'{0}' holds no document of two tokens or more: "
                        "nothing to pack",
                        input));

  // The held-out draw: the documents whose place in a keyed permutation
  // falls below the count held out.
  std::vector<PackDocument> train, held;
  int64_t heldCount = 0;
  if (heldOut > 0) {
    heldCount = std::max<int64_t>(
        1, static_cast<int64_t>(std::llround(heldOut * double(documentsRead))));
    if (heldCount >= documentsRead)
      return fail(formatv("--held-out {0} of {1} holds out {2}, leaving none "
                          "to train on",
                          heldOutOpt.getValue(),
                          count(documentsRead, "document"), heldCount));
    uint64_t key = rt::splitMix64(static_cast<uint64_t>(*seed) ^
                                  0x7a62632d7061636bull); // "zbc-pack"
    for (int64_t d = 0; d < documentsRead; ++d) {
      uint64_t place = rt::keyedPermutation(
          static_cast<uint64_t>(d), static_cast<uint64_t>(documentsRead), key);
      if (static_cast<int64_t>(place) < heldCount)
        held.push_back(documents[d]);
      else
        train.push_back(documents[d]);
    }
  } else {
    train = std::move(documents);
  }
  if (Error e = packInto(output, stream, train, *seqLen, *microbatchSize,
                         order, static_cast<uint64_t>(*seed),
                         count(static_cast<int64_t>(train.size()), "document")))
    return e;
  if (heldCount)
    if (Error e = packInto(
            heldOutPath(output), stream, held, *seqLen, *microbatchSize,
            order, static_cast<uint64_t>(*seed),
            formatv("{0} held out (--seed {1})",
                    count(static_cast<int64_t>(held.size()), "document"), *seed)
                .str()))
      return e;
  return Error::success();
}

} // namespace

int zbc::runPackCommand() {
  if (Error e = runPack()) {
    outs().flush(); // what was read, before why it stops
    errs() << "zbc: error: " << toString(std::move(e)) << "\n";
    return 1;
  }
  return 0;
}
