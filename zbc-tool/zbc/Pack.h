//===- Pack.h - documents packed into rows of a fixed length -----*- C++ -*-===//
//
// Note [Packing]
// `zbc pack` turns documents of every length into samples a model of
// sequence S and microbatch B trains on: [N, B, S] tensors `input.tokens`,
// `input.positions`, `input.documents` and `label.targets` (the rules they
// meet: Note [Packed documents] in zbc/contracts/DataFile.h).
//   - A document of fewer than 2 tokens has no target: it is not packed.
//   - A document longer than S is cut into pieces of S tokens, the last one
//     shorter, each starting a row's document at position 0 (as Megatron
//     and torchtitan do): a piece attends to itself only. A last piece of
//     one token has no target and nothing attends to it, so it is left out
//     (its token is still the target of the piece before it).
//   - Pieces go into rows first-fit-decreasing: longest first (ties in
//     document order), each into the first row with room for it, a new
//     row when none has. Rows keep the order they were opened in; a row's
//     documents the order they were placed in.
//   - The rows are then ordered (PackOrder): in a seeded random order by
//     default, since first-fit-decreasing opens the rows of the longest
//     documents first and training would otherwise meet its documents
//     sorted by length; or as opened; or balanced, so that the samples
//     (each a microbatch) carry similar attention work and a pipeline's
//     microbatches take similar times (WLB-LLM's observation): the rows,
//     heaviest first, each join the sample of least work with room, and
//     the samples go in a seeded random order.
//   - Rows are grouped B per sample, in order; the last sample is filled
//     with rows of padding. Every row that is not padding holds a piece,
//     and every piece a target, so every sample holds at least one target.
//   - Per slot: the token; its position in its piece; its document, 0 for
//     the row's first piece and one more per piece, the padding slots after
//     them one last document of their own (so they attend only to padding);
//     its target, the next token of the same original document (also when
//     it lies in the next piece) or -100 (a document's last token, padding).
//     Padding tokens are 0, their positions count from 0 as a document's.
// The attention work of a row is proportional to the sum of its documents'
// squared lengths (its padding's included: it is a document the kernel
// computes); summed over the rows, over rows x S^2 it is the work of the
// masked attention relative to unmasked rows.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_TOOL_PACK_H
#define ZBC_TOOL_PACK_H

#include "zbc/contracts/SafeTensors.h"
#include "zbc/contracts/TokenData.h"

#include <cstdint>
#include <vector>

namespace zbc {

/// A document: tokens [begin, begin + length) of a stream.
struct PackDocument {
  int64_t begin = 0, length = 0;
};

/// How the rows are ordered into samples (Note [Packing]).
enum class PackOrder { Shuffled, Opened, Balanced };

/// What packing made of a set of documents (Note [Packing]).
struct PackSummary {
  int64_t documents = 0;    // packed (each of 2 tokens or more)
  int64_t split = 0;        // of them, longer than a row
  int64_t pieces = 0;       // in the rows (a document not split is one)
  int64_t droppedTails = 0; // last pieces of one token, left out
  int64_t tokens = 0;       // real tokens in the rows
  int64_t rows = 0;         // rows holding documents
  int64_t paddingRows = 0;  // rows of padding that fill the last sample
  int64_t samples = 0;      // N
  int64_t slots = 0;        // N x B x S
  double attentionWork = 0; // sum over rows of squared document lengths,
                            // over (rows + padding rows) x S^2
  double sampleWorkSpread = 0; // the most attention work of a sample over
                               // the mean sample's (1: balanced)
};

/// Tokens [offset, offset + length) of a document.
struct PackPiece {
  int64_t document = 0; // index into the documents
  int64_t offset = 0, length = 0;
};

/// Where every piece goes: the rows, each its pieces in order.
struct PackPlan {
  int64_t seqLen = 0, microbatchSize = 0;
  std::vector<PackPiece> pieces;
  std::vector<std::vector<int64_t>> rows;
  PackSummary summary;
};

/// Cuts `documents` (each of 2 tokens or more) into pieces and places them
/// into rows of `seqLen` tokens, `microbatchSize` rows per sample, the rows
/// in `order` (a random one drawn from `seed`) (Note [Packing]).
PackPlan planPack(const std::vector<PackDocument> &documents, int64_t seqLen,
                  int64_t microbatchSize, PackOrder order, uint64_t seed);

/// The four I64 tensors [N, B, S] of `plan`, into `tensors` (what they held
/// is dropped), the tokens read from `stream`.
void fillPack(const PackPlan &plan, const rt::TokenCorpus &stream,
              const std::vector<PackDocument> &documents,
              rt::TensorFile &tensors);

} // namespace zbc

#endif // ZBC_TOOL_PACK_H
